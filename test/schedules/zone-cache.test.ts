/**
 * The zone offset cache: a per-second cron's catch-up window costs a handful of `formatToParts`
 * calls (counted, not timed), and the cached clock and slots equal the uncached computation —
 * every offset from `formatToParts`, croner in its 'UTC' time zone — across zones with odd offsets,
 * daylight-saving changes and historical (LMT) transitions on odd seconds.
 */
import { cronSeries, SlotSeries } from '../../dist/src/schedules/slots';
import { instantOfLocal, localOf, localReached, offsetAt, uncachedZoneClock, ZoneClock } from '../../dist/src/schedules/zone';
import { backwards, forwards } from './walk';

type Slots = typeof import('../../dist/src/schedules/slots');
type CatchUp = typeof import('../../dist/src/schedules/catch-up');

const S = 1000;
const H = 3_600_000;
const D = 86_400_000;
const at = (s: string) => Date.parse(s);

/** Fresh copies of the schedule modules: their offset cache starts empty. */
function freshModules(): { slots: Slots; catchUp: CatchUp } {
  let slots!: Slots;
  let catchUp!: CatchUp;
  jest.isolateModules(() => {
    slots = require('../../dist/src/schedules/slots');
    catchUp = require('../../dist/src/schedules/catch-up');
  });
  return { slots, catchUp };
}

/** Counts the `formatToParts` calls (the zone module's and croner's) made by `work`. */
function countingFormatToParts<T>(work: () => T): { result: T; calls: number } {
  const spy = jest.spyOn(Intl.DateTimeFormat.prototype, 'formatToParts');
  try {
    const result = work();
    return { result, calls: spy.mock.calls.length };
  } finally {
    spy.mockRestore();
  }
}

/** The slots in (to - span, to], walking backwards as a catch-up plan does, oldest first. */
function windowSlots(series: SlotSeries, to: number, span: number): number[] {
  const slots: number[] = [];
  for (let t = series.previous(to + 1); t !== null && t > to - span; t = series.previous(t)) slots.push(t);
  return slots.reverse();
}

/** Every whole second in [from, to). */
function seconds(from: number, to: number): number[] {
  return Array.from({ length: (to - from) / S }, (_, i) => from + i * S);
}

describe('a per-second cron in Europe/Berlin: its 1 h catch-up window asks formatToParts a few times', () => {
  test('the catch-up plan at leadership start (catchUp all, the default 1 h window)', () => {
    const { slots, catchUp } = freshModules();
    const now = at('2026-06-15T12:00:00Z');
    const { result: plan, calls } = countingFormatToParts(() => {
      const series = slots.cronSeries('* * * * * *', 'Europe/Berlin', 'cron');
      return catchUp.planCatchUp({ series, newest: now - H, now, catchUp: 'all', catchUpWindowMs: H });
    });
    expect(calls).toBeLessThanOrEqual(50);
    // The newest 1000 run, the 100 before them are recorded missed, older ones left unrecorded.
    expect(plan.run).toEqual(seconds(now - 999 * S, now + S));
    expect(plan.missed).toEqual(seconds(now - 1099 * S, now - 999 * S));
    expect(plan.unrecorded).toBe(true);
  });

  test.each([
    ['a summer hour', '2026-06-15T12:00:00Z', seconds(at('2026-06-15T11:00:01Z'), at('2026-06-15T12:00:01Z'))],
    // 02:00–03:00 does not exist: the hour of instants is still one slot a second.
    ['the spring-forward change', '2026-03-29T01:30:00Z', seconds(at('2026-03-29T00:30:01Z'), at('2026-03-29T01:30:01Z'))],
    // The second pass through 02:00–03:00 (01:00Z–02:00Z) runs nothing: the first half hour only.
    ['the fall-back change', '2026-10-25T01:30:00Z', seconds(at('2026-10-25T00:30:01Z'), at('2026-10-25T01:00:00Z'))],
  ])('every slot of the window, walked back: %s', (_, now, expected) => {
    const { slots } = freshModules();
    const { result, calls } = countingFormatToParts(() => windowSlots(slots.cronSeries('* * * * * *', 'Europe/Berlin', 'cron'), at(now), H));
    expect(calls).toBeLessThanOrEqual(50);
    expect(result).toEqual(expected);
  });
});

/** Deterministic randomness (mulberry32): a failure reproduces. */
function random(seed: number): () => number {
  let a = seed;
  return () => {
    a = (a + 0x6d2b79f5) | 0;
    let t = Math.imul(a ^ (a >>> 15), 1 | a);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const ZONES = [
  'Europe/Berlin',
  'America/New_York',
  'Australia/Lord_Howe', // 30-minute daylight saving
  'Asia/Kathmandu', // +05:45 since 1986, +05:30 before, LMT before 1920
  'Pacific/Chatham', // +12:45 / +13:45
  'America/Sao_Paulo', // no daylight saving since 2019
  'UTC',
  'Africa/Casablanca', // +01 with a month of +00 around Ramadan
];

/** Ranges looked at: LMT changes on odd seconds, 20th-century rules, 2020–2030. Scan step: how far apart offsets are sampled to find changes. */
const RANGES = [
  { from: at('1880-01-01T00:00:00Z'), to: at('1925-01-01T00:00:00Z'), step: 7 * D },
  { from: at('1975-01-01T00:00:00Z'), to: at('1990-01-01T00:00:00Z'), step: 7 * D },
  { from: at('2020-01-01T00:00:00Z'), to: at('2031-01-01T00:00:00Z'), step: D },
];

/** The offset changes in a range by the reference clock: the first second of each new offset. */
function changesIn(clock: ZoneClock, from: number, to: number, step: number): number[] {
  const changes: number[] = [];
  let before = clock.offsetAt(from);
  for (let t = from + step; t <= to; t += step) {
    const offset = clock.offsetAt(t);
    if (offset === before) continue;
    let lo = t - step;
    let hi = t;
    while (hi - lo > S) {
      const mid = lo + Math.floor((hi - lo) / (2 * S)) * S;
      if (clock.offsetAt(mid) === before) lo = mid;
      else hi = mid;
    }
    changes.push(hi);
    before = offset;
  }
  return changes;
}



describe.each(ZONES)('cached equals uncached: %s', (zone) => {
  const reference = uncachedZoneClock(zone);
  const rand = random([...zone].reduce((h, c) => Math.imul(h, 31) + c.charCodeAt(0), 7));
  const changes = RANGES.flatMap(({ from, to, step }) => changesIn(reference, from, to, step));
  const recent = changes.filter((c) => c >= RANGES[2].from);

  test('the zone has the changes it is picked for', () => {
    if (zone === 'UTC') expect(changes).toEqual([]);
    else expect(changes.length).toBeGreaterThan(0);
    if (['Europe/Berlin', 'America/New_York', 'Australia/Lord_Howe', 'Pacific/Chatham', 'Africa/Casablanca'].includes(zone)) {
      expect(recent.length).toBeGreaterThanOrEqual(20);
    }
  });

  /** A random instant in one of the ranges, at ms precision. */
  const anywhere = () => {
    const { from, to } = RANGES[Math.floor(rand() * RANGES.length)];
    return from + Math.floor(rand() * (to - from));
  };

  test('offsetAt, localOf, localReached and instantOfLocal at random instants and local values', () => {
    // Thousands of buckets far apart: more than a zone's cache keeps, so evicted ones are asked again.
    const cached: number[][] = [];
    const uncached: number[][] = [];
    for (let i = 0; i < 2000; i++) {
      const t = anywhere();
      const local = anywhere();
      cached.push([t, offsetAt(zone, t), localOf(zone, t), localReached(zone, t), local, instantOfLocal(zone, local)]);
      uncached.push([t, reference.offsetAt(t), reference.localOf(t), reference.localReached(t), local, reference.instantOfLocal(local)]);
    }
    expect(cached).toEqual(uncached);
  });

  test('at and around every offset change', () => {
    const near = [0, 1, -1, 999, 1000, -1000, -1001, 30 * 60 * S, -30 * 60 * S, H, -H, 2 * H, -2 * H, D, -D, D + 1, -D - 1];
    for (const change of changes) {
      const cached: number[][] = [];
      const uncached: number[][] = [];
      for (const d of near) {
        const t = change + d;
        cached.push([t, offsetAt(zone, t), localReached(zone, t)]);
        uncached.push([t, reference.offsetAt(t), reference.localReached(t)]);
      }
      // Local time from 2 h before the change to 2 h after it, every 5 minutes and at a random ms
      // of each: the skipped and the repeated values included.
      const from = reference.localOf(change - 1) - 2 * H;
      const to = reference.localOf(change) + 2 * H;
      for (let local = from; local <= to; local += 5 * 60 * S) {
        for (const l of [local, local + Math.floor(rand() * 5 * 60 * S)]) {
          cached.push([l, instantOfLocal(zone, l)]);
          uncached.push([l, reference.instantOfLocal(l)]);
        }
      }
      expect([change, cached]).toEqual([change, uncached]);
    }
  });

  test('the edges of the Date range', () => {
    for (const t of [8.64e15, 8.64e15 - 1, 8.64e15 - H - 1, 8.64e15 - 2 * H, -8.64e15, -8.64e15 + 1]) {
      expect([t, offsetAt(zone, t)]).toEqual([t, reference.offsetAt(t)]);
    }
  });

  test('slot lists around the changes: every 15 minutes, hourly at :30, daily at 02:30, every second', () => {
    const patterns: [string, number, number[]][] = [
      ['*/15 * * * *', 2 * H, changes],
      ['30 * * * *', 3 * H, changes],
      ['30 2 * * *', 3 * D, recent],
      // The per-second walk costs the reference dozens of formatToParts a slot: a few changes only.
      ['* * * * * *', 60 * S, recent.filter((_, i) => i % 4 === 0)],
    ];
    for (const [pattern, span, around] of patterns) {
      const cached = cronSeries(pattern, zone, 'cron');
      const uncached = cronSeries(pattern, zone, 'cron', true);
      // UTC has no change: a few random places of the ranges instead.
      const places = around.length > 0 ? around : [anywhere(), anywhere(), anywhere()].map((t) => Math.floor(t / S) * S);
      for (const change of places) {
        const [from, to] = [change - span, change + span];
        const expected = forwards(uncached, from, to);
        expect(expected.length).toBeGreaterThan(0);
        expect([pattern, change, forwards(cached, from, to)]).toEqual([pattern, change, expected]);
        expect([pattern, change, backwards(cached, from, to)]).toEqual([pattern, change, backwards(uncached, from, to)]);
        const ts = Array.from({ length: 5 }, () => from + Math.floor(rand() * (to - from)));
        expect([pattern, ts.map((t) => [cached.next(t), cached.previous(t)])]).toEqual([pattern, ts.map((t) => [uncached.next(t), uncached.previous(t)])]);
      }
    }
  });
});
