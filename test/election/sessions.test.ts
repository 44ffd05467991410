/**
 * With a session inside an active transaction the call joins it and never
 * commits, rolls back or releases it; a session without a transaction lends its connection; no
 * session means the call's own transaction.
 */
import type { DataSource, QueryRunner } from 'typeorm';
import { ElectionService, ValidationError } from 'gemstone-utils';
import { describeEachDatabase, snapshot, uuid } from '../support/databases';
import { ns as freshNs } from '../support/rows';

describeEachDatabase('sessions', (db) => {
  let ds: DataSource;
  let svc: ElectionService;

  beforeAll(async () => {
    ds = await db.connect();
    svc = new ElectionService(ds);
  });

  async function inRunner<T>(work: (runner: QueryRunner) => Promise<T>): Promise<T> {
    const runner = ds.createQueryRunner();
    try {
      return await work(runner);
    } finally {
      if (runner.isTransactionActive) await runner.rollbackTransaction();
      await runner.release();
    }
  }

  test('a QueryRunner in a transaction: every operation joins it; rollback leaves nothing; the runner stays open', async () => {
    const ns = freshNs();
    const [a, b] = [uuid(), uuid()];
    const before = await snapshot(ds);
    await inRunner(async (runner) => {
      await runner.startTransaction();
      const session = runner;
      await svc.registerCandidate(a, { ns, session });
      await svc.heartbeat(b, { ns, session });
      expect(await svc.elect(a, { ns, session })).toBe(a);
      // reads in the transaction see its own uncommitted writes
      expect(await svc.isLeader(a, { ns, session })).toBe(true);
      expect(await svc.listCandidates({ ns, session })).toEqual([a, b].sort());
      expect(await svc.getLeader({ ns, session })).toMatchObject({ leaderId: a, term: 1 });
      expect((await svc.assertLeader(a, { ns, session, term: 1 })).term).toBe(1);
      expect(await svc.resign(a, { ns, session })).toBe(true);
      await svc.unregisterCandidate(b, { ns, session });
      // the caller's transaction is still open and the runner not released
      expect(runner.isTransactionActive).toBe(true);
      expect(runner.isReleased).toBe(false);
      await runner.rollbackTransaction();
    });
    expect(await snapshot(ds)).toBe(before);
  });

  test('a QueryRunner in a transaction: the caller commits, then the rows are there', async () => {
    const ns = freshNs();
    const a = uuid();
    await inRunner(async (runner) => {
      await runner.startTransaction();
      await svc.elect(a, { ns, session: runner });
      await runner.commitTransaction();
    });
    expect(await svc.getLeader({ ns })).toMatchObject({ leaderId: a, term: 1 });
  });

  if (db.shared) {
    test('uncommitted work in the caller transaction is invisible to other connections', async () => {
      const ns = freshNs();
      const a = uuid();
      const other = await db.connect();
      await inRunner(async (runner) => {
        await runner.startTransaction();
        await svc.registerCandidate(a, { ns, session: runner });
        expect(await new ElectionService(other).listCandidates({ ns })).toEqual([]);
        await runner.commitTransaction();
      });
      expect(await new ElectionService(other).listCandidates({ ns })).toEqual([a]);
    });
  }

  test('a QueryRunner without a transaction: the call commits its own transaction on it and leaves it open', async () => {
    const ns = freshNs();
    const a = uuid();
    await inRunner(async (runner) => {
      expect(await svc.elect(a, { ns, session: runner })).toBe(a);
      expect(runner.isTransactionActive).toBe(false);
      expect(runner.isReleased).toBe(false);
      // still usable by the caller
      await runner.query('SELECT 1');
    });
    expect(await svc.getLeader({ ns })).toMatchObject({ leaderId: a });
  });

  test('an EntityManager of dataSource.transaction(): joins it, and a throw rolls everything back', async () => {
    const ns = freshNs();
    const a = uuid();
    const before = await snapshot(ds);
    await expect(
      ds.transaction(async (manager) => {
        await svc.elect(a, { ns, session: manager });
        expect(await svc.isLeader(a, { ns, session: manager })).toBe(true);
        throw new Error('application failure');
      }),
    ).rejects.toThrow('application failure');
    expect(await snapshot(ds)).toBe(before);

    await ds.transaction(async (manager) => {
      await svc.elect(a, { ns, session: manager });
    });
    expect(await svc.isLeader(a, { ns })).toBe(true);
  });

  test('dataSource.manager (no transaction, no runner) works like no session', async () => {
    const ns = freshNs();
    const a = uuid();
    expect(await svc.elect(a, { ns, session: ds.manager })).toBe(a);
    expect(await svc.isLeader(a, { ns, session: ds.manager })).toBe(true);
  });

  test('a service without a DataSource runs on the session’s DataSource', async () => {
    const ns = freshNs();
    const a = uuid();
    const unbound = new ElectionService();
    await ds.transaction(async (manager) => {
      expect(await unbound.elect(a, { ns, session: manager })).toBe(a);
    });
    expect(await svc.getLeader({ ns })).toMatchObject({ leaderId: a });
  });

  test('bad sessions are refused before anything is written', async () => {
    const ns = freshNs();
    const before = await snapshot(ds);
    const bad: unknown[] = [{}, 'session', 42, [], { query: () => undefined }];
    if (db.kind !== 'sqlite') {
      // SQLite runners share one connection and TypeORM never marks them released.
      const released = ds.createQueryRunner();
      await released.release();
      bad.push(released);
    }
    for (const session of bad) {
      const error = await svc.elect(uuid(), { ns, session: session as never }).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(ValidationError);
      expect((error as ValidationError).parameter).toBe('options.session');
    }
    expect(await snapshot(ds)).toBe(before);
  });

  test('a session from another DataSource than the service’s is refused', async () => {
    const other = await db.connect();
    const error = await svc.elect(uuid(), { ns: freshNs(), session: other.manager }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ValidationError);
    expect((error as ValidationError).message).toMatch(/different DataSource/);
  });

  if (db.kind !== 'sqlite') {
    test('a lock timeout inside the caller transaction is surfaced (not retried there); the runner stays open', async () => {
      const ns = freshNs();
      const a = uuid();
      await svc.elect(a, { ns });
      // Another connection holds the leader row, so the caller's elect must wait for it.
      await inRunner(async (holder) => {
        await holder.startTransaction();
        await svc.assertLeader(a, { ns, session: holder });
        await inRunner(async (runner) => {
          await runner.startTransaction();
          await runner.query(db.kind === 'postgres' ? "SET LOCAL lock_timeout = '200ms'" : 'SET SESSION innodb_lock_wait_timeout = 1');
          const error = await svc.elect(uuid(), { ns, session: runner }).catch((e: unknown) => e);
          expect(error).toBeInstanceOf(Error);
          expect(String((error as Error).message)).toMatch(/lock/i);
          expect(runner.isReleased).toBe(false);
          expect(runner.isTransactionActive).toBe(true);
          if (db.kind === 'mariadb') await runner.query('SET SESSION innodb_lock_wait_timeout = DEFAULT');
        });
      });
      expect(await svc.isLeader(a, { ns })).toBe(true);
    });
  }
});
