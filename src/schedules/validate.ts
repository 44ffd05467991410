import { ValidationError, shown } from '../errors';
import { checkCandidateId, checkNs, checkOptions, checkStoredName, checkTerm } from '../election/validate';
import type { CheckedSlot, Claimant, SlotKey } from './runs-store';

export type { CheckedSlot };
import { SCHEDULE_NAME_MAX_LENGTH } from './runs-store';

/** The latest slot the tables store alike everywhere: 9999-12-31T23:59:59.999Z. */
const MAX_SLOT_MS = 253_402_300_799_999;

/** `getRuns` returns this many runs unless `limit` says otherwise: 100. */
export const DEFAULT_RUNS_LIMIT = 100;
/** The largest accepted `getRuns` `limit`: 1000. */
export const MAX_RUNS_LIMIT = 1000;
/** The largest accepted `maxAttempts`: 1000. */
export const MAX_ATTEMPTS_LIMIT = 1000;

/** A schedule's name: a well-formed string of 1 to {@link SCHEDULE_NAME_MAX_LENGTH} characters without NUL. */
export function checkScheduleName(value: unknown, parameter = 'name'): string {
  return checkStoredName(value, parameter, SCHEDULE_NAME_MAX_LENGTH);
}

/** An instant given as a Date: valid, from the Unix epoch to the end of year 9999; returned as epoch ms. */
export function checkInstant(value: unknown, parameter: string): number {
  if (!(value instanceof Date)) throw new ValidationError(parameter, `must be a Date (got ${shown(value)})`);
  const ms = value.getTime();
  if (!Number.isFinite(ms) || ms < 0 || ms > MAX_SLOT_MS) {
    throw new ValidationError(parameter, `must be a valid Date from 1970-01-01 to 9999-12-31 UTC (got ${shown(value)})`);
  }
  return ms;
}


/** Validates a {@link SlotKey}. */
export function checkSlotKey(value: unknown, parameter = 'key'): CheckedSlot {
  if (typeof value !== 'object' || value === null) throw new ValidationError(parameter, `must be an object { ns, name, slot } (got ${shown(value)})`);
  const key = value as Partial<SlotKey>;
  return {
    ns: checkNs(key.ns === undefined ? null : key.ns, `${parameter}.ns`),
    name: checkScheduleName(key.name, `${parameter}.name`),
    slotMs: checkInstant(key.slot, `${parameter}.slot`),
  };
}

/** Validates a {@link Claimant}: a candidate UUID (stored lower-case) and a term. */
export function checkClaimant(value: unknown, parameter = 'who'): Claimant {
  if (typeof value !== 'object' || value === null) throw new ValidationError(parameter, `must be an object { candidateId, term } (got ${shown(value)})`);
  const who = value as Partial<Claimant>;
  const candidateId = checkCandidateId(who.candidateId, `${parameter}.candidateId`);
  const term = checkTerm(who.term, `${parameter}.term`);
  if (term === undefined) throw new ValidationError(`${parameter}.term`, 'is required: the term the caller leads under');
  return { candidateId, term };
}

/** `maxAttempts`: an integer from 1 to {@link MAX_ATTEMPTS_LIMIT}. */
export function checkMaxAttempts(value: unknown, parameter = 'maxAttempts'): number {
  if (typeof value !== 'number' || !Number.isSafeInteger(value) || value < 1 || value > MAX_ATTEMPTS_LIMIT) {
    throw new ValidationError(parameter, `must be an integer from 1 to ${MAX_ATTEMPTS_LIMIT} (got ${shown(value)})`);
  }
  return value;
}

/** Where a page of `getRuns` ends: the last run of the previous page (any {@link ScheduledRunInfo} will do). */
export interface RunsCursor {
  readonly slot: Date;
  readonly ns: string;
  readonly name: string;
}

/** Options of `getRuns`. */
export interface GetRunsOptions {
  /** Only this namespace. Default: every namespace. */
  readonly ns?: string;
  /** Only this schedule (by name; in every namespace unless `ns` is given). Default: every schedule. */
  readonly name?: string;
  /** At most this many runs, newest slot first. Default {@link DEFAULT_RUNS_LIMIT} (100); 1 to {@link MAX_RUNS_LIMIT}. */
  readonly limit?: number;
  /**
   * Where to start, to page backwards: a run (the last one you got, a {@link RunsCursor}) for the
   * runs after it in the order — each run once, even where schedules share a slot — or a `Date`
   * for the slots strictly before that instant. Default: from the newest.
   */
  readonly before?: Date | RunsCursor;
}

/** Where a page starts, checked: before `slotMs`, or (with `ns` and `name`) after that run in the order. */
export interface CheckedRunsStart {
  readonly slotMs: number;
  readonly run: { readonly ns: string; readonly name: string } | undefined;
}

/** What `getRuns` was asked, checked. */
export interface CheckedRunsQuery {
  readonly ns: string | undefined;
  readonly name: string | undefined;
  readonly limit: number;
  readonly before: CheckedRunsStart | undefined;
}

/** `before`: a Date, or a run `{ slot, ns, name }`. */
function checkRunsStart(value: unknown): CheckedRunsStart | undefined {
  if (value === undefined) return undefined;
  if (value instanceof Date) return { slotMs: checkInstant(value, 'options.before'), run: undefined };
  if (typeof value !== 'object' || value === null) {
    throw new ValidationError('options.before', `must be a Date or the last run of the previous page, { slot, ns, name } (got ${shown(value)})`);
  }
  const run = value as Partial<RunsCursor>;
  return {
    slotMs: checkInstant(run.slot, 'options.before.slot'),
    run: { ns: checkNs(run.ns === undefined ? null : run.ns, 'options.before.ns'), name: checkScheduleName(run.name, 'options.before.name') },
  };
}

/** Validates {@link GetRunsOptions} (plus `extra` keys the caller handles). */
export function checkRunsOptions(value: unknown, extra: readonly string[] = []): CheckedRunsQuery & Record<string, unknown> {
  const o = checkOptions(value, ['ns', 'name', 'limit', 'before', ...extra]);
  const limit = o.limit ?? DEFAULT_RUNS_LIMIT;
  if (typeof limit !== 'number' || !Number.isSafeInteger(limit) || limit < 1 || limit > MAX_RUNS_LIMIT) {
    throw new ValidationError('options.limit', `must be an integer from 1 to ${MAX_RUNS_LIMIT} (got ${shown(limit)})`);
  }
  return {
    ...o,
    ns: o.ns === undefined ? undefined : checkNs(o.ns, 'options.ns'),
    name: o.name === undefined ? undefined : checkScheduleName(o.name, 'options.name'),
    limit,
    before: checkRunsStart(o.before),
  };
}
