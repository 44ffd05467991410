import type { EntityManager } from 'typeorm';
import { execute } from '../../db/session';
import { raw, RawSql, sql, SqlFragment } from '../../db/sql';
import type { ElectMembers, ElectParts, SharedStore } from '../contract/store';

/**
 * SQLite's members of the single-namespace election inside a transaction (see `election/store.ts`
 * for the shared statements; calls without one run as programs, see `programs.ts`): no row
 * locks, so the database write lock stands in for them, and `changes()` counts what a write did.
 */
export const sqliteElect: ElectParts = { create: createSqliteElect };

function createSqliteElect(shared: SharedStore): ElectMembers {
  const { context, leaders } = shared;
  const d = context.dialect;
  return {
    /** The first write takes the database lock: `elect` creates the leader row first (unless it was just seen). */
    insertsLeaderRowFirst: true,

    /** Its write lock is the only lock, and a deferred read before a write would fail with SQLITE_BUSY_SNAPSHOT under contention. */
    followerReadsFirst: false,

    /**
     * Undefined: the write lock held since the transaction's first write keeps the earlier read
     * of the candidate row current.
     */
    async touchCandidate(m: EntityManager, upsert: SqlFragment): Promise<undefined> {
      await execute(context, m, upsert);
      return undefined;
    },

    /**
     * SQLite has no row locks: a no-op write takes its database write lock instead, unless the
     * transaction already wrote; the read after it needs no locking clause.
     */
    async lockLeader(m: EntityManager, ns: string, _mode: 'write' | 'read', writeLockHeld: boolean, standing: RawSql | SqlFragment) {
      if (!writeLockHeld) {
        await execute(context, m, sql`UPDATE ${leaders} SET ns = ns WHERE ns = ${ns}`);
      }
      const [row] = await execute(context, m, shared.selectLeaderRow(ns, standing, raw('')));
      return row;
    },

    /** The count is `changes()`, read on the connection whose write lock the transaction holds. */
    async renewIfLive(m: EntityManager, where: SqlFragment, expireSeconds: number): Promise<boolean> {
      await execute(context, m, sql`UPDATE ${leaders} SET lease_expires_at = ${d.nowPlus(expireSeconds)}, updated_at = ${d.now} ${where}`);
      const [row] = await execute(context, m, sql`SELECT changes() AS n`);
      return Number(row?.n) > 0;
    },
  };
}
