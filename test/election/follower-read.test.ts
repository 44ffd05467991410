/**
 * A follower's `elect` outside a transaction of the caller's never waits for the leader row's
 * lock: PostgreSQL answers it from its one statement's snapshot, MySQL/MariaDB from a plain read
 * first. (SQLite has one write lock for the whole database, which every heartbeat takes.)
 *
 * The lock is held by an application transaction in which the leader renewed (`elect` with a
 * session), or by the leader's fenced transaction (`assertLeader`). The follower's call must return the live leader while that transaction is still open;
 * the call inside a transaction of its own caller still locks, and so waits.
 */
import type { DataSource, QueryRunner } from 'typeorm';
import { ElectionService } from 'gemstone-utils';
import { describeEachDatabase, inCallerTransaction, query, uuid } from '../support/databases';
import { ns as freshNs } from '../support/rows';

/** Far longer than a follower's call takes, even on a loaded machine. */
const LEASE = 60;

/** Settles within `ms`, or reports that it did not. */
async function settlesWithin<T>(promise: Promise<T>, ms: number): Promise<{ settled: true; value: T } | { settled: false }> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<{ settled: false }>((resolve) => (timer = setTimeout(() => resolve({ settled: false }), ms)));
  try {
    return await Promise.race([promise.then((value) => ({ settled: true as const, value })), timeout]);
  } finally {
    clearTimeout(timer);
  }
}

describeEachDatabase(
  "a follower's elect and the leader row's lock",
  (db) => {
    let ds: DataSource;
    let svc: ElectionService;

    beforeAll(async () => {
      ds = await db.connect();
      svc = new ElectionService(ds, { expireSeconds: LEASE });
    });

    /** Runs `body` while a transaction of the caller's, in which `lock` ran, holds the leader row's lock. */
    function whileLocked(lock: (runner: QueryRunner) => Promise<unknown>, body: () => Promise<void>): Promise<void> {
      return inCallerTransaction(ds, async (runner) => {
        await lock(runner);
        await body();
      });
    }

    /** The leader's renewal in a transaction of the caller's. */
    const renewedIn = (ns: string, leader: string) => async (runner: QueryRunner) =>
      expect(await svc.electOutcome(leader, { ns, session: runner })).toMatchObject({ leaderId: leader, isLeader: true });

    test('returns the live leader and its term while the lock is held, and heartbeats (a new candidate is registered)', async () => {
      const ns = freshNs();
      const [a, b, c] = [uuid(), uuid(), uuid()];
      const first = await svc.electOutcome(a, { ns });
      await svc.registerCandidate(b, { ns });
      await whileLocked(renewedIn(ns, a), async () => {
        // A registered follower and a candidate the namespace has not seen yet.
        for (const [id, registered] of [
          [b, true],
          [c, false],
        ] as const) {
          const answer = await settlesWithin(svc.electOutcome(id, { ns }), 10_000);
          expect(answer.settled).toBe(true);
          if (!answer.settled) return;
          expect(answer.value).toMatchObject({ leaderId: a, term: first.term, isLeader: false, acquired: false, handOver: false, wasRegistered: registered });
        }
        // The heartbeats are committed (autocommit), not waiting behind the lock.
        const rows = await query<{ candidate_id: string }>(
          ds,
          'SELECT candidate_id FROM gemstone_election_candidate WHERE ns = ? AND candidate_id IN (?, ?) ORDER BY candidate_id',
          [ns, b, c],
        );
        expect(rows.map((r) => r.candidate_id)).toEqual([b, c].sort());
      });
      expect(await svc.getLeader({ ns })).toMatchObject({ leaderId: a, term: first.term });
    });

    test("does not wait for the leader's fenced transaction (assertLeader's lock held until it commits)", async () => {
      const ns = freshNs();
      const [a, b] = [uuid(), uuid()];
      const first = await svc.electOutcome(a, { ns });
      await whileLocked(
        (runner) => svc.assertLeader(a, { ns, session: runner, term: first.term }),
        async () => {
          const answer = await settlesWithin(svc.electOutcome(b, { ns }), 10_000);
          expect(answer.settled).toBe(true);
          if (answer.settled) expect(answer.value).toMatchObject({ leaderId: a, term: first.term, isLeader: false });
        },
      );
    });

    test('the database clock it answers with is read after the call began and before it returned', async () => {
      const ns = freshNs();
      const [a, b] = [uuid(), uuid()];
      await svc.electOutcome(a, { ns });
      // Epoch milliseconds by the database's clock.
      const clock = db.kind === 'postgres' ? 'EXTRACT(EPOCH FROM clock_timestamp()) * 1000' : 'UNIX_TIMESTAMP(NOW(6)) * 1000';
      const [before] = await query<{ t: unknown }>(ds, `SELECT ${clock} AS t`);
      const outcome = await svc.electOutcome(b, { ns });
      const [after] = await query<{ t: unknown }>(ds, `SELECT ${clock} AS t`);
      expect(outcome).toMatchObject({ leaderId: a, isLeader: false });
      // Millisecond rounding on either side.
      expect(outcome.databaseNow.getTime()).toBeGreaterThanOrEqual(Number(before!.t) - 1);
      expect(outcome.databaseNow.getTime()).toBeLessThanOrEqual(Number(after!.t) + 1);
    });

    test("inside the caller's transaction a follower still takes the lock, and so waits for it", async () => {
      const ns = freshNs();
      const [a, b] = [uuid(), uuid()];
      const first = await svc.electOutcome(a, { ns });
      let pending: Promise<unknown> | undefined;
      await whileLocked(renewedIn(ns, a), async () => {
        pending = inCallerTransaction(ds, (other) => svc.electOutcome(b, { ns, session: other }));
        pending.catch(() => undefined);
        expect((await settlesWithin(pending, 1_500)).settled).toBe(false);
      });
      expect(await pending).toMatchObject({ leaderId: a, term: first.term, isLeader: false });
    });
  },
  { kinds: ['postgres', 'mariadb'] },
);
