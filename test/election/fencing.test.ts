/**
 * `assertLeader` fences leader-only writes. It runs only inside a
 * transaction, holds off a change of leadership until that transaction ends, and throws
 * NotLeaderError (with ns, candidateId, leaderId, term) unless the caller holds the lease.
 */
import type { DataSource, QueryRunner } from 'typeorm';
import { ElectionService, NotLeaderError, ValidationError, GemstoneError } from 'gemstone-utils';
import { describeEachDatabase, inCallerTransaction, query, sleep, snapshot, uuid } from '../support/databases';
import { ns as freshNs } from '../support/rows';

const SHORT = 1.5;

describeEachDatabase('fencing with assertLeader', (db) => {
  let ds: DataSource;
  let svc: ElectionService;

  beforeAll(async () => {
    ds = await db.connect();
    svc = new ElectionService(ds);
    await query(ds, 'CREATE TABLE fenced_ledger (ns varchar(255) NOT NULL, term bigint NOT NULL, note varchar(64) NOT NULL)');
  });

  const inTransaction = <T>(work: (runner: QueryRunner) => Promise<T>) => inCallerTransaction(ds, work);

  test('the leader passes and gets its lease; with the right term too', async () => {
    const ns = freshNs();
    const a = uuid();
    await svc.elect(a, { ns });
    const info = await inTransaction((session) => svc.assertLeader(a, { ns, session, term: 1 }));
    expect(info).toMatchObject({ ns, leaderId: a, term: 1 });
    expect(info.leaseExpiresAt.getTime()).toBeGreaterThan(Date.now());
  });

  test('NotLeaderError names the real leader and term: follower, wrong term, vacant row, no row', async () => {
    const ns = freshNs();
    const [a, b] = [uuid(), uuid()];
    await svc.elect(a, { ns });
    await svc.elect(b, { ns });

    const follower = await inTransaction((session) => svc.assertLeader(b, { ns, session })).catch((e: unknown) => e);
    expect(follower).toBeInstanceOf(NotLeaderError);
    expect(follower).toBeInstanceOf(GemstoneError);
    expect(follower).toMatchObject({ name: 'NotLeaderError', ns, candidateId: b, leaderId: a, term: 1 });
    expect((follower as Error).message).toContain(a);

    const wrongTerm = await inTransaction((session) => svc.assertLeader(a, { ns, session, term: 7 })).catch((e: unknown) => e);
    expect(wrongTerm).toMatchObject({ name: 'NotLeaderError', candidateId: a, leaderId: a, term: 1 });

    await svc.resign(a, { ns });
    const vacant = await inTransaction((session) => svc.assertLeader(a, { ns, session })).catch((e: unknown) => e);
    expect(vacant).toMatchObject({ name: 'NotLeaderError', leaderId: null, term: 1 });

    const noRow = await inTransaction((session) => svc.assertLeader(a, { ns: freshNs(), session })).catch((e: unknown) => e);
    expect(noRow).toMatchObject({ name: 'NotLeaderError', leaderId: null, term: null });
  });

  test('an expired lease fails the check even before anyone takes over', async () => {
    const ns = freshNs();
    const a = uuid();
    const short = new ElectionService(ds, { expireSeconds: SHORT });
    await short.elect(a, { ns });
    await sleep(SHORT * 1000 + 300);
    const error = await inTransaction((session) => short.assertLeader(a, { ns, session })).catch((e: unknown) => e);
    expect(error).toMatchObject({ name: 'NotLeaderError', leaderId: null, term: 1 });
  });

  test('outside a transaction it is refused with ValidationError, and changes nothing', async () => {
    const ns = freshNs();
    const a = uuid();
    await svc.elect(a, { ns });
    const before = await snapshot(ds);
    const runner = ds.createQueryRunner();
    try {
      for (const options of [{ ns }, { ns, session: runner }, { ns, session: ds.manager }]) {
        const error = await svc.assertLeader(a, options).catch((e: unknown) => e);
        expect(error).toBeInstanceOf(ValidationError);
        expect((error as ValidationError).parameter).toBe('options.session');
      }
    } finally {
      await runner.release();
    }
    expect(await snapshot(ds)).toBe(before);
  });

  test('a passed check changes only updated_at, forward (MySQL/MariaDB, the write that fences across Galera nodes) or nothing; a failed one changes nothing', async () => {
    const ns = freshNs();
    const [a, b] = [uuid(), uuid()];
    await svc.elect(a, { ns });
    const row = async () =>
      (
        await query(
          ds,
          // As text: drivers turn datetime(6) into a millisecond Date.
          `SELECT leader_id, term, CAST(lease_expires_at AS ${db.kind === 'mariadb' ? 'CHAR(26)' : 'text'}) AS lease_expires_at,
             CAST(updated_at AS ${db.kind === 'mariadb' ? 'CHAR(26)' : 'text'}) AS updated_at FROM gemstone_election_leader WHERE ns = ?`,
          [ns],
        )
      )[0] as Record<string, unknown>;
    const stamps: number[] = [];
    const before = await row();
    for (let i = 0; i < 3; i++) {
      // Back to back: even within one microsecond of the clock the row must really change.
      const info = await inTransaction((session) => svc.assertLeader(a, { ns, session, term: 1 }));
      stamps.push(info.updatedAt.getTime());
    }
    const after = await row();
    expect({ ...after, updated_at: undefined }).toEqual({ ...before, updated_at: undefined });
    if (db.kind === 'mariadb') {
      expect(String(after.updated_at) > String(before.updated_at)).toBe(true);
      // Each call reports the row as it read it: the previous call's write is visible.
      expect(stamps[1]).toBeGreaterThanOrEqual(stamps[0]);
      expect(stamps[2]).toBeGreaterThanOrEqual(stamps[1]);
    } else {
      expect(after.updated_at).toEqual(before.updated_at);
    }
    const unchanged = await snapshot(ds);
    await expect(inTransaction((session) => svc.assertLeader(b, { ns, session }))).rejects.toBeInstanceOf(NotLeaderError);
    await expect(inTransaction((session) => svc.assertLeader(a, { ns, session, term: 7 }))).rejects.toBeInstanceOf(NotLeaderError);
    expect(await snapshot(ds)).toBe(unchanged);
  });

  if (db.shared) {
    test('an open fenced transaction holds off a takeover until it ends; its writes commit under the old term', async () => {
      const ns = freshNs();
      const [a, b] = [uuid(), uuid()];
      const short = new ElectionService(ds, { expireSeconds: SHORT });
      await short.elect(a, { ns });
      // The challenger runs on its own DataSource: separate connections, as another process would.
      const otherDs = await db.connect();
      const challenger = new ElectionService(otherDs, { expireSeconds: SHORT });

      let committedAt = 0;
      let takeoverAt = 0;
      let takeover: Promise<string | null> | undefined;
      await inTransaction(async (session) => {
        const lease = await short.assertLeader(a, { ns, session, term: 1 });
        // Let the lease expire while the fenced transaction is still open, then challenge.
        await sleep(Math.max(0, lease.leaseExpiresAt.getTime() - Date.now()) + 300);
        takeover = challenger.elect(b, { ns }).then((leader) => {
          takeoverAt = Date.now();
          return leader;
        });
        await sleep(800);
        expect(takeoverAt).toBe(0); // still waiting for the leader row
        await session.query(
          db.kind === 'postgres' ? 'INSERT INTO fenced_ledger (ns, term, note) VALUES ($1, $2, $3)' : 'INSERT INTO fenced_ledger (ns, term, note) VALUES (?, ?, ?)',
          [ns, lease.term, 'leader-only write'],
        );
        committedAt = Date.now();
      });
      expect(await takeover).toBe(b);
      expect(takeoverAt).toBeGreaterThanOrEqual(committedAt);
      expect(await challenger.getLeader({ ns })).toMatchObject({ leaderId: b, term: 2 });
      const ledger = await query(ds, 'SELECT term, note FROM fenced_ledger WHERE ns = ?', [ns]);
      expect(ledger.map((row) => Number(row.term))).toEqual([1]);
    });

    test('after a takeover, the old leader’s fenced write cannot commit', async () => {
      const ns = freshNs();
      const [a, b] = [uuid(), uuid()];
      const short = new ElectionService(ds, { expireSeconds: SHORT });
      await short.elect(a, { ns });
      await sleep(SHORT * 1000 + 300);
      const otherDs = await db.connect();
      expect(await new ElectionService(otherDs, { expireSeconds: SHORT }).elect(b, { ns })).toBe(b);
      const error = await inTransaction(async (session) => {
        await short.assertLeader(a, { ns, session, term: 1 });
        await session.query(db.kind === 'postgres' ? 'INSERT INTO fenced_ledger (ns, term, note) VALUES ($1, 1, $2)' : 'INSERT INTO fenced_ledger (ns, term, note) VALUES (?, 1, ?)', [ns, 'stale']);
      }).catch((e: unknown) => e);
      expect(error).toMatchObject({ name: 'NotLeaderError', leaderId: b, term: 2 });
      expect(await query(ds, 'SELECT * FROM fenced_ledger WHERE ns = ?', [ns])).toEqual([]);
    });
  }
});
