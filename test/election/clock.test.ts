/**
 * `now` is the database server's clock at the statement — never an
 * application host's clock (or time zone), never a transaction's start time.
 */
import type { DataSource, DataSourceOptions } from 'typeorm';
import { ElectionService } from 'gemstone-utils';
import { describeEachDatabase, sleep, uuid } from '../support/databases';
import { ns as freshNs, plainUtcMs } from '../support/rows';

const RealDate = Date;

/** Shifts `Date.now()` and `new Date()` of this process; dates built from values are untouched. */
async function withHostClockShifted<T>(shiftMs: number, work: () => Promise<T>): Promise<T> {
  class ShiftedDate extends RealDate {
    constructor(...args: unknown[]) {
      if (args.length === 0) super(RealDate.now() + shiftMs);
      else super(...(args as [string]));
    }
    static override now(): number {
      return RealDate.now() + shiftMs;
    }
  }
  globalThis.Date = ShiftedDate as DateConstructor;
  try {
    return await work();
  } finally {
    globalThis.Date = RealDate;
  }
}

const HOUR = 3_600_000;
const SHORT = 1.5;

describeEachDatabase('database clock', (db) => {
  let ds: DataSource;

  beforeAll(async () => {
    ds = await db.connect();
  });

  for (const shift of [HOUR, -HOUR]) {
    test(`host clock shifted by ${shift > 0 ? '+' : '-'}1 hour: leases and expiry unchanged`, async () => {
      const ns = freshNs();
      const [a, b] = [uuid(), uuid()];
      const svc = new ElectionService(ds);
      const short = new ElectionService(ds, { expireSeconds: SHORT });
      await withHostClockShifted(shift, async () => {
        expect(Math.abs(Date.now() - RealDate.now() - shift)).toBeLessThan(1000);
        expect(await svc.elect(a, { ns })).toBe(a);
        expect(await svc.elect(b, { ns })).toBe(a);
        expect(await svc.isLeader(a, { ns })).toBe(true);
        expect(await svc.listCandidates({ ns })).toEqual([a, b].sort());
        const info = await svc.getLeader({ ns });
        expect(Math.abs(info!.leaseExpiresAt.getTime() - (RealDate.now() + 60_000))).toBeLessThan(5_000);

        // A short lease expires by the database clock, whatever the host believes.
        const ns2 = freshNs();
        expect(await short.elect(a, { ns: ns2 })).toBe(a);
        expect(await short.elect(b, { ns: ns2 })).toBe(a);
        await sleep(SHORT * 1000 + 300);
        expect(await short.isLeader(a, { ns: ns2 })).toBe(false);
        expect(await short.elect(b, { ns: ns2 })).toBe(b);
        expect(await short.getLeader({ ns: ns2 })).toMatchObject({ leaderId: b, term: 2 });
      });
    });
  }

  test("inside one long caller transaction, expiry follows the statement's clock, not the transaction start", async () => {
    const ns = freshNs();
    const [a, b] = [uuid(), uuid()];
    const short = new ElectionService(ds, { expireSeconds: SHORT });
    const runner = ds.createQueryRunner();
    try {
      await runner.startTransaction();
      expect(await short.elect(a, { ns, session: runner })).toBe(a);
      expect(await short.isLeader(a, { ns, session: runner })).toBe(true);
      await sleep(SHORT * 1000 + 400);
      expect(await short.isLeader(a, { ns, session: runner })).toBe(false);
      expect(await short.getLeader({ ns, session: runner })).toBeNull();
      expect(await short.listCandidates({ ns, session: runner })).toEqual([]);
      expect(await short.elect(b, { ns, session: runner })).toBe(b);
      expect(await short.getLeader({ ns, session: runner })).toMatchObject({ leaderId: b, term: 2 });
      await runner.commitTransaction();
    } finally {
      if (runner.isTransactionActive) await runner.rollbackTransaction();
      await runner.release();
    }
  });

  if (db.kind === 'postgres' || db.kind === 'mariadb') {
    test('a connection with a non-UTC session time zone stores the same UTC instants', async () => {
      const ns = freshNs();
      const [a, b] = [uuid(), uuid()];
      const svc = new ElectionService(ds);
      const runner = ds.createQueryRunner();
      try {
        await runner.query(db.kind === 'postgres' ? "SET TIME ZONE 'Pacific/Chatham'" : "SET time_zone = '+09:00'");
        expect(await svc.elect(a, { ns, session: runner })).toBe(a);
        await svc.registerCandidate(b, { ns, session: runner });
      } finally {
        await runner.release();
      }
      // Read back through other (UTC) connections, through the API and with plain SQL.
      const info = await svc.getLeader({ ns });
      expect(Math.abs(info!.leaseExpiresAt.getTime() - (Date.now() + 60_000))).toBeLessThan(5_000);
      expect(Math.abs((await plainUtcMs(ds, db.kind, 'gemstone_election_leader', 'updated_at', ns)) - Date.now())).toBeLessThan(5_000);
      expect(await svc.listCandidates({ ns })).toEqual([a, b].sort());
      expect(await svc.elect(b, { ns })).toBe(a);
    });
  }

  if (db.kind === 'mariadb') {
    for (const timezone of ['local', '+05:00', '-07:30', 'Z']) {
      test(`mysql2 timezone option ${JSON.stringify(timezone)}: instants are right`, async () => {
        const other = await db.connect({ timezone } as Partial<DataSourceOptions>);
        const svc = new ElectionService(other);
        const ns = freshNs();
        const a = uuid();
        expect(await svc.elect(a, { ns })).toBe(a);
        const info = await svc.getLeader({ ns });
        expect(Math.abs(info!.updatedAt.getTime() - Date.now())).toBeLessThan(5_000);
        expect(Math.abs(info!.leaseExpiresAt.getTime() - (Date.now() + 60_000))).toBeLessThan(5_000);
        // and another DataSource with the default options agrees to the millisecond
        const seen = await new ElectionService(ds).getLeader({ ns });
        expect(seen!.leaseExpiresAt.getTime()).toBe(info!.leaseExpiresAt.getTime());
        await other.destroy();
      });
    }
  }
});
