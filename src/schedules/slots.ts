import { Cron } from 'croner';
import { ValidationError, shown } from '../errors';
import { canonicalZone, uncachedZoneClock, zoneClock } from './zone';

/**
 * The slots of a schedule: instants (Unix milliseconds) at which it comes due, by the database's
 * clock. Pure: no timers, no clock of its own.
 */
export interface SlotSeries {
  /** The first slot strictly after `t`; null when there is none. */
  next(t: number): number | null;
  /** The last slot strictly before `t`; null when there is none. */
  previous(t: number): number | null;
}

/** `everyMs`: the whole multiples of `everyMs` since the Unix epoch. */
export function everySeries(everyMs: number): SlotSeries {
  return Object.freeze({
    next: (t: number) => (Math.floor(t / everyMs) + 1) * everyMs,
    previous: (t: number) => (Math.ceil(t / everyMs) - 1) * everyMs,
  });
}

/** Validates an IANA time zone name (not a UTC offset such as `+01:00`); returns it as given. */
export function checkTimeZone(value: unknown, parameter: string): string {
  if (typeof value !== 'string' || value === '' || /^[+-]/.test(value)) {
    throw new ValidationError(parameter, `must be an IANA time zone name such as 'Europe/Berlin' (got ${shown(value)})`);
  }
  try {
    canonicalZone(value);
  } catch (error) {
    throw new ValidationError(parameter, `must be an IANA time zone name such as 'Europe/Berlin' (got ${JSON.stringify(value)})`, { cause: error });
  }
  return value;
}

/** At most this many pattern matches are looked at for one answer: a bound on a pattern that (almost) never matches. */
const MAX_STEPS = 1000;

/**
 * `cron` read in `timeZone`. The pattern is matched against the zone's wall clock (croner runs
 * in UTC on local values, so it never sees a daylight-saving change), and each match is mapped to
 * an instant by {@link instantOfLocal}: every local time the pattern names runs once — a time the
 * clocks skip runs at the change, a time they show twice runs at its first occurrence — and
 * matches that map to the same instant are one slot. Interval patterns (every 15 minutes, say) follow
 * the same rule: through a repeated hour they run once, in the first pass.
 *
 * Croner gets a UTC offset of 0 rather than the time zone 'UTC': the same wall clock, but a
 * time-zone name makes it ask `Intl` (`formatToParts`) for every date it looks at, dozens per slot,
 * where an offset is arithmetic. `uncached` is the computation before that and the offset cache
 * (croner in 'UTC', every offset from `formatToParts`): the reference of the differential test.
 */
export function cronSeries(pattern: string, timeZone: string, parameter: string, uncached = false): SlotSeries {
  let cron: Cron;
  try {
    const wallClock = uncached ? { timezone: 'UTC' } : { utcOffset: 0 };
    cron = new Cron(pattern, { ...wallClock, paused: true, mode: '5-or-6-parts' });
  } catch (error) {
    const detail = error instanceof Error ? error.message : shown(error);
    throw new ValidationError(parameter, `must be a cron pattern of 5 fields, or 6 with seconds first (${detail})`, { cause: error });
  }
  const zone = canonicalZone(timeZone) === 'UTC' ? 'UTC' : timeZone;
  const clock = uncached ? uncachedZoneClock(zone) : zoneClock(zone);
  const series: SlotSeries = {
    next(t) {
      // Local values up to what the clock has shown by `t` map to instants no later than `t`.
      let local = clock.localReached(t);
      for (let step = 0; step < MAX_STEPS; step++) {
        const match = cron.nextRun(new Date(local));
        if (!match) return null;
        local = match.getTime();
        const instant = clock.instantOfLocal(local);
        if (instant > t) return instant;
      }
      return null;
    },
    previous(t) {
      let local = clock.localReached(t) + 1;
      for (let step = 0; step < MAX_STEPS; step++) {
        const [match] = cron.previousRuns(1, new Date(local));
        if (!match) return null;
        const instant = clock.instantOfLocal(match.getTime());
        if (instant < t) return instant;
        // Not before `t`: go on from the clock's value just before that instant, which skips the
        // other local times a forward change maps to the same instant in one step.
        local = Math.min(match.getTime(), clock.localReached(instant - 1) + 1);
      }
      return null;
    },
  };
  if (series.next(Date.now()) === null) throw new ValidationError(parameter, `never comes due (got ${JSON.stringify(pattern)})`);
  return Object.freeze(series);
}
