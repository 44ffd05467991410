/**
 * MariaDB Galera: a private 3-node cluster (tools/galera.js) on loopback ports of its own.
 *
 * 1. The tight race: fenced transactions (`assertLeader` + a ledger insert) on node 0 against a
 *    takeover `elect` on node 1, the moment the lease runs out. Without the leader-row write in
 *    `assertLeader`, the takeover's write set aborts a fenced transaction that is committing,
 *    Galera replays it, and it passes certification after the takeover (it wrote only the
 *    ledger): a stale commit in about one trial in six.
 * 2. Electors spread over the three nodes (one DataSource each): one leader at a time, hand-over,
 *    and fenced writes — also from writers on the other nodes that keep using a term after it
 *    ended — with zero stale writes over many takeovers.
 *
 * Stale is judged in the cluster's total order, replayed from a node's binary log
 * (`galera-support.ts`). GEMSTONE_HA_FULL=1 runs the long versions.
 */
import { randomUUID } from 'crypto';
import type { DataSource, QueryRunner } from 'typeorm';
import { ElectionService, LeaderElector, NotLeaderError, SerializationFailureError, withTransaction, type Lease } from 'gemstone-utils';
import { checkHistory, FULL, galera, GaleraCluster, LEDGER_DDL, LEDGER_INSERT, nodeDataSource, report, sleep, statusOf } from './galera-support';

const RACE_TRIALS = FULL ? 200 : 40;
const RACE_WRITERS = 6;
const RACE_LEASE_S = 0.3;
const TAKEOVERS = FULL ? 200 : 40;

/** What a fenced transaction may end in on Galera besides a commit. */
function conflictKind(error: unknown): 'not-leader' | 'serialization' | 'deadlock-at-commit' | undefined {
  if (error instanceof NotLeaderError) return 'not-leader';
  if (error instanceof SerializationFailureError) return 'serialization';
  const errno = (error as { driverError?: { errno?: number } }).driverError?.errno;
  return errno === 1213 ? 'deadlock-at-commit' : undefined;
}

let cluster: GaleraCluster | undefined;
const dataSources: DataSource[] = [];
let startedInMs = 0;

beforeAll(async () => {
  const started = performance.now();
  cluster = await galera.startGalera({ nodes: 3, binlog: true });
  startedInMs = Math.round(performance.now() - started);
  for (const node of cluster.nodes) dataSources.push(await nodeDataSource(node, 12));
  await dataSources[0].query(LEDGER_DDL);
}, 240_000);

afterAll(async () => {
  for (const dataSource of dataSources) await dataSource.destroy().catch(() => undefined);
  cluster?.stop();
}, 120_000);

test('the cluster: three synced nodes, each seeing the others\' writes', async () => {
  expect(await statusOf(dataSources[0], 'wsrep_cluster_size')).toBe(3);
  const ns = `probe-${randomUUID()}`;
  await new ElectionService(dataSources[1]).elect(randomUUID(), { ns });
  await dataSources[2].query('SET SESSION wsrep_sync_wait = 1');
  const rows = (await dataSources[2].query('SELECT term FROM gemstone_election_leader WHERE ns = ?', [ns])) as Array<{ term: string }>;
  expect(rows.map((r) => Number(r.term))).toEqual([1]);
  report('Galera cluster started', { ms: startedInMs });
});

test(
  `tight race, ${RACE_TRIALS} trials: a fenced transaction on one node never commits after a takeover on another`,
  async () => {
    const [nodeA, nodeB, observer] = dataSources;
    const electionA = new ElectionService(nodeA, { expireSeconds: RACE_LEASE_S });
    const electionB = new ElectionService(nodeB, { expireSeconds: RACE_LEASE_S });
    const outcomes = { commits: 0, 'not-leader': 0, serialization: 0, 'deadlock-at-commit': 0 };
    const unexpected: unknown[] = [];
    const replaysBefore = await statusOf(nodeA, 'wsrep_local_replays');
    const namespaces: string[] = [];
    const started = performance.now();

    for (let trial = 0; trial < RACE_TRIALS; trial++) {
      const ns = `race-${trial}-${randomUUID().slice(0, 8)}`;
      namespaces.push(ns);
      const a = randomUUID();
      const b = randomUUID();
      // The term from the election itself: a read after it can find the 0.3 s lease already
      // lapsed on a loaded machine (getLeader answered null once, test:ha beside the 0.3 run).
      const { term, leaderId } = await electionA.electOutcome(a, { ns });
      expect(leaderId).toBe(a);

      // Node A: fenced transactions back to back (the caller's own transactions) until the lease
      // is gone. Node B: elect until it takes over.
      const writer = async () => {
        const runner: QueryRunner = nodeA.createQueryRunner();
        try {
          for (;;) {
            await runner.startTransaction();
            try {
              await electionA.assertLeader(a, { ns, term, session: runner });
              await runner.query(LEDGER_INSERT, [ns, term, a]);
              await runner.commitTransaction();
              outcomes.commits++;
            } catch (error) {
              if (runner.isTransactionActive) await runner.rollbackTransaction().catch(() => undefined);
              const kind = conflictKind(error);
              if (kind) outcomes[kind]++;
              else unexpected.push(error);
              if (kind !== 'serialization' && kind !== 'deadlock-at-commit') return;
            }
          }
        } finally {
          await runner.release();
        }
      };
      const taker = async () => {
        for (let i = 0; (await electionB.elect(b, { ns })) !== b; i++) {
          if (i > 10_000) throw new Error(`${ns}: node B never took over`);
        }
      };
      await Promise.all([...Array.from({ length: RACE_WRITERS }, writer), taker()]);
    }

    const elapsedMs = Math.round(performance.now() - started);
    const replays = (await statusOf(nodeA, 'wsrep_local_replays')) - replaysBefore;
    await observer.query('SET SESSION wsrep_sync_wait = 1'); // the observer has applied everything
    const history = await checkHistory(observer);
    const raced = history.stale.filter((w) => namespaces.includes(w.ns));
    report('Galera tight race', { trials: RACE_TRIALS, writersPerTrial: RACE_WRITERS, elapsedMs, replays, outcomes, stale: raced.length });

    expect(unexpected).toEqual([]);
    // Every trial shows both grants in the log, so the history is complete.
    for (const ns of namespaces) expect(history.grants.get(ns)?.map((g) => g.term)).toEqual([1, 2]);
    expect(outcomes.commits).toBeGreaterThan(RACE_TRIALS);
    expect(raced).toEqual([]);
  },
  (FULL ? 900 : 120) * 1000,
);

test(
  `electors on three nodes, ${TAKEOVERS} takeovers: one leader at a time, hand-over, no stale fenced write`,
  async () => {
    const ns = `electors-${randomUUID().slice(0, 8)}`;
    const expireSeconds = 1;
    const intervalMs = 150;
    const electors = dataSources.map(
      (dataSource) => new LeaderElector({ dataSource, ns, expireSeconds, intervalMs }),
    );
    const counts = { commits: 0, 'not-leader': 0, serialization: 0, 'deadlock-at-commit': 0 };
    const unexpected: unknown[] = [];
    const errors: unknown[] = [];
    for (const elector of electors) elector.on('error', (error) => errors.push(error));
    let running = true;
    let overlaps = 0;

    // One leader at a time, as the processes see it.
    const watcher = (async () => {
      while (running) {
        if (electors.filter((e) => e.isLeader).length > 1) overlaps++;
        await sleep(5);
      }
    })();

    /**
     * A fenced write with `lease`, through withTransaction (which retries certification failures),
     * on node `on` — the leader's own node or another one. True while the lease still holds.
     */
    const fencedWrite = async (lease: Lease, on: DataSource): Promise<boolean> => {
      const election = new ElectionService(on, { expireSeconds });
      try {
        await withTransaction(on, async (session) => {
          await election.assertLeader(lease.candidateId, { ns, term: lease.term, session });
          await session.query(LEDGER_INSERT, [ns, lease.term, lease.candidateId]);
        });
        counts.commits++;
        return true;
      } catch (error) {
        const kind = conflictKind(error);
        if (kind) counts[kind]++;
        else unexpected.push(error);
        return kind !== 'not-leader';
      }
    };

    // The leader writes continuously on its own node; each lease also gets a stubborn writer on
    // the next node that goes on writing with that term after the leadership ended, until it is
    // fenced off — racing the hand-over's vacancy and the next grant, which other nodes commit.
    const writers: Array<Promise<void>> = [];
    electors.forEach((elector, index) => {
      elector.on('elected', (lease: Lease) => {
        writers.push(
          (async () => {
            while (!lease.signal.aborted && running) await fencedWrite(lease, dataSources[index]);
          })(),
          (async () => {
            const other = dataSources[(index + 1) % dataSources.length];
            while (running && (await fencedWrite(lease, other)));
          })(),
        );
      });
    });

    const started = performance.now();
    for (const elector of electors) await elector.start();
    const handovers: number[] = [];
    try {
      for (let takeover = 0; takeover < TAKEOVERS; takeover++) {
        const leader = await waitForLeader(electors, 10_000);
        const from = performance.now();
        await sleep(20 + Math.random() * 60); // let the fenced writes run
        await leader.stop();
        const next = await waitForLeader(electors, 10_000);
        handovers.push(Math.round(performance.now() - from));
        expect(next).not.toBe(leader);
        await leader.start();
      }
    } finally {
      running = false;
      for (const elector of electors) await elector.stop();
      await watcher;
      await Promise.all(writers);
    }
    const elapsedMs = Math.round(performance.now() - started);

    await dataSources[2].query('SET SESSION wsrep_sync_wait = 1');
    const history = await checkHistory(dataSources[2]);
    const grants = history.grants.get(ns) ?? [];
    const stale = history.stale.filter((w) => w.ns === ns);
    handovers.sort((x, y) => x - y);
    report('Galera electors', {
      takeovers: TAKEOVERS,
      elapsedMs,
      grants: grants.length,
      handoverMedianMs: handovers[Math.floor(handovers.length / 2)],
      handoverMaxMs: handovers[handovers.length - 1],
      counts,
      overlaps,
      tickErrors: errors.length,
      stale: stale.length,
    });

    expect(unexpected).toEqual([]);
    expect(stale).toEqual([]);
    expect(overlaps).toBe(0);
    // Terms are granted one by one (each hand-over went to another elector: checked in the loop).
    expect(grants.map((g) => g.term)).toEqual(grants.map((_, i) => i + 1));
    expect(grants.length).toBeGreaterThanOrEqual(TAKEOVERS + 1);
    expect(counts.commits).toBeGreaterThan(TAKEOVERS);
    // Writers that kept a term after it ended were fenced off.
    expect(counts['not-leader']).toBeGreaterThanOrEqual(TAKEOVERS);
  },
  (FULL ? 900 : 120) * 1000,
);

async function waitForLeader(electors: LeaderElector[], limitMs: number): Promise<LeaderElector> {
  const until = performance.now() + limitMs;
  for (;;) {
    const leader = electors.find((e) => e.isLeader);
    if (leader) return leader;
    if (performance.now() > until) throw new Error(`no leader within ${limitMs} ms`);
    await sleep(5);
  }
}

test('a guarded table on the cluster: the guard replicates to every node; only a transaction that proved the live leadership writes it, on any node; after a takeover on another node the old leader\'s proved write fails', async () => {
  const [nodeA, nodeB, nodeC] = dataSources as [DataSource, DataSource, DataSource];
  const ns = `guard-${randomUUID().slice(0, 8)}`;
  const table = `guarded_${randomUUID().slice(0, 8)}`;
  const insert = `INSERT INTO ${table} (note) VALUES (?)`;
  await nodeA.query(`CREATE TABLE ${table} (id bigint AUTO_INCREMENT PRIMARY KEY, note varchar(40) NOT NULL) ENGINE=InnoDB`);
  const [a, b] = [randomUUID(), randomUUID()];
  const onA = new ElectionService(nodeA, { expireSeconds: 2 });
  await onA.guardTable(table, { ns });
  expect(await onA.elect(a, { ns })).toBe(a);
  // The triggers are DDL: replicated in the cluster's total order. Each node has them before it is asked.
  for (const node of [nodeB, nodeC]) {
    const deadline = performance.now() + 10_000;
    const triggers = async () => Number(((await node.query('SELECT COUNT(*) AS n FROM information_schema.TRIGGERS WHERE EVENT_OBJECT_SCHEMA = DATABASE() AND EVENT_OBJECT_TABLE = ?', [table])) as Array<{ n: string }>)[0]!.n);
    while ((await triggers()) < 3 && performance.now() < deadline) await sleep(50);
    expect(await triggers()).toBe(3);
    const refused = await node.query(insert, ['unproved']).catch((e: unknown) => e);
    expect((refused as { driverError?: { errno?: number } }).driverError?.errno).toBe(45001);
  }
  // The leader proves on another node than the one it was elected through (the leader row is the cluster's).
  await withTransaction(nodeB, async (m) => {
    await m.query('SET SESSION wsrep_sync_wait = 1');
    await new ElectionService(nodeB).assertLeader(a, { ns, session: m });
    await m.query(insert, ['proved on B']);
  });
  // The lease runs out; b takes over through node C; a's proved write on node A is then refused
  // (its fence reads the replicated row) or aborted by certification (its fence's write conflicts).
  await sleep(2_200);
  expect(await new ElectionService(nodeC, { expireSeconds: 2 }).elect(b, { ns })).toBe(b);
  const stale = await withTransaction(nodeA, async (m) => {
    await onA.assertLeader(a, { ns, session: m, term: 1 });
    await m.query(insert, ['stale on A']);
  }, { conflictRetries: 0 }).catch((e: unknown) => e);
  expect(stale instanceof NotLeaderError || conflictKind(stale) !== undefined).toBe(true);
  const notes = await withTransaction(nodeC, async (m) => {
    await m.query('SET SESSION wsrep_sync_wait = 1'); // reads after every write the cluster ordered before
    return ((await m.query(`SELECT note FROM ${table} ORDER BY id`)) as Array<{ note: string }>).map((r) => r.note);
  });
  expect(notes).toEqual(['proved on B']);
  report('Galera guarded table', { refusedOnOtherNodes: 2, stale: stale instanceof NotLeaderError ? 'NotLeaderError' : conflictKind(stale) });
});
