/**
 * MySQL/MariaDB connections whose session has autocommit off (a common pool setting): every
 * statement opens a transaction that stays open until COMMIT. Every library call works, its own
 * transactions start cleanly (no error 1568 from setting their isolation level), reads see the
 * newest committed state (not a snapshot someone left open on a pooled connection), and no call
 * returns a connection to the pool inside a transaction.
 */
import type { DataSource, DataSourceOptions } from 'typeorm';
import {
  ElectionService,
  initDb,
  LeaderElector,
  LeaderElectorGroup,
  pruneExpiredCandidates,
  pruneHistory,
  withTransaction,
} from 'gemstone-utils';
import { describeEachDatabase, inCallerTransaction, uuid } from '../support/databases';
import { onEveryNewConnection, pooledSessions } from '../support/mysql-sessions';
import { ns as freshNs } from '../support/rows';
import { waitFor } from '../elector/helpers';

const POOL = 3;
const AUTOCOMMIT_OFF = onEveryNewConnection([['SET SESSION autocommit = 0', []]]);

describeEachDatabase(
  'autocommit off on every connection',
  (db) => {
    let ds: DataSource;

    beforeAll(async () => {
      ds = await db.connect({ ...AUTOCOMMIT_OFF, poolSize: POOL } as Partial<DataSourceOptions>);
    });

    /** Every pooled connection still has autocommit off (the setting is really in force) and none is in a transaction. */
    async function expectCleanPool(after: string): Promise<void> {
      const sessions = await pooledSessions(ds, POOL);
      expect({ after, sessions }).toEqual({ after, sessions: sessions.map(() => ({ inTransaction: 0, autocommit: 0 })) });
    }

    test('every public operation works and leaves no pooled connection inside a transaction', async () => {
      const svc = new ElectionService(ds, { expireSeconds: 30 });
      const ns = freshNs();
      const [a, b] = [uuid(), uuid()];
      const steps: Array<[string, () => Promise<unknown>, unknown]> = [
        ['registerCandidate', () => svc.registerCandidate(a, { ns, metadata: { host: 'a' } }), undefined],
        ['elect (acquire)', () => svc.elect(a, { ns }), a],
        ['heartbeat', () => svc.heartbeat(b, { ns, priority: 1 }), undefined],
        ['elect (renew)', () => svc.electOutcome(a, { ns }).then((o) => [o.leaderId, o.term, o.acquired]), [a, 1, false]],
        ['elect (follower)', () => svc.elect(b, { ns }), a],
        ['isLeader', () => svc.isLeader(a, { ns }), true],
        ['listCandidates', () => svc.listCandidates({ ns }), [a, b].sort()],
        ['getCandidates', () => svc.getCandidates({ ns }).then((c) => c.map((x) => [x.candidateId, x.priority])), [a, b].sort().map((id) => [id, id === b ? 1 : 0])],
        ['getLeader', () => svc.getLeader({ ns }).then((l) => [l?.leaderId, l?.term, l?.metadata]), [a, 1, { host: 'a' }]],
        ['assertLeader (withTransaction)', () => withTransaction(ds, (m) => svc.assertLeader(a, { ns, session: m, term: 1 })).then((l) => l.term), 1],
        ['getHistory', () => svc.getHistory({ ns }).then((h) => h.map((e) => [e.term, e.leaderId, e.endReason])), [[1, a, null]]],
        [
          'watch (first item)',
          async () => {
            const watch = svc.watch({ ns, pollMs: 100 });
            const first = await watch.next();
            await watch.return();
            return [first.value?.leaderId, first.value?.term];
          },
          [a, 1],
        ],
        ['resign', () => svc.resign(a, { ns }), true],
        ['elect (other candidate takes over)', () => svc.electOutcome(b, { ns }).then((o) => [o.leaderId, o.term]), [b, 2]],
        ['handOver', () => svc.handOver(b, { ns }), true],
        ['unregisterCandidate', () => svc.unregisterCandidate(b, { ns }).then(() => svc.listCandidates({ ns })), [a]],
        ['elect with a session outside a transaction', () => inSessionWithoutTransaction((session) => svc.elect(a, { ns, session })), a],
        ['elect in a caller transaction', () => inCallerTransaction(ds, (runner) => svc.elect(a, { ns, session: runner })), a],
        ['pruneExpiredCandidates', () => pruneExpiredCandidates(ds, { retentionSeconds: 0 }), 0],
        ['pruneHistory', () => pruneHistory(ds, { retentionSeconds: 0 }), 2],
        ['initDb again', () => initDb(ds).then((d) => d === ds), true],
      ];
      for (const [name, step, expected] of steps) {
        expect({ name, result: await step() }).toEqual({ name, result: expected });
        await expectCleanPool(name);
      }
      expect((await svc.getHistory({ ns })).map((e) => [e.term, e.leaderId, e.endReason])).toEqual([[3, a, null]]);
    });

    /** A QueryRunner that the test connected but never started a transaction on. */
    async function inSessionWithoutTransaction<T>(work: (session: import('typeorm').QueryRunner) => Promise<T>): Promise<T> {
      const runner = ds.createQueryRunner();
      try {
        await runner.connect();
        return await work(runner);
      } finally {
        await runner.release();
      }
    }

    test('a snapshot the application left open on a pooled connection does not make library reads stale', async () => {
      const single = await db.connect({ ...AUTOCOMMIT_OFF, poolSize: 1 } as Partial<DataSourceOptions>);
      const svc = new ElectionService(single, { expireSeconds: 30 });
      const other = new ElectionService(ds, { expireSeconds: 30 });
      const ns = freshNs();
      const [a, b] = [uuid(), uuid()];
      await svc.elect(a, { ns });
      // TypeORM's own read outside a transaction: with autocommit off it opens one (REPEATABLE READ
      // snapshot) and the connection goes back to the pool inside it.
      await single.query('SELECT COUNT(*) AS n FROM gemstone_election_leader');
      expect((await pooledSessions(single, 1))[0]!.inTransaction).toBe(1);
      // Meanwhile another process takes the namespace over.
      await other.resign(a, { ns });
      await other.elect(b, { ns });
      expect(await svc.getLeader({ ns })).toMatchObject({ leaderId: b, term: 2 });
      expect(await svc.elect(a, { ns })).toBe(b);
      expect((await pooledSessions(single, 1))[0]!.inTransaction).toBe(0);
    });

    test('a LeaderElector acquires, renews and hands over', async () => {
      const ns = freshNs();
      const errors: unknown[] = [];
      const elector = new LeaderElector({ dataSource: ds, ns, expireSeconds: 3, intervalMs: 300 });
      elector.on('error', (error) => errors.push(error));
      await elector.start();
      try {
        expect(elector.isLeader).toBe(true);
        const term = elector.term;
        await new Promise((resolve) => setTimeout(resolve, 1_000));
        expect([elector.isLeader, elector.term]).toEqual([true, term]);
      } finally {
        await elector.stop();
      }
      expect(errors).toEqual([]);
      expect(await new ElectionService(ds).getLeader({ ns })).toBeNull();
      await expectCleanPool('LeaderElector');
    });

    test('a LeaderElectorGroup acquires all its namespaces and hands them over', async () => {
      const prefix = freshNs();
      const namespaces = [0, 1, 2, 3, 4].map((i) => `${prefix}-${i}`);
      const errors: unknown[] = [];
      const group = new LeaderElectorGroup({ dataSource: ds, namespaces, expireSeconds: 3, intervalMs: 300 });
      group.on('error', (error) => errors.push(error));
      await group.start();
      try {
        await waitFor('the group to lead every namespace', () => group.leases.size === namespaces.length, 10_000);
        const svc = new ElectionService(ds);
        for (const ns of namespaces) expect((await svc.getLeader({ ns }))?.leaderId).toBe(group.candidateId);
      } finally {
        await group.stop();
      }
      expect(errors).toEqual([]);
      await expectCleanPool('LeaderElectorGroup');
    });
  },
  { kinds: ['mariadb'] },
);

// eslint-disable-next-line @typescript-eslint/no-require-imports
const { startMariadb } = require('../../tools/private-db.js') as {
  startMariadb: (options?: { serverArgs?: string[] }) => Promise<{ url: string; stop: () => void }>;
};

describeEachDatabase(
  'a server started with --autocommit=0',
  () => {
    let server: { url: string; stop: () => void } | undefined;
    let ds: DataSource;

    beforeAll(async () => {
      server = await startMariadb({ serverArgs: ['--autocommit=0'] });
      ds = await initDb({ type: 'mysql', url: server.url, poolSize: POOL } as DataSourceOptions);
    }, 120_000);
    afterAll(async () => {
      if (ds?.isInitialized) await ds.destroy();
      server?.stop();
    });

    test('an elector and a group acquire their leases; no pooled connection is left inside a transaction', async () => {
      const sessions = await pooledSessions(ds, POOL);
      expect(sessions.map((s) => s.autocommit)).toEqual(sessions.map(() => 0));
      const ns = freshNs();
      const elector = new LeaderElector({ dataSource: ds, ns, expireSeconds: 3, intervalMs: 300 });
      const group = new LeaderElectorGroup({ dataSource: ds, namespaces: [`${ns}-g1`, `${ns}-g2`], expireSeconds: 3, intervalMs: 300 });
      const errors: unknown[] = [];
      elector.on('error', (error) => errors.push(error));
      group.on('error', (error) => errors.push(error));
      await elector.start();
      await group.start();
      try {
        expect(elector.isLeader).toBe(true);
        await waitFor('the group to lead both namespaces', () => group.leases.size === 2, 10_000);
        await new Promise((resolve) => setTimeout(resolve, 700));
        expect(elector.isLeader).toBe(true);
      } finally {
        await group.stop();
        await elector.stop();
      }
      expect(errors).toEqual([]);
      expect(await pooledSessions(ds, POOL)).toEqual(sessions.map(() => ({ inTransaction: 0, autocommit: 0 })));
    });
  },
  { kinds: ['mariadb'] },
);
