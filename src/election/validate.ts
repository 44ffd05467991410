import { ValidationError } from '../errors';
import type { Session } from '../db/session';

/** Namespace used when `options.ns` is omitted. */
export const DEFAULT_NS = 'default';
/** Lease and candidate expiry, in seconds, unless set otherwise. */
export const DEFAULT_EXPIRE_SECONDS = 60;
/** The longest accepted expiry: one year. */
export const MAX_EXPIRE_SECONDS = 31_536_000;
/** The longest accepted namespace, in characters (Unicode code points, as the databases count). */
export const MAX_NS_LENGTH = 255;

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

function describe(value: unknown): string {
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
  if (typeof value !== 'string') throw new ValidationError(parameter, `must be a string (got ${describe(value)})`);
  if (value.length === 0) throw new ValidationError(parameter, 'must not be empty');
  // Lone surrogates cannot be encoded as UTF-8 and NUL cannot be stored by PostgreSQL: either
  // would come back different from what was given.
  if (!value.isWellFormed()) throw new ValidationError(parameter, 'must be well-formed Unicode (it has a lone surrogate)');
  if (value.includes('\u0000')) throw new ValidationError(parameter, 'must not contain NUL characters');
  const length = [...value].length;
  if (length > MAX_NS_LENGTH) throw new ValidationError(parameter, `must be at most ${MAX_NS_LENGTH} characters (got ${length})`);
  return value;
}

/** A finite number of seconds, > 0 and ≤ one year. */
export function checkExpireSeconds(value: unknown, parameter = 'expireSeconds'): number {
  if (typeof value !== 'number' || !Number.isFinite(value) || value <= 0 || value > MAX_EXPIRE_SECONDS) {
    throw new ValidationError(parameter, `must be a finite number of seconds > 0 and <= ${MAX_EXPIRE_SECONDS} (got ${describe(value)})`);
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
