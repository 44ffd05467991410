/**
 * Wall-clock time in an IANA time zone, for cron slots. A "local" value here is the zone's wall
 * clock written as if it were UTC milliseconds (2026-03-29 02:30 in Berlin is
 * `Date.UTC(2026, 2, 29, 2, 30)`), so that a cron pattern can be matched against it by a cron
 * parser that knows nothing of daylight saving (run in UTC). Mapping a local value back to an
 * instant is where the daylight-saving rules of schedules live (see {@link ZoneClock.instantOfLocal}).
 */

const DAY_MS = 86_400_000;

/**
 * Offsets are cached per bucket of this many ms (UTC-aligned). `formatToParts` costs microseconds
 * and a slot takes dozens of offsets: a per-second cron's 1 h catch-up window took hundreds of ms
 * of synchronous CPU at leadership start, when lease renewals must not wait. A bucket whose two
 * ends show the same offset is taken to show it throughout; one whose ends differ holds one change,
 * found by bisection to the second. That assumes no two offset changes less than a bucket apart:
 * the closest in the tz database (2025b, every zone, 1800–2100) are ~4 days apart (Africa/Freetown
 * 1939), then ~7 days (Brazil 2000, Gaza's projected rules), and the rules below already assume
 * at most one change in a day.
 * Where a transition falls within the bucket does not matter (LMT ones fall on odd seconds).
 */
const BUCKET_MS = 3_600_000;
/**
 * Per zone, the most bucket ends and changes kept (the oldest remembered goes first). A schedule
 * looks at a few buckets around now, a day back and a day ahead; the cap only bounds memory in a
 * process that lives for years or is asked about many far-apart instants.
 */
const MAX_ENDS = 1024;
const MAX_CHANGES = 64;
/** The range of `Date`: a bucket end beyond it is not asked (the instant itself is, uncached). */
const MAX_DATE_MS = 8.64e15;

/** The wall clock of one zone. */
export interface ZoneClock {
  /** The zone's offset from UTC at instant `t` (local minus UTC), in ms, at the second's precision. */
  offsetAt(t: number): number;
  /** The local value of instant `t`. */
  localOf(t: number): number;
  /**
   * The highest local value the zone's clock has shown at or before instant `t`: the local value
   * of `t`, except within the repeated hour after the clocks go back, where the clock already
   * showed later values during the first pass. Every local value up to it belongs to an instant
   * no later than `t` (values skipped by a forward change included: they map to the change).
   */
  localReached(t: number): number;
  /**
   * The instant a local value `local` runs at, per the rule of schedules: a value the clock shows
   * once is that instant; one it shows twice (the clocks went back) is its first occurrence; one it
   * skips (the clocks went forward) is the instant of the change, the first instant whose local
   * value is later. Non-decreasing in `local`.
   */
  instantOfLocal(local: number): number;
}

function formatFor(zone: string): Intl.DateTimeFormat {
  return new Intl.DateTimeFormat('en-US', {
    timeZone: zone,
    hourCycle: 'h23',
    era: 'short',
    year: 'numeric',
    month: 'numeric',
    day: 'numeric',
    hour: 'numeric',
    minute: 'numeric',
    second: 'numeric',
  });
}

/** The offset at whole second `second` as the runtime's time-zone data says: one `formatToParts`. */
function offsetOfFormat(format: Intl.DateTimeFormat, second: number): number {
  const parts = format.formatToParts(new Date(second));
  let year = 0;
  let month = 1;
  let day = 1;
  let hour = 0;
  let minute = 0;
  let sec = 0;
  let bc = false;
  for (const { type, value } of parts) {
    if (type === 'year') year = Number(value);
    else if (type === 'month') month = Number(value);
    else if (type === 'day') day = Number(value);
    else if (type === 'hour') hour = Number(value);
    else if (type === 'minute') minute = Number(value);
    else if (type === 'second') sec = Number(value);
    else if (type === 'era') bc = value === 'BC' || value === 'B';
  }
  const local = new Date(0);
  local.setUTCFullYear(bc ? 1 - year : year, month - 1, day);
  local.setUTCHours(hour, minute, sec, 0);
  return local.getTime() - second;
}

function remember(map: Map<number, number>, key: number, value: number, max: number): void {
  if (map.size >= max) map.delete(map.keys().next().value as number);
  map.set(key, value);
}

abstract class Clock implements ZoneClock {
  constructor(readonly zone: string) {}

  abstract offsetAt(t: number): number;

  localOf(t: number): number {
    return t + this.offsetAt(t);
  }

  localReached(t: number): number {
    const now = this.offsetAt(t);
    const before = this.offsetAt(t - DAY_MS);
    if (before <= now) return t + now;
    // The clocks went back within the last day: the last instant before the change showed the most.
    const change = this.#firstWithOffset(t - DAY_MS, t, now);
    return Math.max(t + now, change - 1 + this.offsetAt(change - 1));
  }

  instantOfLocal(local: number): number {
    if (this.zone === 'UTC') return local;
    const offsets = new Set([this.offsetAt(local - DAY_MS), this.offsetAt(local), this.offsetAt(local + DAY_MS)]);
    let first: number | undefined;
    let lo = Infinity;
    let hi = -Infinity;
    for (const offset of offsets) {
      const t = local - offset;
      lo = Math.min(lo, t);
      hi = Math.max(hi, t);
      if (this.localOf(t) === local && (first === undefined || t < first)) first = t;
    }
    if (first !== undefined) return first;
    // Skipped: between `lo` (still before the change, showing less) and `hi` (after it, showing more).
    while (hi - lo > 1) {
      const mid = Math.floor((lo + hi) / 2);
      if (this.localOf(mid) > local) hi = mid;
      else lo = mid;
    }
    return hi;
  }

  /** The first instant in (lo, hi] whose offset is `offset`, the offset at `hi` (one change between them). */
  #firstWithOffset(lo: number, hi: number, offset: number): number {
    while (hi - lo > 1) {
      const mid = Math.floor((lo + hi) / 2);
      if (this.offsetAt(mid) === offset) hi = mid;
      else lo = mid;
    }
    return hi;
  }
}

/** Every offset from `formatToParts`: the reference the cached clock must agree with. */
class UncachedClock extends Clock {
  readonly #format: Intl.DateTimeFormat;

  constructor(zone: string) {
    super(zone);
    this.#format = formatFor(zone);
  }

  offsetAt(t: number): number {
    if (this.zone === 'UTC') return 0;
    return offsetOfFormat(this.#format, Math.floor(t / 1000) * 1000);
  }

  canonical(): string {
    return this.#format.resolvedOptions().timeZone;
  }
}

/** Offsets from the bucket cache (see {@link BUCKET_MS}); results equal {@link UncachedClock}'s. */
class CachedClock extends UncachedClock {
  /** Bucket index k → the offset at instant k × BUCKET_MS. */
  readonly #ends = new Map<number, number>();
  /** Bucket index k → the first second of bucket k showing the offset at its end (ends that differ only). */
  readonly #changes = new Map<number, number>();

  override offsetAt(t: number): number {
    if (this.zone === 'UTC') return 0;
    const second = Math.floor(t / 1000) * 1000;
    const k = Math.floor(second / BUCKET_MS);
    const from = k * BUCKET_MS;
    if (from < -MAX_DATE_MS || from + BUCKET_MS > MAX_DATE_MS) return super.offsetAt(second);
    const start = this.#end(k);
    if (second === from) return start;
    const end = this.#end(k + 1);
    if (start === end) return start;
    let change = this.#changes.get(k);
    if (change === undefined) {
      // Bisection over whole seconds: `lo` shows the start's offset, `hi` the end's.
      let lo = from;
      let hi = from + BUCKET_MS;
      while (hi - lo > 1000) {
        const mid = lo + Math.floor((hi - lo) / 2000) * 1000;
        if (super.offsetAt(mid) === start) lo = mid;
        else hi = mid;
      }
      change = hi;
      remember(this.#changes, k, change, MAX_CHANGES);
    }
    return second < change ? start : end;
  }

  #end(k: number): number {
    let offset = this.#ends.get(k);
    if (offset === undefined) {
      offset = super.offsetAt(k * BUCKET_MS);
      remember(this.#ends, k, offset, MAX_ENDS);
    }
    return offset;
  }
}

/** One cached clock per zone name, as given (the cache lives as long as the process). */
const clocks = new Map<string, CachedClock>();

function cachedClock(zone: string): CachedClock {
  let clock = clocks.get(zone);
  if (!clock) {
    clock = new CachedClock(zone);
    clocks.set(zone, clock);
  }
  return clock;
}

/** The wall clock of `zone`, its offsets cached. Throws RangeError for a zone the runtime does not know. */
export function zoneClock(zone: string): ZoneClock {
  return cachedClock(zone);
}

/** The same without the cache: every offset asks `formatToParts` (the reference of the differential test). */
export function uncachedZoneClock(zone: string): ZoneClock {
  return new UncachedClock(zone);
}

/** Whether `zone` is a time zone this runtime knows, and its canonical name. Throws RangeError otherwise. */
export function canonicalZone(zone: string): string {
  return cachedClock(zone).canonical();
}

/** {@link ZoneClock.offsetAt} of `zone`'s cached clock. */
export function offsetAt(zone: string, t: number): number {
  return cachedClock(zone).offsetAt(t);
}

/** {@link ZoneClock.localOf} of `zone`'s cached clock. */
export function localOf(zone: string, t: number): number {
  return cachedClock(zone).localOf(t);
}

/** {@link ZoneClock.localReached} of `zone`'s cached clock. */
export function localReached(zone: string, t: number): number {
  return cachedClock(zone).localReached(t);
}

/** {@link ZoneClock.instantOfLocal} of `zone`'s cached clock. */
export function instantOfLocal(zone: string, local: number): number {
  return cachedClock(zone).instantOfLocal(local);
}
