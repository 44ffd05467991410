/**
 * PostgreSQL's one-statement `elect` that waits for the leader row's lock while another
 * transaction takes the lease over, and finds that new term's lease already lapsed when the lock
 * is granted: it must take over as the locked path does — term + 1, and the lapsed term closed
 * `expired` at its lease's end — never leave that term open beside the new one.
 *
 * The interleaving is built with handshakes, not sleeps: B takes the lease in a transaction held
 * open; C's elect is seen waiting for B's lock (pg_blocking_pids); B's lease runs out by the
 * database clock inside that transaction; then B commits and C's elect goes on. A watch whose
 * only pooled connection is held meanwhile reads nothing during the race, so what it yields for
 * terms 2 and 3 comes from the history table. (A follower of a live lease outside a transaction
 * does not lock the row, so it never waits: the vacancy case runs in the caller's transaction.)
 */
import type { DataSource, QueryRunner } from 'typeorm';
import { ElectionService, type ElectOutcome } from 'gemstone-utils';
import { describeEachDatabase, inCallerTransaction, query, uuid } from '../support/databases';
import { ns as freshNs } from '../support/rows';
import { waitFor } from '../elector/helpers';
import { collect } from './watch-support';

const LEASE = 1;

describeEachDatabase(
  'elect after waiting for a takeover that lapsed meanwhile',
  (db) => {
    let ds: DataSource;
    let watchDs: DataSource;
    const open: QueryRunner[] = [];

    beforeAll(async () => {
      ds = await db.connect();
      // One pooled connection: holding it stops the watch from reading.
      watchDs = await db.connect({ extra: { max: 1 } } as never);
    });
    afterEach(async () => {
      for (const runner of open.splice(0)) {
        if (runner.isTransactionActive) await runner.rollbackTransaction().catch(() => undefined);
        if (!runner.isReleased) await runner.release();
      }
    });

    const lapsed = async (runner: QueryRunner, ns: string) =>
      (await runner.query('SELECT lease_expires_at <= clock_timestamp() AS lapsed FROM gemstone_election_leader WHERE ns = $1', [ns]))[0]?.lapsed === true;

    for (const where of ['without a session', "in the caller's transaction"] as const) {
      test(`${where}: the lapsed term is closed expired at its lease end, one term open, the watch sees the vacancy`, async () => {
        const svc = new ElectionService(ds, { expireSeconds: LEASE });
        const ns = freshNs();
        const [a, b, c] = [uuid(), uuid(), uuid()];
        expect(await svc.electOutcome(a, { ns })).toMatchObject({ leaderId: a, term: 1, acquired: true });

        const abort = new AbortController();
        const watch = collect(new ElectionService(watchDs).watch({ ns, signal: abort.signal, pollMs: 60_000 }));
        try {
          await watch.waitForState(a, 1);
          await watch.waitForState(null, 1); // A's lease ran out
          const blocker = watchDs.createQueryRunner();
          open.push(blocker);
          await blocker.connect();

          // B takes the lapsed lease in a transaction it keeps open: term 2, locked.
          const holder = ds.createQueryRunner();
          open.push(holder);
          await holder.connect();
          await holder.startTransaction();
          expect(await svc.electOutcome(b, { ns, session: holder })).toMatchObject({ leaderId: b, term: 2, acquired: true });
          const [{ pid }] = (await holder.query('SELECT pg_backend_pid() AS pid')) as Array<{ pid: number }>;

          // C's elect starts (its statement's snapshot shows term 1) and waits for B's lock.
          const electing: Promise<ElectOutcome> =
            where === 'without a session'
              ? svc.electOutcome(c, { ns })
              : inCallerTransaction(ds, (runner) => svc.electOutcome(c, { ns, session: runner }));
          electing.catch(() => undefined);
          await waitFor(
            "C's elect to wait for B's lock",
            async () => Number((await query<{ n: string }>(ds, 'SELECT count(*) AS n FROM pg_stat_activity WHERE ? = ANY (pg_blocking_pids(pid))', [pid]))[0]?.n) > 0,
            10_000,
          );
          // B's lease runs out (database clock) before B commits.
          await waitFor("B's lease to run out", () => lapsed(holder, ns), 10_000, 25);
          const [{ lease }] = (await holder.query('SELECT CAST(lease_expires_at AS text) AS lease FROM gemstone_election_leader WHERE ns = $1', [ns])) as Array<{ lease: string }>;
          await holder.commitTransaction();

          const outcome = await electing;
          expect(outcome).toMatchObject({ leaderId: c, term: 3, isLeader: true, acquired: true });
          const history = await svc.getHistory({ ns });
          expect(history.map((e) => [e.term, e.leaderId, e.endReason])).toEqual([
            [3, c, null],
            [2, b, 'expired'],
            [1, a, 'expired'],
          ]);
          expect(history.filter((e) => e.endedAt === null)).toHaveLength(1);
          const [ended] = await query<{ at: string }>(ds, 'SELECT CAST(ended_at AS text) AS at FROM gemstone_election_history WHERE ns = ? AND term = 2', [ns]);
          expect(ended?.at).toBe(lease);
          expect(await svc.getLeader({ ns })).toMatchObject({ leaderId: c, term: 3 });

          await blocker.release();
          await watch.waitForState(c, 3);
          expect(watch.states()).toEqual([
            [a, 1],
            [null, 1],
            [b, 2],
            [null, 2],
            [c, 3],
          ]);
        } finally {
          abort.abort();
          await watch.ended;
        }
      }, 60_000);
    }

    test("in the caller's transaction, a vacancy committed while it waited is decided on the candidates as they are after it; without a session it did not wait", async () => {
      const svc = new ElectionService(ds, { expireSeconds: 30 });
      const ns = freshNs();
      const [r, c] = [uuid(), uuid()];
      expect(await svc.electOutcome(r, { ns, priority: 10 })).toMatchObject({ leaderId: r, term: 1 });
      await svc.registerCandidate(c, { ns });

      // The preferred leader unregisters (vacates and deletes its candidate row) in a transaction
      // held open while C's elect waits for its lock.
      const holder = ds.createQueryRunner();
      open.push(holder);
      await holder.connect();
      await holder.startTransaction();
      await svc.unregisterCandidate(r, { ns, session: holder });
      const [{ pid }] = (await holder.query('SELECT pg_backend_pid() AS pid')) as Array<{ pid: number }>;
      // Outside a transaction C follows the lease its statement's snapshot shows, which R still
      // holds (its vacancy is not committed): no lock, so no wait.
      expect(await svc.electOutcome(c, { ns })).toMatchObject({ leaderId: r, term: 1, isLeader: false });
      // In a transaction of the caller's, C's statement locks the row, so it waits.
      const electing = inCallerTransaction(ds, (runner) => svc.electOutcome(c, { ns, session: runner }));
      electing.catch(() => undefined);
      await waitFor(
        "C's elect to wait for the lock",
        async () => Number((await query<{ n: string }>(ds, 'SELECT count(*) AS n FROM pg_stat_activity WHERE ? = ANY (pg_blocking_pids(pid))', [pid]))[0]?.n) > 0,
        10_000,
      );
      await holder.commitTransaction();

      // Nobody outranks C any more: it takes the vacant lease, as an elect started now would.
      expect(await electing).toMatchObject({ leaderId: c, term: 2, isLeader: true, acquired: true });
      const history = await svc.getHistory({ ns });
      expect(history.map((e) => [e.term, e.leaderId, e.endReason])).toEqual([
        [2, c, null],
        [1, r, 'unregistered'],
      ]);
    });
  },
  { kinds: ['postgres'] },
);
