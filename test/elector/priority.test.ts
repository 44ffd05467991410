/**
 * The elector's identity, priority and eligibility: default metadata `{ host, pid }`, written when
 * registering and not on renewals; an ineligible elector never leads; a leader hands over to a
 * strictly higher priority on its next tick, after its `onStoppedLeading` settled (as on stop()),
 * and the preferred elector takes the lease — on PostgreSQL through the vacancy NOTIFY, elsewhere
 * on its next tick. The hand-over time is measured and printed; only generous bounds are asserted.
 * Equal priorities never hand over, and a lease never goes back.
 */
import { hostname } from 'os';
import type { DataSource } from 'typeorm';
import { DemotionReason, ElectionService, LeaderElector, Lease, ValidationError } from 'gemstone-utils';
import { describeEachDatabase, query, sleep } from '../support/databases';
import { ns as freshNs } from '../support/rows';
import { median, waitFor } from './helpers';

const EXPIRE = 6;
const INTERVAL = 1_000;
const TRIALS = 3;

test('bad metadata, priority or eligible options: ValidationError naming the option', () => {
  const cases: Array<[string, Record<string, unknown>]> = [
    ['options.metadata', { metadata: [1] }],
    ['options.metadata', { metadata: { big: 'x'.repeat(5000) } }],
    ['options.metadata', { metadata: { f: () => 1 } }],
    ['options.priority', { priority: 0.5 }],
    ['options.eligible', { eligible: 'yes' }],
  ];
  for (const [parameter, options] of cases) {
    const error = (() => {
      try {
        new LeaderElector(options as never);
        return undefined;
      } catch (e) {
        return e;
      }
    })();
    expect({ options, error }).toEqual({ options, error: expect.any(ValidationError) });
    expect((error as ValidationError).parameter).toBe(parameter);
  }
});

describeEachDatabase('LeaderElector priority, eligibility and metadata', (db) => {
  let dataSources: DataSource[];
  const electors: LeaderElector[] = [];
  const errors: unknown[] = [];

  beforeAll(async () => {
    const first = await db.connect();
    // Separate pools (and LISTEN connections) as separate processes have, where the database allows.
    dataSources = db.shared ? [first, await db.connect(), await db.connect(), await db.connect()] : [first, first, first, first];
  });
  afterEach(async () => {
    await Promise.all(electors.splice(0).map((e) => e.stop()));
    expect(errors.splice(0)).toEqual([]);
  });

  function elector(i: number, ns: string, options: Partial<ConstructorParameters<typeof LeaderElector>[0]> = {}): LeaderElector {
    const e = new LeaderElector({ dataSource: dataSources[i % dataSources.length], ns, expireSeconds: EXPIRE, intervalMs: INTERVAL, ...options });
    e.on('error', (error) => errors.push(error));
    electors.push(e);
    return e;
  }

  test('default metadata is { host, pid }; getCandidates shows priority and eligibility', async () => {
    const ns = freshNs();
    const leader = elector(0, ns, { priority: 2 });
    const watcher = elector(1, ns, { eligible: false, metadata: { role: 'dashboard' } });
    await leader.start();
    await watcher.start();
    const service = new ElectionService(dataSources[0]);
    expect(await service.getLeader({ ns })).toMatchObject({ leaderId: leader.candidateId, metadata: { host: hostname(), pid: process.pid } });
    const candidates = await service.getCandidates({ ns });
    expect(candidates.map(({ candidateId, priority, eligible, metadata }) => ({ candidateId, priority, eligible, metadata }))).toEqual(
      [
        { candidateId: leader.candidateId, priority: 2, eligible: true, metadata: { host: hostname(), pid: process.pid } },
        { candidateId: watcher.candidateId, priority: 0, eligible: false, metadata: { role: 'dashboard' } },
      ].sort((a, b) => (a.candidateId < b.candidateId ? -1 : 1)),
    );
  });

  test('renewals do not rewrite the metadata; a candidate row recreated behind the elector gets it back', async () => {
    const ns = freshNs();
    const e = elector(0, ns, { intervalMs: 200, expireSeconds: 3, metadata: { v: 1 } });
    await e.start();
    await query(dataSources[0]!, 'UPDATE gemstone_election_candidate SET metadata = ? WHERE ns = ?', ['{"changed":"behind its back"}', ns]);
    const [before] = await query<{ t: unknown }>(dataSources[0]!, 'SELECT last_heartbeat_at AS t FROM gemstone_election_candidate WHERE ns = ?', [ns]);
    await waitFor('three more ticks', async () => {
      const [row] = await query<{ t: unknown }>(dataSources[0]!, 'SELECT last_heartbeat_at AS t FROM gemstone_election_candidate WHERE ns = ?', [ns]);
      return String(row!.t) !== String(before!.t);
    });
    await sleep(600);
    const service = new ElectionService(dataSources[0]);
    expect((await service.getLeader({ ns }))?.metadata).toEqual({ changed: 'behind its back' }); // heartbeats kept it

    await query(dataSources[0]!, 'DELETE FROM gemstone_election_candidate WHERE ns = ?', [ns]);
    await waitFor('the metadata restored', async () => (await service.getCandidates({ ns }))[0]?.metadata?.v === 1, 5_000);
    expect(e.isLeader).toBe(true);
  });

  test('an ineligible elector never leads, even alone, and observes the leader', async () => {
    const ns = freshNs();
    const watcher = elector(0, ns, { eligible: false, intervalMs: 200, expireSeconds: 3 });
    let elected = 0;
    watcher.on('elected', () => elected++);
    await watcher.start();
    await sleep(1_000);
    expect({ elected, isLeader: watcher.isLeader, leaderId: watcher.leaderId }).toEqual({ elected: 0, isLeader: false, leaderId: null });
    const worker = elector(1, ns, { intervalMs: 200, expireSeconds: 3 });
    await worker.start();
    expect(worker.isLeader).toBe(true);
    await waitFor('the watcher sees the leader', () => watcher.leaderId === worker.candidateId, 5_000);
    await worker.stop();
    await sleep(1_000);
    expect(elected).toBe(0);
  });

  test(`a leader hands over to a strictly higher priority (${TRIALS} trials), after its work stopped, and never gets it back`, async () => {
    const ns = freshNs();
    const took: number[] = [];
    const electedLog: Array<{ who: number; term: number }> = [];
    const reasons: DemotionReason[] = [];
    /** How much later than its schedule allows the acquiring tick of each trial ended (a loaded machine's timers and statements). */
    const lateBy: number[] = [];
    let stoppedWorkAt = 0;
    const track = (who: number, e: LeaderElector) => {
      e.on('elected', (lease: Lease) => electedLog.push({ who, term: lease.term }));
      e.on('demoted', (_lease, reason) => reasons.push(reason));
    };
    const onStoppedLeading = async () => {
      await sleep(150); // leader work winding down: the next leader must not start before it ends
      stoppedWorkAt = performance.now();
    };
    let current = elector(0, ns, { priority: 0, onStoppedLeading });
    track(0, current);
    await current.start();
    expect(current.isLeader).toBe(true);

    for (let trial = 1; trial <= TRIALS; trial++) {
      let startedLeadingAt = 0;
      const preferred = elector(trial, ns, {
        priority: trial,
        onStoppedLeading,
        onStartedLeading: () => {
          startedLeadingAt = performance.now();
        },
      });
      track(trial, preferred);
      // The preferred one's ticks: when each ended and how long its elect took.
      const ticks: Array<{ endedAt: number; durationMs: number; outcome: string }> = [];
      preferred.on('tick', (tick) => ticks.push({ endedAt: performance.now(), durationMs: tick.durationSeconds * 1000, outcome: tick.outcome }));
      const elected = new Promise<Lease>((resolve) => preferred.once('elected', resolve));
      const startedAt = performance.now();
      await preferred.start();
      expect(preferred.isLeader).toBe(false); // never preempted: the first elect only registered it
      const lease = await elected;
      expect(current.isLeader).toBe(false);
      expect(startedLeadingAt).toBeGreaterThanOrEqual(stoppedWorkAt); // the old leader's work had ended
      took.push(startedLeadingAt - stoppedWorkAt);
      // A tick starts at most 1.1 × interval after the previous one ended; what the acquiring one
      // took beyond that (its timer fired late, its elect was slow) is what the hand-over may be
      // late by. (PostgreSQL's NOTIFY may acquire before any tick: then nothing is added.)
      const acquiring = ticks.findIndex((t) => t.outcome === 'acquired');
      const [before, acquired] = [ticks[acquiring - 1], ticks[acquiring]];
      lateBy.push(before && acquired ? Math.max(0, acquired.endedAt - before.endedAt - INTERVAL * 1.1) : 0);
      // The old leader's next tick (≤ 1.1 × interval) decides; then one NOTIFY or one tick of the new one.
      expect(performance.now() - startedAt).toBeLessThan(INTERVAL * 1.1 * 2 + 150 + 2_000);
      expect(lease.term).toBe(trial + 1);
      current = preferred;
    }
    // Several ticks later: nothing moved back.
    await sleep(INTERVAL * 3);
    expect(electedLog).toEqual(Array.from({ length: TRIALS + 1 }, (_, i) => ({ who: i, term: i + 1 })));
    expect(reasons).toEqual(Array(TRIALS).fill('handed-over'));
    expect(current.isLeader).toBe(true);
    const history = await new ElectionService(dataSources[0]).getHistory({ ns });
    expect(history.map((entry) => [entry.term, entry.endReason])).toEqual([[TRIALS + 1, null], ...Array.from({ length: TRIALS }, (_, i) => [TRIALS - i, 'handed-over'])]);
    // eslint-disable-next-line no-console
    console.log(`[${db.name}] hand-over, old leader's work ended → new leader started: ${took.map((t) => t.toFixed(0)).join(', ')} ms (median ${median(took).toFixed(0)} ms, interval ${INTERVAL} ms)`);
    // At most the preferred one's next tick (PostgreSQL: the vacancy NOTIFY, usually sooner; the
    // test below tells the two apart). A median of half an interval was asserted here on
    // PostgreSQL, and a CI run under extra CPU load measured 974, 867 and 231 ms: not a bound
    // that tells a NOTIFY from a tick on a loaded machine.
    // A loaded machine (ci34: sqlite3, 2,281 ms) is allowed what its ticks measured it late by.
    took.forEach((t, i) => expect(t).toBeLessThan(INTERVAL * 1.1 + 1_000 + lateBy[i]!));
  });

  if (db.kind === 'postgres') {
    test('PostgreSQL: the preferred candidate takes a handed-over lease through the vacancy NOTIFY, before its own next tick', async () => {
      const ns = freshNs();
      // The leader ticks every second and hands over at its next tick; the preferred one ticks
      // every 5 s, so its next tick comes at least 4.5 s after its start: elected well before
      // that, it was the NOTIFY (its LISTEN connection is up when start() resolves).
      const slow = 5_000;
      const leader = elector(0, ns, { priority: 0, expireSeconds: 12, intervalMs: INTERVAL });
      await leader.start();
      expect(leader.isLeader).toBe(true);
      const preferred = elector(1, ns, { priority: 1, expireSeconds: 12, intervalMs: slow });
      const elected = new Promise<Lease>((resolve) => preferred.once('elected', resolve));
      const startedAt = performance.now();
      await preferred.start();
      expect(preferred.isLeader).toBe(false);
      const lease = await elected;
      const tookMs = performance.now() - startedAt;
      // The leader's next tick (≤ 1.1 s) decides and vacates; the NOTIFY and one elect follow.
      expect(tookMs).toBeLessThan(slow * (1 - 0.1) - 100);
      expect(lease.term).toBe(2);
      expect(leader.isLeader).toBe(false);
    });
  }

  test('equal priorities never hand over; a lower one joining changes nothing', async () => {
    const ns = freshNs();
    const a = elector(0, ns, { priority: 4, intervalMs: 200, expireSeconds: 3 });
    const b = elector(1, ns, { priority: 4, intervalMs: 200, expireSeconds: 3 });
    const c = elector(2, ns, { priority: 1, intervalMs: 200, expireSeconds: 3 });
    const demotions: string[] = [];
    for (const e of [a, b, c]) e.on('demoted', (_lease, reason) => demotions.push(reason));
    await a.start();
    await b.start();
    await c.start();
    await sleep(1_500);
    expect({ a: a.isLeader, b: b.isLeader, c: c.isLeader, term: a.term, demotions }).toEqual({ a: true, b: false, c: false, term: 1, demotions: [] });
  });
});
