/**
 * Hostile inputs for the public API, and the oracle that says which of them are valid
 * (the rules of docs/api.md): property tests assert "valid ⇒ the call works, invalid ⇒ ValidationError
 * naming one of the invalid parameters, and nothing written".
 */
import fc from 'fast-check';
import { ValidationError } from 'gemstone-utils';

const MAX_NS = 255;
/** A lease must outlive the statement that grants it (docs/api.md: MIN_EXPIRE_SECONDS). */
const MIN_EXPIRE = 0.1;
const MAX_EXPIRE = 31_536_000;
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** Run counts stay modest: every run is a round trip to a real database, on four databases. */
export const RUNS = Number(process.env.GEMSTONE_PROPERTY_RUNS || 40);

export const isValidCandidateId = (value: unknown): boolean => typeof value === 'string' && UUID.test(value);

export const isValidNs = (value: unknown): boolean =>
  value === undefined ||
  (typeof value === 'string' &&
    value.length > 0 &&
    value.isWellFormed() &&
    !value.includes('\u0000') &&
    [...value].length <= MAX_NS);

export const isValidExpire = (value: unknown): boolean =>
  typeof value === 'number' && Number.isFinite(value) && value >= MIN_EXPIRE && value <= MAX_EXPIRE;

export const isValidTerm = (value: unknown): boolean =>
  value === undefined || (typeof value === 'number' && Number.isSafeInteger(value) && value >= 0);

/** Strings an attacker or a careless caller might send as a name. */
export const SQL_HOSTILE = [
  "'; DROP TABLE gemstone_election_leader; --",
  "' OR '1'='1",
  '"; DROP TABLE "gemstone_election_candidate"; --',
  '`; DROP TABLE `gemstone_election_leader`; --',
  "\\'; SELECT pg_sleep(10); --",
  'a\\',
  '%',
  '_',
  '$1',
  '?',
  ':ns',
  '${ns}',
  "Robert'); DELETE FROM gemstone_election_candidate WHERE ('1'='1",
  '/* comment */',
  '\n\r\t',
  ' ',
];

/** Multi-byte names: emoji (astral, ZWJ sequences), CJK, combining marks, RTL, BOM. */
export const UNICODE_NAMES = [
  '😀',
  '👩‍👩‍👧‍👦',
  '工作队列',
  'ジョブ',
  'e\u0301', // e + combining acute: distinct from the precomposed é
  '\u00e9',
  'مهام',
  '\ufeffbom',
  'Z̤͔ͧ̑̓ä͖̭̈̇lͮ̒ͫǧ̗͚̚o̙̔ͮ̇͐̇',
];

const hugeString = fc.string({ minLength: 256, maxLength: 4000 });
const astral = fc.string({ unit: 'binary', minLength: 1, maxLength: 300 });

/** Any JS value a caller might pass by mistake. */
export const garbage = fc.oneof(
  fc.constantFrom<unknown>(null, undefined, true, false, 0, -1, NaN, Infinity, -Infinity, 1n, Symbol.for('x'), [], {}, () => 1, new Date(0)),
  fc.double(),
  fc.integer(),
  fc.string(),
  fc.object({ maxDepth: 1 }),
  fc.array(fc.anything({ maxDepth: 1 }), { maxLength: 3 }),
);

/** Valid candidate ids in any case, and near misses. */
export const candidateIdArb: fc.Arbitrary<unknown> = fc.oneof(
  { weight: 4, arbitrary: fc.uuid().chain((id) => fc.constantFrom(id, id.toUpperCase(), id.toLowerCase())) },
  { weight: 1, arbitrary: fc.uuid().map((id) => `{${id}}`) },
  { weight: 1, arbitrary: fc.uuid().map((id) => `${id} `) },
  { weight: 1, arbitrary: fc.uuid().map((id) => id.replace(/-/g, '')) },
  { weight: 1, arbitrary: fc.uuid().map((id) => `${id}'; DROP TABLE gemstone_election_candidate; --`) },
  { weight: 1, arbitrary: hugeString },
  { weight: 1, arbitrary: astral },
  { weight: 2, arbitrary: garbage },
);

/** Valid namespaces (SQL metacharacters, 255 characters, multi-byte) and invalid ones. */
export const nsArb: fc.Arbitrary<unknown> = fc.oneof(
  { weight: 2, arbitrary: fc.constantFrom(...SQL_HOSTILE, ...UNICODE_NAMES) },
  { weight: 2, arbitrary: fc.string({ minLength: 1, maxLength: 40 }) },
  { weight: 2, arbitrary: astral },
  { weight: 1, arbitrary: fc.constantFrom('x'.repeat(255), '😀'.repeat(255), '工'.repeat(255), 'x'.repeat(256), '😀'.repeat(256)) },
  { weight: 1, arbitrary: hugeString },
  { weight: 1, arbitrary: fc.constantFrom('', '\u0000', 'a\u0000b', '\ud800', 'x\udc00y', undefined) },
  { weight: 2, arbitrary: garbage },
);

export const expireArb: fc.Arbitrary<unknown> = fc.oneof(
  fc.double({ min: 1e-3, max: MAX_EXPIRE }),
  fc.integer({ min: 1, max: MAX_EXPIRE }),
  fc.constantFrom<unknown>(0, -0, -1, MIN_EXPIRE, 0.099_999, 0.001, MAX_EXPIRE, MAX_EXPIRE + 1e-6, MAX_EXPIRE + 1, Number.MAX_VALUE, Number.MIN_VALUE, '60', 60n),
  fc.double(),
  garbage,
);

export const termArb: fc.Arbitrary<unknown> = fc.oneof(
  fc.nat(),
  fc.constantFrom<unknown>(undefined, 0, -1, 1.5, NaN, Infinity, Number.MAX_SAFE_INTEGER, Number.MAX_SAFE_INTEGER + 1, '1', 1n),
  garbage,
);

/**
 * An options object: usually the known keys with hostile values, sometimes an unknown key (a
 * typo must not fall back silently) or not an object at all.
 */
export function optionsArb(known: Record<string, fc.Arbitrary<unknown>>): fc.Arbitrary<unknown> {
  const keys = Object.keys(known);
  return fc.oneof(
    { weight: 6, arbitrary: fc.record(known, { requiredKeys: [] }) },
    {
      weight: 1,
      arbitrary: fc
        .tuple(fc.record(known, { requiredKeys: [] }), fc.string({ minLength: 1, maxLength: 12 }).filter((k) => !keys.includes(k) && k !== '__proto__'), fc.anything({ maxDepth: 0 }))
        .map(([options, key, value]) => ({ ...options, [key]: value })),
    },
    { weight: 1, arbitrary: fc.constantFrom<unknown>(undefined, null, 'ns', 7, [], [1]) },
  );
}

/** Parameters an options value makes invalid (unknown keys and a non-object included). */
export function invalidOptions(
  options: unknown,
  checks: Record<string, (value: unknown) => boolean>,
  prefix = 'options',
): string[] {
  if (options === undefined) return [];
  if (typeof options !== 'object' || options === null || Array.isArray(options)) return [prefix];
  const bad: string[] = [];
  for (const [key, value] of Object.entries(options)) {
    const check = Object.hasOwn(checks, key) ? checks[key] : undefined;
    if (!check) bad.push(`${prefix}.${key}`);
    // An option set to undefined is an option not given (TypeScript's optional properties).
    else if (value !== undefined && !check(value)) bad.push(`${prefix}.${key}`);
  }
  return bad;
}

/**
 * Runs `call` and checks it against the oracle: with no invalid parameter it must not throw a
 * ValidationError (other outcomes are the caller's to check); with some, it must throw a
 * ValidationError whose `parameter` is one of them and whose message names it.
 */
export async function expectVerdict<T>(invalid: readonly string[], call: () => Promise<T> | T): Promise<{ ok: true; value: T } | { ok: false; error: unknown }> {
  let outcome: { ok: true; value: T } | { ok: false; error: unknown };
  try {
    outcome = { ok: true, value: await call() };
  } catch (error) {
    outcome = { ok: false, error };
  }
  if (invalid.length === 0) {
    if (!outcome.ok && outcome.error instanceof ValidationError) {
      throw new Error(`valid input was rejected: ${outcome.error.message}`);
    }
    return outcome;
  }
  if (outcome.ok) throw new Error(`invalid ${invalid.join(', ')} was accepted`);
  const error = outcome.error;
  if (!(error instanceof ValidationError)) throw new Error(`invalid ${invalid.join(', ')} raised ${String(error)} instead of ValidationError`);
  if (!invalid.includes(error.parameter)) {
    throw new Error(`ValidationError names ${error.parameter}, expected one of ${invalid.join(', ')}: ${error.message}`);
  }
  if (!error.message.startsWith(error.parameter)) throw new Error(`message does not name the parameter: ${error.message}`);
  return outcome;
}
