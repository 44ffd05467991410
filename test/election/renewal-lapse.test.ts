/**
 * A renewal is decided by the database clock when it is written: a leader whose lease ran out
 * before its renewal lands gets a new term (term + 1), and the lapsed term's history row is closed
 * `expired` at its lease's end — on the one-statement paths and on the locked general path, where
 * the lease may run out between the locked read and the write.
 */
import type { DataSource, EntitySubscriberInterface } from 'typeorm';
import { ElectionService } from 'gemstone-utils';
import { describeEachDatabase, DbKind, inCallerTransaction, query, sleep, uuid } from '../support/databases';
import { ns as freshNs } from '../support/rows';

/** Lease short enough to wait out, long enough for a loaded machine. */
const LEASE = 1;

const DB_NOW: Record<DbKind, string> = {
  postgres: 'clock_timestamp()',
  mariadb: 'UTC_TIMESTAMP(6)',
  sqlite: "strftime('%Y-%m-%d %H:%M:%f', 'now')",
};

/** Waits until the database clock says the lease of `ns` has ended (decided by the database, not by a timer). */
async function untilLapsed(ds: DataSource, kind: DbKind, ns: string): Promise<void> {
  for (let i = 0; i < 400; i++) {
    const [row] = await query<{ lapsed: unknown }>(
      ds,
      `SELECT CASE WHEN lease_expires_at <= ${DB_NOW[kind]} THEN 1 ELSE 0 END AS lapsed FROM gemstone_election_leader WHERE ns = ?`,
      [ns],
    );
    if (Number(row?.lapsed) === 1) return;
    await sleep(25);
  }
  throw new Error(`the lease of ${ns} did not end by the database clock within 10 s`);
}

/**
 * better-sqlite3: the same wait, synchronously on the DataSource's own connection (its public
 * `databaseConnection`), for a query hook TypeORM 0.3's better-sqlite3 driver does not await.
 */
function untilLapsedSync(ds: DataSource, ns: string): void {
  const connection = (ds.driver as unknown as { databaseConnection: { prepare(text: string): { get(...params: unknown[]): { lapsed: number } | undefined } } }).databaseConnection;
  const read = connection.prepare(`SELECT CASE WHEN lease_expires_at <= ${DB_NOW.sqlite} THEN 1 ELSE 0 END AS lapsed FROM gemstone_election_leader WHERE ns = ?`);
  for (let i = 0; i < 400; i++) {
    if (Number(read.get(ns)?.lapsed) === 1) return;
    Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 25);
  }
  throw new Error(`the lease of ${ns} did not end by the database clock within 10 s`);
}

describeEachDatabase('a renewal after the lease ended', (db) => {
  let ds: DataSource;

  beforeAll(async () => {
    ds = await db.connect();
  });

  test('is a new term, and the lapsed term is closed `expired` at its lease end', async () => {
    const svc = new ElectionService(ds, { expireSeconds: LEASE });
    const ns = freshNs();
    const a = uuid();
    const first = await svc.electOutcome(a, { ns });
    expect(first).toMatchObject({ isLeader: true, acquired: true });
    // Renewals (on MariaDB the second one takes the one-statement path).
    for (let i = 0; i < 2; i++) expect(await svc.electOutcome(a, { ns })).toMatchObject({ isLeader: true, acquired: false, term: first.term });
    const lease = (await svc.getLeader({ ns }))!.leaseExpiresAt;
    await untilLapsed(ds, db.kind, ns);

    const renewed = await svc.electOutcome(a, { ns });
    expect(renewed).toMatchObject({ leaderId: a, isLeader: true, acquired: true, term: first.term + 1 });
    const history = await svc.getHistory({ ns });
    expect(history.map((e) => [e.term, e.leaderId, e.endReason])).toEqual([
      [first.term + 1, a, null],
      [first.term, a, 'expired'],
    ]);
    expect(history[1]!.endedAt!.getTime()).toBe(lease.getTime());
    // And the next call is a plain renewal of the new term.
    expect(await svc.electOutcome(a, { ns })).toMatchObject({ isLeader: true, acquired: false, term: first.term + 1 });
  });

  if (db.kind !== 'postgres') {
    // PostgreSQL decides and writes in one statement; elsewhere a caller's transaction takes the
    // locked path, whose renewal is written one statement after the locked read.
    test("in a caller's transaction, the lease running out between the locked read and the write", async () => {
      const svc = new ElectionService(ds, { expireSeconds: LEASE });
      const ns = freshNs();
      const a = uuid();
      const first = await svc.electOutcome(a, { ns });
      const lease = (await svc.getLeader({ ns }))!.leaseExpiresAt;

      // After the locked read (the one statement that reads the candidates' standing), the next
      // statement of the call waits until the database says the lease has ended. TypeORM 0.3's
      // better-sqlite3 driver does not await the hook, so on better-sqlite3 the hook blocks.
      const blocking = ds.options.type === 'better-sqlite3';
      let state: 'armed' | 'read' | 'waiting' | 'lapsed' = 'armed';
      let delayed = 0;
      let hookAwaited: boolean | undefined;
      const subscriber: EntitySubscriberInterface = {
        beforeQuery: (event: { query: string }) => {
          if (state === 'armed' && event.query.includes('rival_priority')) {
            state = 'read';
          } else if (state === 'read') {
            state = 'waiting';
            delayed++;
            if (blocking) {
              untilLapsedSync(ds, ns);
              state = 'lapsed';
              return undefined;
            }
            return untilLapsed(ds, db.kind, ns).then(() => {
              state = 'lapsed';
            });
          }
          return undefined;
        },
        afterQuery: (event: { query: string }) => {
          if (event.query.includes('AS lapsed')) return; // the hook's own reads
          if (hookAwaited === undefined && (state === 'waiting' || state === 'lapsed')) hookAwaited = state === 'lapsed';
        },
      };
      ds.subscribers.push(subscriber);
      let outcome;
      try {
        outcome = await inCallerTransaction(ds, (runner) => svc.electOutcome(a, { ns, session: runner }));
      } finally {
        ds.subscribers.splice(ds.subscribers.indexOf(subscriber), 1);
      }
      expect(delayed).toBe(1);
      // The delayed statement really ran after the lease's end.
      expect(hookAwaited).toBe(true);
      expect(outcome).toMatchObject({ leaderId: a, isLeader: true, acquired: true, term: first.term + 1 });
      // The database clock reported is one at which the answer holds: the new term exists from
      // the failed renewal on, after the lease's end, not at the locked read (when it was live).
      expect(outcome!.databaseNow.getTime()).toBeGreaterThanOrEqual(lease.getTime());
      const leader = await svc.getLeader({ ns });
      expect(leader).toMatchObject({ leaderId: a, term: first.term + 1 });
      const history = await svc.getHistory({ ns });
      expect(history.map((e) => [e.term, e.leaderId, e.endReason])).toEqual([
        [first.term + 1, a, null],
        [first.term, a, 'expired'],
      ]);
      expect(history[1]!.endedAt!.getTime()).toBe(lease.getTime());
    });
  }
});
