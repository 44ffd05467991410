/**
 * Slot math, pure: cron in a time zone across both daylight-saving changes, `everyMs` multiples,
 * and the two directions agreeing with each other.
 */
import { cronSeries, everySeries } from '../../dist/src/schedules/slots';
import { instantOfLocal, localReached } from '../../dist/src/schedules/zone';
import { backwards, forwards } from './walk';

const iso = (t: number | null) => (t === null ? null : new Date(t).toISOString());
const at = (s: string) => Date.parse(s);



describe('cron in Europe/Berlin across the 2026 daylight-saving changes', () => {
  const daily = cronSeries('30 2 * * *', 'Europe/Berlin', 'cron');

  test('02:30 daily runs once on each day, spring-forward day at the change (03:00 CEST)', () => {
    const slots = forwards(daily, at('2026-03-27T00:00:00Z'), at('2026-04-01T00:00:00Z')).map(iso);
    expect(slots).toEqual([
      '2026-03-27T01:30:00.000Z', // 02:30 CET
      '2026-03-28T01:30:00.000Z',
      '2026-03-29T01:00:00.000Z', // 02:30 does not exist: the change, 03:00 CEST
      '2026-03-30T00:30:00.000Z', // 02:30 CEST
      '2026-03-31T00:30:00.000Z',
    ]);
    expect(backwards(daily, at('2026-03-27T00:00:00Z'), at('2026-04-01T00:00:00Z')).map(iso)).toEqual(slots);
  });

  test('02:30 daily runs once on the fall-back day, at the first 02:30 (CEST)', () => {
    const slots = forwards(daily, at('2026-10-23T00:00:00Z'), at('2026-10-28T00:00:00Z')).map(iso);
    expect(slots).toEqual([
      '2026-10-23T00:30:00.000Z',
      '2026-10-24T00:30:00.000Z',
      '2026-10-25T00:30:00.000Z', // 02:30 CEST; 02:30 CET (01:30Z) does not run again
      '2026-10-26T01:30:00.000Z', // 02:30 CET
      '2026-10-27T01:30:00.000Z',
    ]);
    expect(backwards(daily, at('2026-10-23T00:00:00Z'), at('2026-10-28T00:00:00Z')).map(iso)).toEqual(slots);
  });

  test('asked from inside the repeated hour (second pass), the next slot is the next day', () => {
    // 02:40 CET on the fall-back day, after both 02:30s.
    expect(iso(daily.next(at('2026-10-25T01:40:00Z')))).toBe('2026-10-26T01:30:00.000Z');
    // 02:10 CET, second pass, before the second 02:30: that one does not run either.
    expect(iso(daily.next(at('2026-10-25T01:10:00Z')))).toBe('2026-10-26T01:30:00.000Z');
    expect(iso(daily.previous(at('2026-10-25T01:40:00Z')))).toBe('2026-10-25T00:30:00.000Z');
  });

  test('an interval pattern runs each local time once: the repeated hour once, the skipped hour at the change', () => {
    const quarter = cronSeries('*/15 * * * *', 'Europe/Berlin', 'cron');
    const fall = forwards(quarter, at('2026-10-24T23:30:00Z'), at('2026-10-25T02:01:00Z')).map(iso);
    // 01:30 .. 02:45 CEST (first pass), then 03:00 CET; the second pass through 02:xx runs nothing.
    expect(fall).toEqual([
      '2026-10-24T23:30:00.000Z',
      '2026-10-24T23:45:00.000Z',
      '2026-10-25T00:00:00.000Z',
      '2026-10-25T00:15:00.000Z',
      '2026-10-25T00:30:00.000Z',
      '2026-10-25T00:45:00.000Z',
      '2026-10-25T02:00:00.000Z',
    ]);
    const spring = forwards(quarter, at('2026-03-29T00:30:00Z'), at('2026-03-29T01:31:00Z')).map(iso);
    // 01:30, 01:45 CET, then 02:00–02:45 (skipped) and 03:00 CEST are one slot at the change.
    expect(spring).toEqual(['2026-03-29T00:30:00.000Z', '2026-03-29T00:45:00.000Z', '2026-03-29T01:00:00.000Z', '2026-03-29T01:15:00.000Z', '2026-03-29T01:30:00.000Z']);
    expect(backwards(quarter, at('2026-10-24T23:30:00Z'), at('2026-10-25T02:01:00Z')).map(iso)).toEqual(fall);
  });

  test('every second, walking back across the skipped hour: one step over it', () => {
    const second = cronSeries('* * * * * *', 'Europe/Berlin', 'cron');
    const change = at('2026-03-29T01:00:00Z');
    expect(iso(second.previous(change + 1000))).toBe('2026-03-29T01:00:00.000Z');
    expect(iso(second.previous(change))).toBe('2026-03-29T00:59:59.000Z');
    expect(iso(second.next(change - 1000))).toBe('2026-03-29T01:00:00.000Z');
    expect(iso(second.next(change))).toBe('2026-03-29T01:00:01.000Z');
  });

  test('six fields: seconds first', () => {
    const s = cronSeries('15 * * * * *', 'UTC', 'cron');
    expect(iso(s.next(at('2026-01-01T00:00:15Z')))).toBe('2026-01-01T00:01:15.000Z');
    expect(iso(s.previous(at('2026-01-01T00:00:15Z')))).toBe('2025-12-31T23:59:15.000Z');
  });

  test('other zones: New York (US rules) and Lord Howe (30-minute change)', () => {
    const ny = cronSeries('30 2 * * *', 'America/New_York', 'cron');
    expect(forwards(ny, at('2026-03-07T12:00:00Z'), at('2026-03-10T12:00:00Z')).map(iso)).toEqual([
      '2026-03-08T07:00:00.000Z', // 02:30 skipped: the change, 03:00 EDT
      '2026-03-09T06:30:00.000Z',
      '2026-03-10T06:30:00.000Z',
    ]);
    const lh = cronSeries('45 1 * * *', 'Australia/Lord_Howe', 'cron');
    // 2026-10-04 02:00 LHST (+10:30) becomes 02:30 (+11): 01:45 exists; 02:15 would not.
    const skipped = cronSeries('15 2 * * *', 'Australia/Lord_Howe', 'cron');
    expect(iso(skipped.next(at('2026-10-03T12:00:00Z')))).toBe('2026-10-03T15:30:00.000Z');
    expect(iso(lh.next(at('2026-10-03T12:00:00Z')))).toBe('2026-10-03T15:15:00.000Z');
  });
});

describe('zone mapping', () => {
  test('a local value maps to one instant, non-decreasing, and localReached covers the repeated hour', () => {
    const zone = 'Europe/Berlin';
    let last = -Infinity;
    for (let local = Date.UTC(2026, 9, 25, 0, 0); local <= Date.UTC(2026, 9, 25, 4, 0); local += 60_000) {
      const t = instantOfLocal(zone, local);
      expect(t).toBeGreaterThanOrEqual(last);
      last = t;
    }
    // 02:30 CET (second pass): the clock already showed up to 02:59:59.999 in the first pass.
    expect(localReached(zone, at('2026-10-25T01:30:00Z'))).toBe(Date.UTC(2026, 9, 25, 2, 59, 59, 999));
    expect(localReached(zone, at('2026-10-25T02:30:00Z'))).toBe(Date.UTC(2026, 9, 25, 3, 30));
  });
});

describe('everyMs', () => {
  test('whole multiples since the epoch, strictly after and before', () => {
    const s = everySeries(1000);
    expect(s.next(5000)).toBe(6000);
    expect(s.next(5999)).toBe(6000);
    expect(s.previous(5000)).toBe(4000);
    expect(s.previous(5001)).toBe(5000);
    const hour = everySeries(3_600_000);
    expect(iso(hour.next(at('2026-03-29T00:59:59Z')))).toBe('2026-03-29T01:00:00.000Z');
  });
});
