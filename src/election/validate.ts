import { ValidationError } from '../errors';
import type { Session } from '../db/session-type';
import type { Bound } from '../db/sql';

/** Namespace used when `options.ns` is omitted. */
export const DEFAULT_NS = 'default';
/** Lease and candidate expiry, in seconds, unless set otherwise. */
export const DEFAULT_EXPIRE_SECONDS = 60;
/**
 * The shortest accepted expiry: 0.1 s. A lease must outlive the statement that grants it (an
 * elector's local deadline counts from when its elect was sent): at 1 ms every grant has expired
 * by the time its answer arrives, and an elector's default tick (a third of the lease) spins.
 * The smallest expiry the tests and docs use is 0.2 s.
 */
export const MIN_EXPIRE_SECONDS = 0.1;
/** The longest accepted expiry: one year. */
export const MAX_EXPIRE_SECONDS = 31_536_000;
/** The longest accepted namespace, in characters (Unicode code points, as the databases count). */
export const MAX_NS_LENGTH = 255;

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** A bad value as a ValidationError's message shows it: short strings quoted, long ones by length, objects by kind. */
export function describe(value: unknown): string {
  if (typeof value === 'string') return value.length > 60 ? `a ${value.length}-character string` : JSON.stringify(value);
  if (typeof value === 'number' || typeof value === 'boolean' || typeof value === 'bigint') return String(value);
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'an array';
  return typeof value === 'object' ? 'an object' : typeof value;
}

/** A UUID string of any version and case; returned lower-case, as it is stored. */
export function checkCandidateId(value: unknown, parameter = 'candidateId'): string {
  if (typeof value !== 'string' || !UUID.test(value)) {
    throw new ValidationError(parameter, `must be a UUID string like "3f1c…-…" (got ${describe(value)})`);
  }
  return value.toLowerCase();
}

/** A non-empty string of at most 255 characters that every supported database stores exactly. */
export function checkNs(value: unknown, parameter = 'options.ns'): string {
  if (value === undefined) return DEFAULT_NS;
  return checkStoredName(value, parameter, MAX_NS_LENGTH);
}

/**
 * A name stored as a key (a namespace, a schedule's name): a well-formed string of 1 to
 * `maxLength` characters (code points) without NUL. No default.
 */
export function checkStoredName(value: unknown, parameter: string, maxLength: number): string {
  if (typeof value !== 'string') throw new ValidationError(parameter, `must be a string (got ${describe(value)})`);
  if (value.length === 0) throw new ValidationError(parameter, 'must not be empty');
  // Lone surrogates cannot be encoded as UTF-8 and NUL cannot be stored by PostgreSQL: either
  // would come back different from what was given.
  if (!value.isWellFormed()) throw new ValidationError(parameter, 'must be well-formed Unicode (it has a lone surrogate)');
  if (value.includes('\u0000')) throw new ValidationError(parameter, 'must not contain NUL characters');
  const length = [...value].length;
  if (length > maxLength) throw new ValidationError(parameter, `must be at most ${maxLength} characters (got ${length})`);
  return value;
}

/** A finite number of seconds, ≥ {@link MIN_EXPIRE_SECONDS} and ≤ one year: the one rule of the service, the elector and the group. */
export function checkExpireSeconds(value: unknown, parameter = 'expireSeconds'): number {
  if (typeof value !== 'number' || !Number.isFinite(value) || value < MIN_EXPIRE_SECONDS || value > MAX_EXPIRE_SECONDS) {
    throw new ValidationError(
      parameter,
      `must be a finite number of seconds >= ${MIN_EXPIRE_SECONDS} and <= ${MAX_EXPIRE_SECONDS} (got ${describe(value)}): a lease must outlive the statement that grants it`,
    );
  }
  return value;
}

/** A fencing term: a non-negative safe integer. */
export function checkTerm(value: unknown, parameter = 'options.term'): number | undefined {
  if (value === undefined) return undefined;
  if (typeof value !== 'number' || !Number.isSafeInteger(value) || value < 0) {
    throw new ValidationError(parameter, `must be a non-negative integer (got ${describe(value)})`);
  }
  return value;
}

/** An options object whose keys are all known (a typo such as `namespace` must not fall back silently). */
export function checkOptions<K extends string>(
  value: unknown,
  known: readonly K[],
  parameter = 'options',
): Partial<Record<K, unknown>> {
  if (value === undefined) return {};
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    throw new ValidationError(parameter, `must be an object (got ${describe(value)})`);
  }
  for (const key of Object.keys(value)) {
    if (!(known as readonly string[]).includes(key)) {
      throw new ValidationError(`${parameter}.${key}`, `is not a known option (known: ${known.join(', ')})`);
    }
  }
  return value as Partial<Record<K, unknown>>;
}

/** Options every ElectionService call takes. */
export interface CallOptions {
  /** Namespace: an isolated election domain. Default {@link DEFAULT_NS} (`"default"`). */
  ns?: string;
  /** Run inside the caller's transaction (or on its connection). Default: the call's own transaction. */
  session?: Session;
}

export interface CheckedCall {
  ns: string;
  session: Session | undefined;
}

/** Validates `CallOptions` (plus any extra keys a method accepts). */
export function checkCallOptions(value: unknown, extra: readonly string[] = []): CheckedCall & Record<string, unknown> {
  const options = checkOptions(value, ['ns', 'session', ...extra]);
  return { ...options, ns: checkNs(options.ns), session: options.session as Session | undefined };
}

/** The largest accepted candidate `metadata`, serialized as JSON (UTF-8 bytes): 4096. */
export const MAX_METADATA_BYTES = 4096;
/** A candidate's priority unless given: 0. */
export const DEFAULT_PRIORITY = 0;
/** Whether a candidate may acquire the lease unless told otherwise: true. */
export const DEFAULT_ELIGIBLE = true;
/** The priority range: a 32-bit signed integer, as every supported database stores it. */
export const MIN_PRIORITY = -2_147_483_648;
/** The highest priority (see {@link MIN_PRIORITY}). */
export const MAX_PRIORITY = 2_147_483_647;

/** JSON object values: what `JSON.stringify` writes and `JSON.parse` reads back unchanged. */
export type JsonValue = null | boolean | number | string | JsonValue[] | { [key: string]: JsonValue };
/** A candidate's `metadata`: a JSON object (host, pid, address, version…). */
export type CandidateMetadata = { [key: string]: JsonValue };

/** What a candidate says about itself; each is stored in its candidate row when given. */
export interface CandidateOptions {
  /**
   * A JSON object of at most {@link MAX_METADATA_BYTES} bytes serialized. Stored when given (and
   * then returned by `getLeader`, `getCandidates`); when omitted, the stored metadata is kept (a
   * new candidate has none: `null`).
   */
  metadata?: CandidateMetadata;
  /**
   * A leader hands over to a live eligible candidate of strictly higher priority. An integer in
   * [{@link MIN_PRIORITY}, {@link MAX_PRIORITY}]; when omitted the stored one is kept (a new
   * candidate gets {@link DEFAULT_PRIORITY}, 0).
   */
  priority?: number;
  /**
   * False: the candidate registers and observes but never acquires the lease. When omitted the
   * stored value is kept (a new candidate gets {@link DEFAULT_ELIGIBLE}, true).
   */
  eligible?: boolean;
}

/** What the store writes: metadata already serialized; omitted fields are left as stored. */
export interface CandidateFields {
  metadataJson?: string;
  priority?: number;
  eligible?: boolean;
}

/**
 * {@link CandidateFields} as a statement builder takes them: the values bound as parameters may be
 * slots of a statement rendered once (eligibility is rendered as its value, so it is given).
 */
export interface BoundCandidateFields {
  metadataJson?: Bound<string>;
  priority?: Bound<number>;
  eligible?: boolean;
}

/** Why a value cannot be stored as JSON and read back equal, or undefined if it can. */
function jsonProblem(value: unknown, path: string, seen: Set<object>): string | undefined {
  switch (typeof value) {
    case 'string':
      return value.isWellFormed() ? undefined : `${path} is a string with a lone surrogate`;
    case 'boolean':
      return undefined;
    case 'number':
      return Number.isFinite(value) ? undefined : `${path} is ${String(value)}, which JSON cannot represent`;
    case 'object': {
      if (value === null) return undefined;
      if (seen.has(value)) return `${path} refers back to an enclosing object (a cycle)`;
      const isArray = Array.isArray(value);
      const proto: unknown = Object.getPrototypeOf(value);
      if (!isArray && proto !== Object.prototype && proto !== null) {
        const name = (value as { constructor?: { name?: string } }).constructor?.name ?? 'object';
        return `${path} is a ${name}, not a plain object, array or JSON primitive`;
      }
      seen.add(value);
      try {
        if (isArray) {
          for (let i = 0; i < value.length; i++) {
            const problem = jsonProblem(value[i], `${path}[${i}]`, seen);
            if (problem) return problem;
          }
          return undefined;
        }
        if (Object.getOwnPropertySymbols(value).length > 0) return `${path} has symbol keys`;
        for (const [key, item] of Object.entries(value)) {
          const problem = jsonProblem(item, `${path}.${key}`, seen);
          if (problem) return problem;
        }
        return undefined;
      } finally {
        seen.delete(value);
      }
    }
    default:
      // undefined, functions and symbols vanish in JSON.stringify; bigint makes it throw.
      return `${path} is ${typeof value === 'undefined' ? 'undefined' : `a ${typeof value}`}, which JSON cannot represent`;
  }
}

/**
 * A plain JSON object (no arrays, class instances, undefined, functions, bigint, non-finite
 * numbers, cycles) whose JSON text is at most {@link MAX_METADATA_BYTES} bytes; returns that text.
 */
export function checkMetadata(value: unknown, parameter = 'options.metadata'): string {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    throw new ValidationError(parameter, `must be a JSON object like { host: "…", pid: 123 } (got ${describe(value)})`);
  }
  const problem = jsonProblem(value, parameter, new Set());
  if (problem) throw new ValidationError(parameter, `must be JSON-serializable: ${problem}`);
  const json = JSON.stringify(value);
  const bytes = Buffer.byteLength(json);
  if (bytes > MAX_METADATA_BYTES) {
    throw new ValidationError(parameter, `must be at most ${MAX_METADATA_BYTES} bytes as JSON (got ${bytes})`);
  }
  return json;
}

/** An integer in [{@link MIN_PRIORITY}, {@link MAX_PRIORITY}]. */
export function checkPriority(value: unknown, parameter = 'options.priority'): number {
  if (typeof value !== 'number' || !Number.isInteger(value) || value < MIN_PRIORITY || value > MAX_PRIORITY) {
    throw new ValidationError(parameter, `must be an integer from ${MIN_PRIORITY} to ${MAX_PRIORITY} (got ${describe(value)})`);
  }
  return value;
}

/** A boolean. */
export function checkEligible(value: unknown, parameter = 'options.eligible'): boolean {
  if (typeof value !== 'boolean') throw new ValidationError(parameter, `must be a boolean (got ${describe(value)})`);
  return value;
}

/** The candidate options of a call, checked; omitted ones stay omitted. */
export function checkCandidateFields(options: Record<string, unknown>, prefix = 'options'): CandidateFields {
  const fields: CandidateFields = {};
  if (options.metadata !== undefined) fields.metadataJson = checkMetadata(options.metadata, `${prefix}.metadata`);
  if (options.priority !== undefined) fields.priority = checkPriority(options.priority, `${prefix}.priority`);
  if (options.eligible !== undefined) fields.eligible = checkEligible(options.eligible, `${prefix}.eligible`);
  return fields;
}

/** The candidate option names `registerCandidate`, `heartbeat` and `elect` accept besides `ns` and `session`. */
export const CANDIDATE_OPTION_KEYS = ['metadata', 'priority', 'eligible'] as const;

/** Reads stored metadata text; anything that is not a JSON object (written behind the library's back) reads as null. */
export function parseMetadata(value: unknown): CandidateMetadata | null {
  if (value === null || value === undefined) return null;
  try {
    const parsed: unknown = JSON.parse(typeof value === 'string' ? value : String(value));
    return typeof parsed === 'object' && parsed !== null && !Array.isArray(parsed) ? (parsed as CandidateMetadata) : null;
  } catch {
    return null;
  }
}
