import { ValidationError, shown } from '../errors';
import { checkOptions } from '../election/validate';
import { checkMaxAttempts, checkScheduleName } from './validate';
import { cronSeries, checkTimeZone, SlotSeries, everySeries } from './slots';

/** What a schedule does with the slots that came due while nobody ran them. */
export type CatchUp = 'all' | 'latest' | 'none';
/** What a schedule does with a slot that comes due while its previous run still runs. */
export type Overlap = 'skip' | 'wait';

/** The options of `LeaderElector.schedule` and `LeaderElectorGroup.schedule`. */
export interface ScheduleOptions {
  /** Unique per namespace and loop, 1–100 characters: the key of its slots in the runs table. Required. */
  name: string;
  /**
   * A cron pattern: 5 fields, or 6 with seconds first (`@daily` and the other nicknames too).
   * Exactly one of `cron` and `everyMs`.
   */
  cron?: string;
  /** Slots at whole multiples of `everyMs` since the Unix epoch; an integer ≥ 1000. Exactly one of `cron` and `everyMs`. */
  everyMs?: number;
  /** The IANA time zone `cron` is read in. Default `'UTC'`. Only with `cron`. */
  timeZone?: string;
  /**
   * The slots that came due while nobody ran them (no leader, every process down), found by a new
   * leader: `'all'` runs every one within `catchUpWindowMs`, `'latest'` the newest of them, `'none'`
   * none; the others are recorded `missed`. Default `'latest'`.
   */
  catchUp?: CatchUp;
  /**
   * A slot never starts later than this after it came due: older ones are recorded `missed`.
   * Milliseconds, an integer ≥ 0. Default {@link DEFAULT_CATCH_UP_WINDOW_MS} (one hour).
   */
  catchUpWindowMs?: number;
  /**
   * A slot that comes due while this schedule's previous run still runs: `'wait'` runs it when
   * that run has ended, `'skip'` records it `skipped`. Default `'wait'`.
   */
  overlap?: Overlap;
  /** A slot whose run lost its leader runs again, up to this many runs in all; then it is `abandoned`. Default 3. */
  maxAttempts?: number;
}

/** The default of `catchUpWindowMs`: one hour. */
export const DEFAULT_CATCH_UP_WINDOW_MS = 3_600_000;
/** The default of `maxAttempts`. */
export const DEFAULT_MAX_ATTEMPTS = 3;
/** The shortest `everyMs`. */
export const MIN_EVERY_MS = 1000;
/**
 * The shortest `catchUpWindowMs`: a slot starts some milliseconds after it came due (its timer,
 * the claim's round trip), so a shorter window would record slots `missed` that came due on time.
 */
export const MIN_CATCH_UP_WINDOW_MS = 1000;

/** Options after validation, defaults filled in, with the slots they describe. */
export interface CheckedScheduleOptions {
  readonly name: string;
  readonly cron: string | null;
  readonly everyMs: number | null;
  readonly timeZone: string;
  readonly catchUp: CatchUp;
  readonly catchUpWindowMs: number;
  readonly overlap: Overlap;
  readonly maxAttempts: number;
  /** The slots, by the options. */
  readonly series: SlotSeries;
}

const KNOWN = ['name', 'cron', 'everyMs', 'timeZone', 'catchUp', 'catchUpWindowMs', 'overlap', 'maxAttempts'] as const;

function oneOf<T extends string>(value: unknown, allowed: readonly T[], parameter: string, fallback: T): T {
  if (value === undefined) return fallback;
  if (typeof value !== 'string' || !(allowed as readonly string[]).includes(value)) {
    throw new ValidationError(parameter, `must be one of ${allowed.map((a) => `'${a}'`).join(', ')} (got ${shown(value)})`);
  }
  return value as T;
}

/**
 * Validates the options of `schedule()` (a {@link ValidationError} naming the parameter), fills in
 * the defaults and returns them frozen. Uniqueness of the name is the caller's check.
 */
export function checkScheduleOptions(value: unknown): CheckedScheduleOptions {
  if (value === undefined || value === null) throw new ValidationError('options', 'must be an object with at least a name and cron or everyMs');
  const o = checkOptions(value, KNOWN);
  // The runs store's own rule, so that a name accepted here is one it stores.
  const name = checkScheduleName(o.name, 'options.name');
  const hasCron = o.cron !== undefined;
  const hasEvery = o.everyMs !== undefined;
  if (hasCron === hasEvery) {
    throw new ValidationError(hasCron ? 'options.everyMs' : 'options.cron', 'exactly one of options.cron and options.everyMs must be given');
  }
  let cron: string | null = null;
  let everyMs: number | null = null;
  let timeZone = 'UTC';
  let series: SlotSeries;
  if (hasCron) {
    if (typeof o.cron !== 'string' || o.cron.trim() === '') throw new ValidationError('options.cron', `must be a cron pattern string (got ${shown(o.cron)})`);
    cron = o.cron;
    if (o.timeZone !== undefined) timeZone = checkTimeZone(o.timeZone, 'options.timeZone');
    series = cronSeries(cron, timeZone, 'options.cron');
  } else {
    const every = o.everyMs;
    if (typeof every !== 'number' || !Number.isSafeInteger(every) || every < MIN_EVERY_MS) {
      throw new ValidationError('options.everyMs', `must be an integer number of milliseconds >= ${MIN_EVERY_MS} (got ${shown(every)})`);
    }
    if (o.timeZone !== undefined) throw new ValidationError('options.timeZone', 'applies to cron only: everyMs slots are multiples since the Unix epoch');
    everyMs = every;
    series = everySeries(every);
  }
  const window = o.catchUpWindowMs ?? DEFAULT_CATCH_UP_WINDOW_MS;
  if (typeof window !== 'number' || !Number.isSafeInteger(window) || window < MIN_CATCH_UP_WINDOW_MS) {
    throw new ValidationError('options.catchUpWindowMs', `must be an integer number of milliseconds >= ${MIN_CATCH_UP_WINDOW_MS} (got ${shown(window)})`);
  }
  const attempts = checkMaxAttempts(o.maxAttempts ?? DEFAULT_MAX_ATTEMPTS, 'options.maxAttempts');
  return Object.freeze({
    name,
    cron,
    everyMs,
    timeZone,
    catchUp: oneOf(o.catchUp, ['all', 'latest', 'none'] as const, 'options.catchUp', 'latest'),
    catchUpWindowMs: window,
    overlap: oneOf(o.overlap, ['skip', 'wait'] as const, 'options.overlap', 'wait'),
    maxAttempts: attempts,
    series,
  });
}
