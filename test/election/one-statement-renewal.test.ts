/**
 * MariaDB and PostgreSQL: a leader's renewal in one statement of its own (`databases/mysql/renew.ts`,
 * `databases/postgres/renew.ts`). It must answer and write exactly what the locked path does, and
 * leave to the general path (MariaDB: the locked transaction; PostgreSQL: the whole `elect` in one
 * statement) every case it cannot decide alone: an outranked or ineligible leader (told to hand
 * over), a lease that could end before its row is read (MariaDB), a row locked elsewhere until
 * after the lease's end. The differential runs compare it with the reference model on generated
 * schedules; these are the cases named one by one.
 */
import type { DataSource } from 'typeorm';
import { ElectionService } from 'gemstone-utils';
import { forceLockedElect } from '../../dist/src/election/paths';
import { describeEachDatabase, query, sleep, uuid } from '../support/databases';
import { ns as freshNs } from '../support/rows';
import { QueryLog } from '../db/support/query-log';

type Kind = 'mariadb' | 'postgres';

/** The renewal statement's text, by database. */
const ONE_STATEMENTS: Record<Kind, RegExp> = {
  mariadb: /^SET STATEMENT innodb_lock_wait_timeout = 0, lock_wait_timeout = 0 FOR\s+UPDATE/,
  postgres: /^WITH locked AS \(\s+SELECT ns, lease_expires_at FROM/,
};
/** The lease's end moved to `seconds` from now by the database clock (negative: in the past). */
const LEASE_IN: Record<Kind, (seconds: number) => string> = {
  mariadb: (seconds) => `UPDATE gemstone_election_leader SET lease_expires_at = UTC_TIMESTAMP(6) + INTERVAL ${seconds} SECOND WHERE ns = ?`,
  postgres: (seconds) => `UPDATE gemstone_election_leader SET lease_expires_at = clock_timestamp() + interval '${seconds} second' WHERE ns = ?`,
};
const LEASE_IN_MS: Record<Kind, string> = {
  mariadb: 'TIMESTAMPDIFF(MICROSECOND, UTC_TIMESTAMP(6), lease_expires_at) / 1000',
  postgres: 'EXTRACT(EPOCH FROM lease_expires_at - clock_timestamp()) * 1000',
};

async function leaderRow(ds: DataSource, ns: string) {
  const kind: Kind = ds.options.type === 'postgres' ? 'postgres' : 'mariadb';
  const [row] = await query<{ term: unknown; leader_id: unknown; lease_in_ms: unknown }>(
    ds,
    `SELECT term, leader_id, ${LEASE_IN_MS[kind]} AS lease_in_ms FROM gemstone_election_leader WHERE ns = ?`,
    [ns],
  );
  return { term: Number(row!.term), leaderId: String(row!.leader_id), leaseInMs: Number(row!.lease_in_ms) };
}

describeEachDatabase(
  'a leader renewal in one statement',
  (db) => {
    let ds: DataSource;
    let recorder: QueryLog;
    const kind = db.kind as Kind;
    const ONE_STATEMENT = ONE_STATEMENTS[kind];

    beforeAll(async () => {
      recorder = new QueryLog();
      ds = await db.connect({ logger: recorder });
    });

    /** What one call sent. */
    async function sentBy<T>(call: () => Promise<T>): Promise<{ result: T; sent: string[] }> {
      const from = recorder.statements.length;
      const result = await call();
      return { result, sent: recorder.statements.slice(from) };
    }

    test('is one statement, answers as the locked path does, and writes the lease, the heartbeat and the options', async () => {
      const svc = new ElectionService(ds, { expireSeconds: 30 });
      const locked = new ElectionService(ds, { expireSeconds: 30 });
      forceLockedElect(locked);
      const ns = freshNs();
      const a = uuid();
      const first = await svc.electOutcome(a, { ns, priority: 1 });
      expect(first).toMatchObject({ isLeader: true, acquired: true });

      await sleep(20);
      const { result: renewed, sent } = await sentBy(() => svc.electOutcome(a, { ns, metadata: { zone: 'b' } }));
      expect(sent).toHaveLength(1);
      expect(sent[0]).toMatch(ONE_STATEMENT);
      const byLocked = await locked.electOutcome(a, { ns });
      const { databaseNow, ...answer } = renewed;
      const { databaseNow: lockedNow, ...lockedAnswer } = byLocked;
      expect(answer).toEqual(lockedAnswer);
      expect(answer).toEqual({ ns, leaderId: a, term: first.term, isLeader: true, acquired: false, handOver: false, wasRegistered: true });
      // The database clock of the statement, not the host's: between the first call's and the next one's.
      expect(databaseNow.getTime()).toBeGreaterThan(first.databaseNow.getTime());
      expect(databaseNow.getTime()).toBeLessThanOrEqual(lockedNow.getTime());

      const again = await sentBy(() => svc.electOutcome(a, { ns }));
      expect(again.sent).toHaveLength(1);
      const row = await leaderRow(ds, ns);
      expect(row).toMatchObject({ term: first.term, leaderId: a });
      expect(row.leaseInMs).toBeGreaterThan(29_000);
      const [candidate] = await svc.getCandidates({ ns });
      expect(candidate).toMatchObject({ candidateId: a, priority: 1, metadata: { zone: 'b' } });
      expect(candidate!.expiresAt.getTime() - candidate!.lastHeartbeatAt.getTime()).toBe(30_000);
    });

    test('leaves an outranked or ineligible leader to the locked path, which tells it to hand over', async () => {
      const svc = new ElectionService(ds, { expireSeconds: 30 });
      const ns = freshNs();
      const [a, b] = [uuid(), uuid()];
      const first = await svc.electOutcome(a, { ns, priority: 1 });
      expect(first.isLeader).toBe(true);
      expect((await svc.electOutcome(a, { ns })).handOver).toBe(false);

      await svc.registerCandidate(b, { ns, priority: 2 });
      const outranked = await sentBy(() => svc.electOutcome(a, { ns }));
      expect(outranked.result).toMatchObject({ leaderId: a, term: first.term, isLeader: true, acquired: false, handOver: true });
      expect(outranked.sent.length).toBeGreaterThan(1);
      // Its own priority given in the call counts, not the stored one.
      const raised = await sentBy(() => svc.electOutcome(a, { ns, priority: 2 }));
      expect(raised.result).toMatchObject({ isLeader: true, handOver: false });
      expect(raised.sent).toHaveLength(1);

      const ineligible = await sentBy(() => svc.electOutcome(a, { ns, eligible: false }));
      expect(ineligible.result).toMatchObject({ leaderId: a, isLeader: true, handOver: true });
      expect(ineligible.sent.length).toBeGreaterThan(1);
      // Still ineligible as stored: the next plain call hands over too.
      expect((await svc.electOutcome(a, { ns })).handOver).toBe(true);
    });

    test('a lease that runs out while another transaction holds its row is taken over under a new term, never extended', async () => {
      // A lease of 2 s: at the call 1.5 s are left, more than the half-lease margin, so the
      // one-statement renewal is tried; the row is locked until after the lease's end. On
      // PostgreSQL the lock is FOR SHARE, what a fenced transaction (assertLeader) holds: it
      // leaves the row as it was, so nothing re-reads it after the wait but the statement itself.
      const svc = new ElectionService(ds, { expireSeconds: 2 });
      const ns = freshNs();
      const a = uuid();
      const first = await svc.electOutcome(a, { ns });
      const holder = ds.createQueryRunner();
      await holder.connect();
      try {
        await holder.startTransaction();
        await holder.query(
          kind === 'postgres' ? 'SELECT ns FROM gemstone_election_leader WHERE ns = $1 FOR SHARE' : 'SELECT ns FROM gemstone_election_leader WHERE ns = ? FOR UPDATE',
          [ns],
        );
        await sleep(300);
        const from = recorder.statements.length;
        const call = svc.electOutcome(a, { ns });
        // Held until the database clock is past the lease's end.
        for (let i = 0; i < 200 && (await leaderRow(ds, ns)).leaseInMs > -200; i++) await sleep(25);
        await holder.commitTransaction();
        const outcome = await call;
        expect(outcome).toMatchObject({ leaderId: a, isLeader: true, acquired: true, term: first.term + 1 });
        // The statement was tried, and waited for the lock (it was sent before the commit).
        expect(recorder.statements.slice(from).filter((text) => ONE_STATEMENT.test(text))).toHaveLength(1);
      } finally {
        await holder.release();
      }
      const history = await svc.getHistory({ ns });
      expect(history.map((e) => [e.term, e.endReason])).toEqual([
        [first.term + 1, null],
        [first.term, 'expired'],
      ]);
    });

    test('a lease with less than half of it left is renewed by the general path, without trying the one statement first', async () => {
      // 4 s: after 2.5 s, 1.5 s are left (less than the 2 s margin, and enough for a slow machine).
      const svc = new ElectionService(ds, { expireSeconds: 4 });
      const ns = freshNs();
      const a = uuid();
      const first = await svc.electOutcome(a, { ns });
      await sleep(2500);
      const late = await sentBy(() => svc.electOutcome(a, { ns }));
      expect(late.result).toMatchObject({ isLeader: true, acquired: false, term: first.term });
      expect(late.sent.length).toBeGreaterThan(0);
      expect(late.sent.filter((text) => ONE_STATEMENT.test(text))).toEqual([]);
      const next = await sentBy(() => svc.electOutcome(a, { ns }));
      expect(next.sent).toHaveLength(1);
      expect(next.sent[0]).toMatch(ONE_STATEMENT);
    });

    // MariaDB: its statement reads its clock when it starts, and renews only with half a lease to spare.
    if (kind === 'mariadb')
      test('the statement itself refuses a lease with less than half of it left by the database clock', async () => {
      // The host saw the lease written a moment ago, so it tries the statement; the row says
      // otherwise (shortened behind its back to 1 s of 30), and the locked path renews.
      const svc = new ElectionService(ds, { expireSeconds: 30 });
      const ns = freshNs();
      const a = uuid();
      const first = await svc.electOutcome(a, { ns });
      await query(ds, LEASE_IN[kind](1), [ns]);
      const late = await sentBy(() => svc.electOutcome(a, { ns }));
      expect(late.result).toMatchObject({ isLeader: true, acquired: false, term: first.term });
      expect(late.sent.filter((text) => ONE_STATEMENT.test(text))).toHaveLength(1);
      expect(late.sent.length).toBeGreaterThan(1);
      expect((await leaderRow(ds, ns)).leaseInMs).toBeGreaterThan(29_000);
    });

    test('a takeover, a resigned leader and a stale term go straight to the locked path; a follower beside the leader does not stop its renewals', async () => {
      const svc = new ElectionService(ds, { expireSeconds: 30 });
      const ns = freshNs();
      const [a, b] = [uuid(), uuid()];
      const expireLease = () => query(ds, LEASE_IN[kind](-1), [ns]);
      const first = await svc.electOutcome(a, { ns });
      // b is a follower of the same process: a still renews in one statement.
      expect(await svc.electOutcome(b, { ns })).toMatchObject({ leaderId: a, isLeader: false });
      expect((await sentBy(() => svc.electOutcome(a, { ns }))).sent).toHaveLength(1);

      // Takeovers, each caller having led under an older term (what the benchmark's takeover does).
      for (const [i, id] of [b, a, b].entries()) {
        await expireLease();
        const taken = await sentBy(() => svc.electOutcome(id, { ns }));
        expect(taken.result).toMatchObject({ leaderId: id, isLeader: true, acquired: true, term: first.term + i + 1 });
        expect(taken.sent.filter((text) => ONE_STATEMENT.test(text))).toEqual([]);
      }
      // Led by b under the last term; a's renewal would go to the locked path anyway.
      expect((await sentBy(() => svc.electOutcome(b, { ns }))).sent).toHaveLength(1);

      expect(await svc.resign(b, { ns })).toBe(true);
      const afterResign = await sentBy(() => svc.electOutcome(b, { ns }));
      expect(afterResign.result).toMatchObject({ leaderId: b, acquired: true, term: first.term + 4 });
      expect(afterResign.sent.filter((text) => ONE_STATEMENT.test(text))).toEqual([]);

      // Another process (here: another service) took the lease: one failed statement, then the
      // locked path, which answers as a follower; no second try.
      const other = new ElectionService(ds, { expireSeconds: 30 });
      await expireLease();
      expect(await other.electOutcome(a, { ns })).toMatchObject({ leaderId: a, acquired: true });
      const stale = await sentBy(() => svc.electOutcome(b, { ns }));
      expect(stale.result).toMatchObject({ leaderId: a, isLeader: false });
      expect(stale.sent.filter((text) => ONE_STATEMENT.test(text))).toHaveLength(1);
      const again = await sentBy(() => svc.electOutcome(b, { ns }));
      expect(again.sent.filter((text) => ONE_STATEMENT.test(text))).toEqual([]);
    });
  },
  { kinds: ['mariadb', 'postgres'] },
);
