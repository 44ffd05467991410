/**
 * The library's own transactions run at READ COMMITTED whatever the DataSource's `isolationLevel`
 * option or the server's default; inside the caller's transaction the caller's isolation rules,
 * and a serialization failure there is a SerializationFailureError (retry your transaction).
 */
import { DataSource, DataSourceOptions } from 'typeorm';
import { ElectionService, GemstoneError, SerializationFailureError, withTransaction } from 'gemstone-utils';
import { describeEachDatabase, MARIADB_SNAPSHOT_ISOLATION, NO_SNAPSHOT_ISOLATION, query, sleep, TestDatabase, TYPEORM_LINE, uuid } from '../support/databases';
import { ns as freshNs } from '../support/rows';

const RACERS = 16;
const POOL = RACERS + 4;

/** A DataSource whose transactions would default to `level` (the option exists on TypeORM 1.x only). */
async function withIsolationOption(db: TestDatabase, level: string): Promise<DataSource> {
  const other = await db.sibling();
  return other.connect({ isolationLevel: level, poolSize: POOL } as unknown as Partial<DataSourceOptions>);
}

/** A DataSource on a fresh PostgreSQL database whose sessions default to SERIALIZABLE. */
async function serializableByDefault(db: TestDatabase): Promise<DataSource> {
  const other = await db.sibling();
  const admin = await other.connect({ poolSize: 1 } as Partial<DataSourceOptions>);
  const database = new URL(other.url()).pathname.slice(1);
  await admin.query(`ALTER DATABASE "${database}" SET default_transaction_isolation = 'serializable'`);
  await admin.destroy();
  const ds = await other.connect({ poolSize: POOL } as Partial<DataSourceOptions>);
  expect((await ds.query('SHOW default_transaction_isolation'))[0].default_transaction_isolation).toBe('serializable');
  return ds;
}

/** Expires the lease of `ns` behind the library's back. */
async function expire(ds: DataSource, ns: string): Promise<void> {
  await query(ds, "UPDATE gemstone_election_leader SET lease_expires_at = updated_at - INTERVAL '1' SECOND WHERE ns = ?".replace(
    "INTERVAL '1' SECOND",
    ds.options.type === 'postgres' ? "INTERVAL '1 second'" : 'INTERVAL 1 SECOND',
  ), [ns]);
}

/** Contention: racers on fresh namespaces and on expired leases; every call must succeed. */
async function contention(ds: DataSource): Promise<void> {
  const svc = new ElectionService(ds);
  for (let round = 0; round < 4; round++) {
    const ns = freshNs();
    const ids = Array.from({ length: RACERS }, uuid);
    const first = await Promise.allSettled(ids.map((id) => svc.elect(id, { ns })));
    expect(first.filter((r) => r.status === 'rejected')).toEqual([]);
    expect(new Set(first.map((r) => (r as PromiseFulfilledResult<string>).value)).size).toBe(1);
    await expire(ds, ns);
    const second = await Promise.allSettled(ids.map((id) => svc.elect(id, { ns })));
    expect(second.filter((r) => r.status === 'rejected')).toEqual([]);
    expect(new Set(second.map((r) => (r as PromiseFulfilledResult<string>).value)).size).toBe(1);
    expect(await svc.getLeader({ ns })).toMatchObject({ term: 2 });
  }
}

/**
 * The library's own transaction (withTransaction) reads, another connection then commits a
 * takeover, and the transaction elects: at READ COMMITTED it sees the takeover; at REPEATABLE
 * READ or SERIALIZABLE PostgreSQL would abort it (40001).
 */
async function ownTransactionSeesCommittedTakeover(ds: DataSource): Promise<void> {
  const svc = new ElectionService(ds);
  const ns = freshNs();
  const [a, b, c] = [uuid(), uuid(), uuid()];
  await svc.elect(a, { ns });
  await expire(ds, ns);
  const seen = await withTransaction(
    ds,
    async (manager) => {
      expect(await svc.getLeader({ ns, session: manager })).toBeNull(); // the transaction's snapshot is taken
      await svc.elect(b, { ns }); // another connection, committed
      return svc.elect(c, { ns, session: manager });
    },
    { conflictRetries: 0 },
  );
  expect(seen).toBe(b);
}

describeEachDatabase(
  'own transactions at READ COMMITTED',
  (db) => {
    const levels = ['READ UNCOMMITTED', 'REPEATABLE READ', 'SERIALIZABLE'];
    for (const level of levels) {
      const t = TYPEORM_LINE === '0.3' ? test.skip : test; // TypeORM 0.3 has no isolationLevel option
      if (db.kind === 'postgres') {
        t(`DataSource isolationLevel ${level}: own transactions see committed takeovers`, async () => {
          await ownTransactionSeesCommittedTakeover(await withIsolationOption(db, level));
        });
      }
      t(`DataSource isolationLevel ${level}: concurrent elects under contention all succeed`, async () => {
        await contention(await withIsolationOption(db, level));
      });
    }

    if (db.kind === 'mariadb') {
      const t = TYPEORM_LINE === '0.3' ? test.skip : test;
      t('DataSource isolationLevel READ UNCOMMITTED: no follower reports a takeover that is then rolled back', async () => {
        const ds = await withIsolationOption(db, 'READ UNCOMMITTED');
        const svc = new ElectionService(ds);
        for (let round = 0; round < 3; round++) {
          const ns = freshNs();
          const [a, b] = [uuid(), uuid()];
          await svc.elect(uuid(), { ns }); // a leader row exists
          await expire(ds, ns);
          const runner = ds.createQueryRunner();
          await runner.startTransaction('READ COMMITTED');
          try {
            expect(await svc.elect(a, { ns, session: runner })).toBe(a); // uncommitted takeover
            const follower = svc.elect(b, { ns });
            await sleep(200);
            await runner.rollbackTransaction();
            // a never held the lease: b must not report it.
            expect(await follower).toBe(b);
          } finally {
            if (runner.isTransactionActive) await runner.rollbackTransaction();
            await runner.release();
          }
        }
      });
    }

    if (db.kind === 'postgres') {
      test('server default_transaction_isolation serializable: own transactions see committed takeovers', async () => {
        await ownTransactionSeesCommittedTakeover(await serializableByDefault(db));
      });
      test('server default_transaction_isolation serializable: concurrent elects under contention all succeed', async () => {
        await contention(await serializableByDefault(db));
      });
    }

    // MariaDB's SERIALIZABLE locks reads; its snapshot conflict needs innodb_snapshot_isolation.
    const conflicts = db.kind !== 'mariadb' || MARIADB_SNAPSHOT_ISOLATION;
    (conflicts ? test : test.skip)(`a conflict inside the caller's SERIALIZABLE transaction is a SerializationFailureError${conflicts ? '' : NO_SNAPSHOT_ISOLATION}`, async () => {
      const ds = await db.connect({ poolSize: 4 } as Partial<DataSourceOptions>);
      const svc = new ElectionService(ds);
      const ns = freshNs();
      const [a, b, c] = [uuid(), uuid(), uuid()];
      await svc.elect(a, { ns });
      await expire(ds, ns);
      const runner = ds.createQueryRunner();
      await runner.connect();
      if (db.kind === 'mariadb') await runner.query('SET SESSION innodb_snapshot_isolation = ON');
      await runner.startTransaction(db.kind === 'mariadb' ? 'REPEATABLE READ' : 'SERIALIZABLE');
      try {
        await svc.getLeader({ ns, session: runner }); // the snapshot is taken
        await svc.elect(b, { ns }); // another connection commits a takeover
        const error = await svc.elect(c, { ns, session: runner }).then(
          () => undefined,
          (e: unknown) => e,
        );
        expect(error).toBeInstanceOf(SerializationFailureError);
        expect(error).toBeInstanceOf(GemstoneError);
        expect((error as Error).message).toMatch(/retry/);
        const cause = (error as { cause?: { driverError?: { code?: string; errno?: number } } }).cause;
        if (db.kind === 'postgres') expect(cause?.driverError?.code).toBe('40001');
        else expect(cause?.driverError?.errno).toBe(1020);
      } finally {
        if (runner.isTransactionActive) await runner.rollbackTransaction();
        await runner.release();
      }
    });
  },
  { kinds: ['postgres', 'mariadb'] },
);
