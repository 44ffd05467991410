/**
 * `ElectOutcome.wasRegistered` says whether the caller's candidate row existed when `elect`
 * wrote it, not when `elect` read it: a row deleted by a transaction that committed in between is
 * created again by the call, and the outcome must say so — a `LeaderElector` sends its metadata
 * with the next elect exactly when the last one created the row, so a wrong answer leaves the
 * recreated row without metadata for good.
 *
 * PostgreSQL's one-statement elect reads the candidates from the statement's snapshot; the race is
 * built with handshakes: a transaction holds the leader row, the elect is seen waiting for it
 * (pg_blocking_pids), the candidate row is deleted and committed, then the lock is released.
 */
import type { DataSource } from 'typeorm';
import { ElectionService, LeaderElector } from 'gemstone-utils';
import { describeEachDatabase, query, uuid } from '../support/databases';
import { ns as freshNs } from '../support/rows';
import { waitFor } from '../elector/helpers';

describeEachDatabase(
  'wasRegistered is told by the write',
  (db) => {
    let ds: DataSource;
    beforeAll(async () => {
      ds = await db.connect();
    });

    /** Runs `during` while `work` waits for the leader row of `ns`, locked by a transaction of the test's. */
    async function whileWaitingForTheLeaderRow<T>(ns: string, work: () => Promise<T>, during: () => Promise<void>): Promise<T> {
      const holder = ds.createQueryRunner();
      await holder.connect();
      try {
        await holder.startTransaction();
        const [{ pid }] = (await holder.query('SELECT pg_backend_pid() AS pid')) as Array<{ pid: number }>;
        await holder.query('SELECT 1 FROM gemstone_election_leader WHERE ns = $1 FOR UPDATE', [ns]);
        const pending = work();
        await waitFor('the elect waiting for the leader row', async () => {
          const rows = await query<{ n: string }>(ds, 'SELECT count(*) AS n FROM pg_stat_activity WHERE ? = ANY (pg_blocking_pids(pid))', [pid]);
          return Number(rows[0]?.n) > 0;
        });
        await during();
        await holder.commitTransaction();
        return await pending;
      } finally {
        if (holder.isTransactionActive) await holder.rollbackTransaction().catch(() => undefined);
        await holder.release();
      }
    }

    test('a candidate row deleted while elect waited: the outcome says the call created it', async () => {
      const ns = freshNs();
      const svc = new ElectionService(ds, { expireSeconds: 30 });
      const me = uuid();
      expect(await svc.electOutcome(me, { ns })).toMatchObject({ isLeader: true, wasRegistered: false });
      expect((await svc.electOutcome(me, { ns })).wasRegistered).toBe(true);
      const outcome = await whileWaitingForTheLeaderRow(
        ns,
        () => svc.electOutcome(me, { ns }),
        async () => {
          await query(ds, 'DELETE FROM gemstone_election_candidate WHERE ns = ? AND candidate_id = ?', [ns, me]);
        },
      );
      expect(outcome).toMatchObject({ isLeader: true, term: 1, wasRegistered: false });
      expect((await svc.getCandidates({ ns })).map((c) => c.candidateId)).toEqual([me]);
    });

    test("an elector whose row is deleted during a tick gets its metadata back on the next one", async () => {
      const ns = freshNs();
      const elector = new LeaderElector({ dataSource: ds, ns, expireSeconds: 30, intervalMs: 200, metadata: { v: 1 }, logger: { error: () => undefined } });
      try {
        await elector.start();
        expect(elector.isLeader).toBe(true);
        const svc = new ElectionService(ds);
        // A tick that waits for the leader row while the row is deleted, then recreates it without metadata.
        await whileWaitingForTheLeaderRow(
          ns,
          () => new Promise<void>((resolve) => elector.once('tick', () => resolve())),
          async () => {
            await query(ds, 'DELETE FROM gemstone_election_candidate WHERE ns = ?', [ns]);
          },
        );
        await waitFor('the metadata restored', async () => (await svc.getCandidates({ ns }))[0]?.metadata?.v === 1, 5_000);
      } finally {
        await elector.stop();
      }
    });
  },
  { kinds: ['postgres'] },
);
