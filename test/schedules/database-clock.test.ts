/**
 * Slots come due by the database's clock: a runner whose estimate of it runs ahead (a host clock
 * off, a stale measurement) asks early, the database answers "not due", and the slot runs once
 * the database's own clock has reached it — never earlier. Driven through the runner's host
 * interface with a real lease and a real database; and the estimate itself, pure.
 */
import { randomUUID } from 'crypto';
import type { DataSource } from 'typeorm';
import { ElectionService, LeaderElectorError, Lease, ScheduledRun } from 'gemstone-utils';
import { DatabaseClock } from '../../dist/src/election/loop/database-clock';
import { Schedules } from '../../dist/src/schedules/schedule';
import { runsStoreOf } from '../../dist/src/schedules/store';
import type { ScheduleHost } from '../../dist/src/schedules/host';
import type { LeadershipWatcher } from '../../dist/src/election/loop/engine/leadership';
import { describeEachDatabase } from '../support/databases';
import { ns as freshNs } from '../support/rows';
import { waitFor } from '../elector/helpers';
import { runsOf } from './helpers';

test('the estimate: the measured database time carried forward by the monotonic clock', () => {
  const clock = new DatabaseClock();
  expect(clock.measured).toBe(false);
  const before = Date.now();
  expect(clock.now()).toBeGreaterThanOrEqual(before);
  // The database said 10 s ahead of this host, read in the middle of a round trip just finished.
  const sent = performance.now() - 20;
  const answered = performance.now();
  clock.observe(new Date(Date.now() + 10_000 - 10), sent, answered);
  expect(clock.measured).toBe(true);
  const readFrom = performance.now();
  const estimate = clock.now();
  const wall = Date.now();
  const readFor = performance.now() - readFrom;
  const skew = estimate - wall;
  // Exact but for the wall clock's whole milliseconds, a pause between reading `answered` and
  // the wall clock in observe's argument (it makes the estimate ahead by that pause, at most all
  // the time since `answered`), and a pause between the estimate and the wall clock read after it
  // (behind by at most `readFor`): the bounds are what this run took, not a guess.
  const since = performance.now() - answered;
  expect(skew).toBeGreaterThanOrEqual(10_000 - 2 - readFor);
  expect(skew).toBeLessThanOrEqual(10_000 + since + 2);
});

describeEachDatabase('a runner whose estimate of the database clock runs ahead', (db) => {
  test('asks early, is told not due, and runs each slot once the database clock has reached it', async () => {
    const ds: DataSource = await db.connect();
    const service = new ElectionService(ds, { expireSeconds: 30 });
    const ns = freshNs();
    const candidateId = randomUUID();
    const outcome = await service.electOutcome(candidateId, { ns });
    expect(outcome.isLeader).toBe(true);
    const leadership = new AbortController();
    const lease: Lease = Object.freeze({ ns, candidateId, term: outcome.term, signal: leadership.signal });
    const AHEAD_MS = 700;
    const errors: unknown[] = [];
    let watcher: LeadershipWatcher | undefined;
    const claims: Array<{ slot: number; claimed: boolean; why: string | null; databaseNow: number }> = [];
    const host: ScheduleHost = {
      stopTimeoutMs: 5_000,
      stopping: false,
      retryMs: 200,
      // Runs ahead of the database by AHEAD_MS.
      clock: { now: () => Date.now() + AHEAD_MS, measured: true, observe: () => undefined } as unknown as DatabaseClock,
      current: () => undefined,
      watch: (w) => {
        watcher = w;
        return () => undefined;
      },
      dataSource: () => ds,
      // The real store, its claims' answers recorded.
      store: (dataSource) => {
        const store = runsStoreOf(dataSource);
        return {
          ...store,
          claim: async (key, who, maxAttempts) => {
            const answer = await store.claim(key, who, maxAttempts);
            claims.push({ slot: key.slot.getTime(), claimed: answer.claimed, why: answer.claimed ? null : answer.why, databaseNow: answer.databaseNow.getTime() });
            return answer;
          },
        };
      },
      assertLeader: (_ds, l, manager) => service.assertLeader(l.candidateId, { ns: l.ns, term: l.term, session: manager }),
      report: (_phase, _ns, message, cause) => errors.push(new LeaderElectorError('schedule', { ns, candidateId }, message, cause)),
      ended: () => undefined,
    };
    const ran: number[] = [];
    const schedule = new Schedules(host).add(ns, { name: 'early', everyMs: 1000 }, (run: ScheduledRun) => {
      ran.push(run.slot.getTime());
    });
    watcher!.started(lease);
    try {
      await waitFor('three runs', () => ran.length >= 3, 20_000);
    } finally {
      leadership.abort();
      await watcher!.ended(lease);
      await schedule.cancel();
    }
    // It asked early, and was told so by the database.
    expect(claims.filter((c) => c.why === 'not-due').length).toBeGreaterThanOrEqual(1);
    for (const c of claims.filter((c) => c.why === 'not-due')) expect(c.databaseNow).toBeLessThan(c.slot);
    // Every slot claimed (and run) once the database's clock had reached it, once each.
    const claimed = claims.filter((c) => c.claimed);
    for (const c of claimed) expect(c.databaseNow).toBeGreaterThanOrEqual(c.slot);
    expect(claimed.map((c) => c.slot)).toEqual(ran);
    for (let i = 1; i < ran.length; i++) expect(ran[i]! - ran[i - 1]!).toBe(1000);
    const runs = await runsOf(ds, ns, 'early');
    for (const run of runs.filter((r) => r.state === 'done')) expect(run.startedAt!.getTime()).toBeGreaterThanOrEqual(run.slot.getTime());
    expect(errors).toEqual([]);
  });
});
