/**
 * The schedule instruments of `gemstone-utils/metrics` after driven runs, on prom-client and an
 * OpenTelemetry SDK alike: a job that completes (done, its duration, the last success), one that
 * throws (failed), and slots that came due while nobody led, recorded missed by the next leader's
 * catch-up, and a slot whose runs lost their leader too often (abandoned). Every count is
 * asserted against the runs the database recorded.
 */
import { ElectionService, LeaderElector, type ScheduleRunEnded, type ScheduledRunInfo } from 'gemstone-utils';
import { createOpenTelemetryMetrics, METRIC_NAMES, SCHEDULE_RUN_STATES } from 'gemstone-utils/metrics';
import { describeEachDatabase } from '../support/databases';
import { ns as freshNs } from '../support/rows';
import { waitFor } from '../elector/helpers';
import { databaseNow, leaderOf, runsStoreOf } from '../schedules/support';
import { metricsFixture, openTelemetrySdk, valueOf } from './read';

const EXPIRE = 4;
const INTERVAL = 300;
const EVERY = 1_000;
const SLACK_MS = 5_000;
const N = METRIC_NAMES;

describeEachDatabase('schedule metrics (prom-client and OpenTelemetry)', (db) => {
  const f = metricsFixture(db, EXPIRE, INTERVAL);
  const { scrape } = f;

  /** An elector attached to both libraries, whose `'scheduleRun'` events land in `events`. */
  function elector(ns: string, events: ScheduleRunEnded[]): LeaderElector {
    const e = f.elector(ns);
    e.on('scheduleRun', (run) => events.push(run));
    return e;
  }

  const count = (runs: readonly ScheduledRunInfo[], state: string) => runs.filter((r) => r.state === state).length;

  test('done, failed and missed slots are counted as the database recorded them; durations and the last success follow', async () => {
    const ns = freshNs();
    const service = new ElectionService(f.ds);
    const events: ScheduleRunEnded[] = [];
    const a = elector(ns, events);
    a.schedule({ name: 'ok', everyMs: EVERY, catchUp: 'none' }, () => undefined);
    a.schedule({ name: 'bad', everyMs: EVERY }, () => {
      throw new Error('boom');
    });
    await a.start();
    await waitFor('a done and a failed slot', () => events.some((e) => e.name === 'ok' && e.state === 'done') && events.some((e) => e.name === 'bad' && e.state === 'failed'), 2 * EVERY + SLACK_MS);
    await a.stop();

    // Nobody leads for at least two slots: the next leader's catch-up ('none') records them missed.
    const newest = (await service.getRuns({ ns, name: 'ok', limit: 1 }))[0]!.slot.getTime();
    await waitFor('two slots to come due while nobody leads', async () => (await databaseNow(f.ds)).getTime() >= newest + 2 * EVERY, 3 * EVERY + SLACK_MS, 50);
    const b = elector(ns, events);
    b.schedule({ name: 'ok', everyMs: EVERY, catchUp: 'none' }, () => undefined);
    await b.start();
    await waitFor('missed slots recorded', () => events.some((e) => e.name === 'ok' && e.state === 'missed'), SLACK_MS);
    await b.stop();

    const ok = await service.getRuns({ ns, name: 'ok', limit: 1000 });
    const bad = await service.getRuns({ ns, name: 'bad', limit: 1000 });
    expect(count(ok, 'done')).toBeGreaterThanOrEqual(1);
    expect(count(ok, 'missed')).toBeGreaterThanOrEqual(2);
    expect(count(bad, 'failed')).toBeGreaterThanOrEqual(1);
    const lastDone = Math.max(...ok.filter((r) => r.state === 'done').map((r) => r.finishedAt!.getTime())) / 1000;

    for (const { library, samples } of await scrape()) {
      const at = (name: string, labels: Record<string, string>) => [library, labels, valueOf(samples, name, { ns, ...labels })];
      for (const [schedule, runs] of [['ok', ok], ['bad', bad]] as const) {
        for (const state of SCHEDULE_RUN_STATES) {
          expect(at(N.scheduleRuns, { schedule, state })).toEqual([library, { schedule, state }, count(runs, state)]);
        }
      }
      expect(at(`${N.scheduleDuration}_count`, { schedule: 'ok', state: 'done' })).toEqual([library, { schedule: 'ok', state: 'done' }, count(ok, 'done')]);
      expect(at(`${N.scheduleDuration}_count`, { schedule: 'bad', state: 'failed' })).toEqual([library, { schedule: 'bad', state: 'failed' }, count(bad, 'failed')]);
      expect(valueOf(samples, `${N.scheduleDuration}_sum`, { ns, schedule: 'ok', state: 'done' })).toBeGreaterThanOrEqual(0);
      // No sample for states that never ran a job.
      expect(valueOf(samples, `${N.scheduleDuration}_count`, { ns, schedule: 'ok', state: 'missed' })).toBeUndefined();
      // The estimate of the database's clock the runner keeps (a tick's round trip off at most)
      // beside the finish time the database wrote: a second apart at most.
      expect(Math.abs(valueOf(samples, N.scheduleLastSuccess, { ns, schedule: 'ok' })! - lastDone)).toBeLessThan(1);
      expect(valueOf(samples, N.scheduleLastSuccess, { ns, schedule: 'bad' })).toBeUndefined();
    }
  });
  test('a slot whose runs lost their leader maxAttempts times is counted abandoned, with no duration', async () => {
    const ns = freshNs();
    const service = new ElectionService(f.ds);
    // An earlier leader claimed a slot and was lost before finishing it (it resigned without a record).
    const earlier = await leaderOf(service, ns);
    const slot = new Date((await databaseNow(f.ds)).getTime() - 2 * EVERY);
    await runsStoreOf(f.ds).claim({ ns, name: 'fragile', slot }, earlier, 1);
    await service.resign(earlier.candidateId, { ns });
    const events: ScheduleRunEnded[] = [];
    const e = elector(ns, events);
    e.schedule({ name: 'fragile', everyMs: 60 * EVERY, catchUp: 'none', maxAttempts: 1 }, () => undefined);
    await e.start();
    await waitFor('the slot abandoned', () => events.some((x) => x.state === 'abandoned'), SLACK_MS);
    await e.stop();
    const runs = await service.getRuns({ ns, name: 'fragile', limit: 1000 });
    expect(runs.find((r) => r.slot.getTime() === slot.getTime())).toMatchObject({ state: 'abandoned', attempt: 1 });
    for (const { library, samples } of await scrape()) {
      for (const state of SCHEDULE_RUN_STATES) {
        expect([library, state, valueOf(samples, N.scheduleRuns, { ns, schedule: 'fragile', state })]).toEqual([library, state, count(runs, state)]);
      }
      expect([library, valueOf(samples, `${N.scheduleDuration}_count`, { ns, schedule: 'fragile', state: 'abandoned' })]).toEqual([library, undefined]);
    }
  });

  test("the last elector of a namespace detached: its schedules' last success goes with its gauges, the counters keep their totals, another namespace keeps its own", async () => {
    // A delta-temporality SDK besides the default (cumulative) one: a gauge's series is in its
    // collection only if the callback reported it, where the cumulative SDK keeps exporting the
    // last value of a series the callback stopped reporting (OpenTelemetry cannot delete one).
    const delta = openTelemetrySdk('delta');
    f.metrics.push(createOpenTelemetryMetrics(delta.meter));
    try {
      const ns = freshNs();
      const other = freshNs();
      const service = new ElectionService(f.ds);
      const events: ScheduleRunEnded[] = [];
      const a = elector(ns, events);
      const b = elector(ns, events); // a second elector of ns, with no schedule: ns stays attached through it
      const c = elector(other, events);
      a.schedule({ name: 'ok', everyMs: EVERY, catchUp: 'none' }, () => undefined);
      c.schedule({ name: 'ok', everyMs: EVERY, catchUp: 'none' }, () => undefined);
      await a.start();
      await b.start();
      await c.start();
      const done = (n: string) => events.some((e) => e.ns === n && e.state === 'done');
      await waitFor('a done slot in both namespaces', () => done(ns) && done(other), 2 * EVERY + SLACK_MS);
      await a.stop(); // nothing runs in ns from here on (b has no schedule)
      const ok = await service.getRuns({ ns, name: 'ok', limit: 1000 });
      const lastDone = Math.max(...ok.filter((r) => r.state === 'done').map((r) => r.finishedAt!.getTime())) / 1000;
      const all = async () => [...(await scrape()), { library: 'OpenTelemetry (delta)', samples: await delta.collect() }];

      // a detached, b still attached: ns keeps its last success.
      for (const m of f.metrics) m.detach(a);
      let cumulativeBefore: number | undefined;
      for (const { library, samples } of await all()) {
        const last = valueOf(samples, N.scheduleLastSuccess, { ns, schedule: 'ok' });
        if (library === 'OpenTelemetry') cumulativeBefore = last;
        expect([library, last !== undefined && Math.abs(last - lastDone) < 1]).toEqual([library, true]);
        expect([library, valueOf(samples, N.scheduleLastSuccess, { ns: other, schedule: 'ok' }) !== undefined]).toEqual([library, true]);
      }

      // b, the last elector of ns, detached.
      for (const m of f.metrics) m.detach(b);
      for (const { library, samples } of await all()) {
        const last = valueOf(samples, N.scheduleLastSuccess, { ns, schedule: 'ok' });
        if (library === 'OpenTelemetry') expect([library, last]).toEqual([library, cumulativeBefore]); // the SDK's, see above
        else expect([library, last]).toEqual([library, undefined]);
        expect([library, valueOf(samples, N.scheduleLastSuccess, { ns: other, schedule: 'ok' }) !== undefined]).toEqual([library, true]);
        // Counters are not removed (a series that vanished would read as a reset): as the database recorded them.
        // The delta reader reports what changed since its last collection, and nothing did.
        if (library !== 'OpenTelemetry (delta)') {
          for (const state of SCHEDULE_RUN_STATES) {
            expect([library, state, valueOf(samples, N.scheduleRuns, { ns, schedule: 'ok', state })]).toEqual([library, state, count(ok, state)]);
          }
        }
      }
    } finally {
      await delta.shutdown();
    }
  });
});
