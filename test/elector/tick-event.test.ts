/**
 * The elector's `'tick'` event (what the metrics are made of) and the clock skew warning: each
 * tick reports its outcome, duration and the database clock read by the elect itself; a host
 * clock far off the database's is reported once per crossing of the threshold, not every tick.
 */
import type { DataSource } from 'typeorm';
import { DEFAULT_CLOCK_SKEW_WARNING_SECONDS, ElectorTick, LeaderElector, LeaderElectorError, ValidationError } from 'gemstone-utils';
import { describeEachDatabase } from '../support/databases';
import { ns as freshNs } from '../support/rows';
import { waitFor } from './helpers';

const EXPIRE = 2;
const INTERVAL = 200;
const SLACK_MS = 3_000;

describe('clockSkewWarningSeconds option', () => {
  test('defaults to 1 s; must be > 0 (Infinity turns the warning off)', () => {
    expect(DEFAULT_CLOCK_SKEW_WARNING_SECONDS).toBe(1);
    for (const bad of [0, -1, Number.NaN, '1', null]) {
      expect(() => new LeaderElector({ clockSkewWarningSeconds: bad as never })).toThrow(ValidationError);
      expect(() => new LeaderElector({ clockSkewWarningSeconds: bad as never })).toThrow(/^options\.clockSkewWarningSeconds /);
    }
    expect(() => new LeaderElector({ clockSkewWarningSeconds: Infinity })).not.toThrow();
    expect(() => new LeaderElector({ clockSkewWarningSeconds: 0.25 })).not.toThrow();
  });
});

/** The warning names the skew (within its own error bound plus scheduling noise of `offsetSeconds`) and its direction. */
function expectWarning(warning: LeaderElectorError, offsetSeconds: number, direction: 'behind' | 'ahead of'): void {
  const match = /the database clock is (\d+\.\d{3}) s \(±(\d+\.\d{3}) s\) (behind|ahead of) this host's clock, beyond the warning threshold of 1 s/.exec(warning.message);
  expect(match).not.toBeNull();
  const [, skew, bound, said] = match!;
  expect(said).toBe(direction);
  expect(Math.abs(Number(skew) - offsetSeconds)).toBeLessThanOrEqual(Number(bound) + 0.05);
}

describeEachDatabase("LeaderElector 'tick' event and clock skew", (db) => {
  let ds: DataSource;
  let stopMe: LeaderElector[] = [];
  beforeAll(async () => {
    ds = await db.connect();
  });
  afterEach(async () => {
    jest.restoreAllMocks();
    await Promise.all(stopMe.map((e) => e.stop()));
    stopMe = [];
  });

  function record(e: LeaderElector) {
    const ticks: ElectorTick[] = [];
    const errors: LeaderElectorError[] = [];
    e.on('tick', (tick) => ticks.push(tick));
    e.on('error', (error) => errors.push(error));
    stopMe.push(e);
    return { ticks, errors };
  }

  test('outcome, duration, leader, term and the database clock of every tick', async () => {
    const ns = freshNs();
    const a = new LeaderElector({ dataSource: ds, ns, expireSeconds: EXPIRE, intervalMs: INTERVAL });
    const b = new LeaderElector({ dataSource: ds, ns, expireSeconds: EXPIRE, intervalMs: INTERVAL });
    const ra = record(a);
    const rb = record(b);
    const before = Date.now();
    await a.start();
    await b.start();
    await waitFor('two renewals', () => ra.ticks.length >= 3);
    const after = Date.now();
    // A failed tick shows its error in the mismatch (ci39: one MariaDB renewal reported 'error', its cause unknown).
    expect(ra.ticks.slice(0, 3).map((t) => (t.outcome === 'error' ? `error: ${t.error?.message}` : t.outcome))).toEqual(['acquired', 'renewed', 'renewed']);
    expect(rb.ticks[0]).toMatchObject({ ns, candidateId: b.candidateId, outcome: 'follower', leaderId: a.candidateId, term: a.term, error: null });
    for (const tick of [...ra.ticks, ...rb.ticks]) {
      expect(tick.durationSeconds).toBeGreaterThan(0);
      expect(tick.durationSeconds).toBeLessThan(EXPIRE);
      const skew = tick.clockSkew!;
      expect(skew.errorSeconds).toBeCloseTo(tick.durationSeconds / 2 + 0.001, 6);
      // The database runs on this machine: its clock reads within the call's window.
      expect(skew.databaseNow.getTime()).toBeGreaterThanOrEqual(before - 50);
      expect(skew.databaseNow.getTime()).toBeLessThanOrEqual(Date.now() + 50);
      expect(Math.abs(skew.seconds)).toBeLessThanOrEqual(skew.errorSeconds + 0.05);
    }
    expect(ra.ticks[0]!.clockSkew!.databaseNow.getTime()).toBeLessThanOrEqual(after + 50);
    expect([...ra.errors, ...rb.errors]).toEqual([]);
  });

  test('a host clock 5 s ahead of the database: the skew is measured, one warning per crossing of the threshold', async () => {
    const realNow = Date.now.bind(Date);
    let offsetMs = 5_000;
    // The host's wall clock only: the database's is untouched.
    jest.spyOn(Date, 'now').mockImplementation(() => realNow() + offsetMs);
    const e = new LeaderElector({ dataSource: ds, ns: freshNs(), expireSeconds: EXPIRE, intervalMs: INTERVAL });
    const { ticks, errors } = record(e);
    await e.start();
    await waitFor('five ticks', () => ticks.length >= 5, INTERVAL * 6 + SLACK_MS);
    for (const tick of ticks.slice(0, 5)) {
      expect(tick.clockSkew!.seconds).toBeGreaterThan(-5 - tick.clockSkew!.errorSeconds - 0.05);
      expect(tick.clockSkew!.seconds).toBeLessThan(-5 + tick.clockSkew!.errorSeconds + 0.05);
    }
    const warnings = () => errors.filter((error) => error.phase === 'clock');
    expect(warnings()).toHaveLength(1);
    expectWarning(warnings()[0]!, 5, 'behind');
    expect(errors.filter((error) => error.phase !== 'clock')).toEqual([]);

    // Back in step: no warning; then off again: a second one.
    offsetMs = 0;
    const mark = ticks.length;
    await waitFor('ticks in step', () => ticks.length >= mark + 2 && Math.abs(ticks.at(-1)!.clockSkew!.seconds) < 0.5, INTERVAL * 4 + SLACK_MS);
    expect(warnings()).toHaveLength(1);
    offsetMs = -3_000;
    await waitFor('a second warning', () => warnings().length === 2, INTERVAL * 4 + SLACK_MS);
    expectWarning(warnings()[1]!, 3, 'ahead of');
    const later = ticks.length;
    await waitFor('more ticks', () => ticks.length >= later + 3, INTERVAL * 5 + SLACK_MS);
    expect(warnings()).toHaveLength(2);
  });

  test('clockSkewWarningSeconds: Infinity never warns', async () => {
    const realNow = Date.now.bind(Date);
    jest.spyOn(Date, 'now').mockImplementation(() => realNow() + 60_000);
    const e = new LeaderElector({ dataSource: ds, ns: freshNs(), expireSeconds: EXPIRE, intervalMs: INTERVAL, clockSkewWarningSeconds: Infinity });
    const { ticks, errors } = record(e);
    await e.start();
    await waitFor('three ticks', () => ticks.length >= 3, INTERVAL * 4 + SLACK_MS);
    expect(ticks[0]!.clockSkew!.seconds).toBeLessThan(-59);
    expect(errors).toEqual([]);
  });
});
