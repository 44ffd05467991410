/**
 * A call that waited for the leader row's lock while a lease ran out decides by the database
 * clock of after its wait, against the row as the lock holder left it: the lapsed lease is over.
 * MySQL/MariaDB fix a statement's `UTC_TIMESTAMP(6)` when it starts, so a statement that judged
 * the lease and waited for the lock in one would judge it by the clock of before its wait.
 *
 * The lock is held by an application transaction (another candidate's `elect` with a session, or
 * a fenced transaction) until the database clock says the lease has ended; then it commits.
 */
import type { DataSource, QueryRunner } from 'typeorm';
import { ElectionService, NotLeaderError, withTransaction } from 'gemstone-utils';
import { describeEachDatabase, DbKind, query, sleep, uuid } from '../support/databases';
import { ns as freshNs } from '../support/rows';
import { collect } from './watch-support';

/** Long enough that a call started right after the lock was taken starts well before the lease ends. */
const LEASE = 2;

const DB_NOW: Record<DbKind, string> = {
  postgres: 'clock_timestamp()',
  mariadb: 'UTC_TIMESTAMP(6)',
  sqlite: "strftime('%Y-%m-%d %H:%M:%f', 'now')",
};

/** Waits until the database clock says the lease of `ns` has ended (a plain read: it never waits for the lock). */
async function untilLapsed(ds: DataSource, kind: DbKind, ns: string): Promise<void> {
  for (let i = 0; i < 800; i++) {
    const [row] = await query<{ lapsed: unknown }>(
      ds,
      `SELECT CASE WHEN lease_expires_at <= ${DB_NOW[kind]} THEN 1 ELSE 0 END AS lapsed FROM gemstone_election_leader WHERE ns = ?`,
      [ns],
    );
    if (Number(row?.lapsed) === 1) return;
    await sleep(25);
  }
  throw new Error(`the lease of ${ns} did not end by the database clock within 20 s`);
}

/** Whether `promise` is still pending after `ms`. */
async function pendingAfter(promise: Promise<unknown>, ms: number): Promise<boolean> {
  let settled = false;
  void promise.then(
    () => (settled = true),
    () => (settled = true),
  );
  await sleep(ms);
  return !settled;
}

/**
 * Opens an application transaction, runs `lock` in it (which takes the leader row's lock), starts
 * `call` (which must wait for that lock), keeps the transaction open until the lease of `ns` has
 * ended by the database clock, then commits. Returns what `call` returned, and whether it was
 * still waiting just before the commit.
 */
async function heldPastLease<T>(
  ds: DataSource,
  kind: DbKind,
  ns: string,
  lock: (runner: QueryRunner) => Promise<unknown>,
  call: () => Promise<T>,
): Promise<{ result: T; waited: boolean }> {
  const runner = ds.createQueryRunner();
  let pending: Promise<T> | undefined;
  let waited = false;
  try {
    await runner.startTransaction();
    await lock(runner);
    pending = call();
    pending.catch(() => undefined);
    await untilLapsed(ds, kind, ns);
    waited = await pendingAfter(pending, 100);
    await runner.commitTransaction();
  } catch (error) {
    if (runner.isTransactionActive) await runner.rollbackTransaction();
    throw error;
  } finally {
    await runner.release();
  }
  return { result: await pending, waited };
}

describeEachDatabase(
  "a call that waited for the leader row's lock past the lease's end",
  (db) => {
    let ds: DataSource;
    let svc: ElectionService;

    beforeAll(async () => {
      ds = await db.connect();
      svc = new ElectionService(ds, { expireSeconds: LEASE });
    });

    test("the holder's renewal is a takeover: term + 1, the lapsed term closed `expired` at its lease's end; watch and getLeader agree", async () => {
      const ns = freshNs();
      const [a, b] = [uuid(), uuid()];
      const first = await svc.electOutcome(a, { ns });
      expect(first).toMatchObject({ leaderId: a, acquired: true });
      // A renewal, so that a path keyed on "this process last saw a renew" is armed.
      const renewed = await svc.electOutcome(a, { ns });
      expect(renewed).toMatchObject({ leaderId: a, acquired: false, term: first.term });
      const lease = (await svc.getLeader({ ns }))!.leaseExpiresAt;
      const controller = new AbortController();
      const watched = collect(svc.watch({ ns, signal: controller.signal, pollMs: 100 }));
      try {
        await watched.waitForState(a, first.term);
        const { result, waited } = await heldPastLease(
          ds,
          db.kind,
          ns,
          (runner) => svc.elect(b, { ns, session: runner }),
          () => svc.electOutcome(a, { ns }),
        );
        expect(waited).toBe(true);
        expect(result).toMatchObject({ leaderId: a, isLeader: true, acquired: true, term: first.term + 1 });
        expect(await svc.getLeader({ ns })).toMatchObject({ leaderId: a, term: first.term + 1 });
        const history = await svc.getHistory({ ns });
        expect(history.map((e) => [e.term, e.leaderId, e.endReason])).toEqual([
          [first.term + 1, a, null],
          [first.term, a, 'expired'],
        ]);
        expect(history[1]!.endedAt!.getTime()).toBe(lease.getTime());
        await watched.waitForState(a, first.term + 1);
        const last = watched.changes[watched.changes.length - 1]!;
        expect([last.leaderId, last.term]).toEqual([a, first.term + 1]);
      } finally {
        controller.abort();
        await watched.ended;
      }
    });

    test("another candidate's elect that waited takes the lapsed lease; one that did not wait reports the live leader", async () => {
      const ns = freshNs();
      const [a, b, c] = [uuid(), uuid(), uuid()];
      const first = await svc.electOutcome(a, { ns });
      const lease = (await svc.getLeader({ ns }))!.leaseExpiresAt;
      await svc.registerCandidate(b, { ns });
      const { result, waited } = await heldPastLease(
        ds,
        db.kind,
        ns,
        (runner) => svc.elect(c, { ns, session: runner }),
        () => svc.electOutcome(b, { ns }),
      );
      if (waited) {
        // Decided after the lease had ended: a takeover.
        expect(result).toMatchObject({ leaderId: b, isLeader: true, acquired: true, term: first.term + 1 });
        const history = await svc.getHistory({ ns });
        expect(history.map((e) => [e.term, e.leaderId, e.endReason])).toEqual([
          [first.term + 1, b, null],
          [first.term, a, 'expired'],
        ]);
        expect(history[1]!.endedAt!.getTime()).toBe(lease.getTime());
      } else {
        // Decided before the lock was released, by a read that waits for nothing: the lease was
        // live by the clock it reports.
        expect(result).toMatchObject({ leaderId: a, isLeader: false, acquired: false, term: first.term });
        expect(result.databaseNow.getTime()).toBeLessThan(lease.getTime());
      }
    });

    test("the leader's fenced transaction that waited is refused: NotLeaderError", async () => {
      const ns = freshNs();
      const [a, b] = [uuid(), uuid()];
      const first = await svc.electOutcome(a, { ns });
      // withTransaction: on SQLite it waits for the holder's transaction on the shared connection.
      const fenced = () => withTransaction(ds, (manager) => svc.assertLeader(a, { ns, session: manager, term: first.term }), { conflictRetries: 0 });
      const outcome = heldPastLease(ds, db.kind, ns, (runner) => svc.elect(b, { ns, session: runner }), fenced);
      await expect(outcome).rejects.toBeInstanceOf(NotLeaderError);
      await expect(outcome).rejects.toMatchObject({ leaderId: null, term: first.term });
    });

    test('a resignation that waited finds the lease lapsed: false, and the term closed `expired` at its lease end', async () => {
      const ns = freshNs();
      const [a, b] = [uuid(), uuid()];
      const first = await svc.electOutcome(a, { ns });
      const lease = (await svc.getLeader({ ns }))!.leaseExpiresAt;
      const { result, waited } = await heldPastLease(
        ds,
        db.kind,
        ns,
        (runner) => svc.elect(b, { ns, session: runner }),
        () => svc.resign(a, { ns }),
      );
      expect(waited).toBe(true);
      expect(result).toBe(false);
      const history = await svc.getHistory({ ns });
      expect(history.map((e) => [e.term, e.leaderId, e.endReason])).toEqual([[first.term, a, 'expired']]);
      expect(history[0]!.endedAt!.getTime()).toBe(lease.getTime());
    });
  },
  { sharedOnly: true },
);
