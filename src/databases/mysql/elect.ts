import type { EntityManager } from 'typeorm';
import { execute, executeRaw } from '../../db/session';
import { raw, RawSql, sql, SqlFragment } from '../../db/sql';
import type { ElectMembers, ElectParts, SharedStore } from '../contract/store';
import { createRenewInOneStatement } from './renew';

/**
 * MySQL's and MariaDB's members of the single-namespace election (see `election/store.ts` for the
 * shared statements): the follower's read first, the fencing write of `assertLeader`, a lock taken
 * by a statement of its own, and writes judged by their affected-row counts.
 */
export const mysqlElect: ElectParts = { create: createMysqlElect };

function createMysqlElect(shared: SharedStore): ElectMembers {
  const { context, leaders } = shared;
  const d = context.dialect;
  return {
    /**
     * A locking read of a missing row takes gap locks that deadlock a later insert: `elect`
     * creates the row first, unless it was just seen (a locking read of an existing row takes no
     * gap lock).
     */
    insertsLeaderRowFirst: true,

    /**
     * `elect` first reads the leader row WITHOUT a lock; when it shows an unexpired lease held by
     * another candidate, the call only touches the caller's candidate row and returns that leader
     * — followers never queue for the leader row's lock, which the leader's renewal and every
     * takeover still take (`lockLeader`).
     *
     * Why this keeps the rule "read the leader row with FOR UPDATE wherever leadership may change
     * hands" (docs/protocol.md): a follower's call cannot change leadership — it never writes the leader row — so
     * there is nothing for the lock to serialize. The read is the first of a transaction the
     * library owns, so InnoDB's snapshot is taken at that moment (it is current), and `live` is
     * judged by the server clock at that moment: the call is linearized at the read, when the
     * lease it reports was held. Any other outcome (vacant, expired, the caller's own lease,
     * no row) takes the locked path in the same transaction, leader row before candidate row.
     * PostgreSQL does the same inside its one statement (see its `elect.ts`); not SQLite (its write lock is the only lock,
     * and a deferred read before a write would fail with SQLITE_BUSY_SNAPSHOT under contention).
     */
    followerReadsFirst: true,

    /**
     * One affected row is an insert (an update of an existing row always changes it,
     * `last_heartbeat_at` moves, and counts two).
     */
    async touchCandidate(m: EntityManager, upsert: SqlFragment): Promise<boolean> {
      const result = (await executeRaw(context, m, upsert)) as { affectedRows?: unknown } | undefined;
      return Number(result?.affectedRows) === 1;
    },

    /**
     * MySQL/MariaDB fix `UTC_TIMESTAMP(6)` when a statement starts, so the lock is taken first, by
     * a statement that decides nothing (unless `ensureLeaderRow` already locked the row), and the
     * row is read by the next one, which no longer waits.
     */
    async lockLeader(m: EntityManager, ns: string, _mode: 'write' | 'read', writeLockHeld: boolean, standing: RawSql | SqlFragment) {
      if (!writeLockHeld) await execute(context, m, sql`SELECT ns FROM ${leaders} WHERE ns = ${ns} FOR UPDATE`);
      // MySQL/MariaDB take FOR UPDATE for both modes (`FOR SHARE` is MySQL 8 only; MariaDB has
      // LOCK IN SHARE MODE), and the fence writes the row anyway (see `touchLeader`).
      const [row] = await execute(context, m, shared.selectLeaderRow(ns, standing, raw(' FOR UPDATE')));
      return row;
    },

    /**
     * Matched = changed: `updated_at` moves at least one microsecond forward, so the affected-row
     * count (which counts changed rows only) tells whether the lease was renewed.
     */
    async renewIfLive(m: EntityManager, where: SqlFragment, expireSeconds: number): Promise<boolean> {
      const result = (await executeRaw(
        context,
        m,
        sql`UPDATE ${leaders} SET lease_expires_at = ${d.nowPlus(expireSeconds)}, updated_at = GREATEST(${d.now}, updated_at + INTERVAL 1 MICROSECOND) ${where}`,
      )) as { affectedRows?: unknown } | undefined;
      return Number(result?.affectedRows) > 0;
    },

    /**
     * `assertLeader` writes the leader row after its check. A locked read fences only on the
     * server that holds the lock: under MariaDB Galera (and other certification-based
     * multi-primary replication) a takeover committed on another node never waits for it, and a
     * fenced transaction whose write set touches only the caller's tables passes certification
     * after that takeover (measured: 14 stale commits in 100 tight races). A real change of the
     * leader row puts it in the transaction's write set: certification then orders the fenced
     * transaction and any takeover, and the later of the two aborts (a deadlock error). On a
     * single InnoDB server the write costs one statement on a row the transaction has already
     * locked `FOR UPDATE`: measured in docs/databases.md, it is taken everywhere rather than only
     * where Galera is detected, because detection cannot see every topology (MySQL Group
     * Replication multi-primary, proxies that route connections to different servers).
     *
     * The touch: `updated_at` moves to the database clock, and at least one microsecond forward,
     * so the row always really changes (MySQL/MariaDB skip rows an UPDATE leaves as they were, and
     * such a row would not be written). Runs only after the row was read under its lock and the
     * caller was found to be the leader.
     */
    async touchLeader(m: EntityManager, ns: string): Promise<void> {
      await execute(context, m, sql`UPDATE ${leaders} SET updated_at = GREATEST(${d.now}, updated_at + INTERVAL 1 MICROSECOND) WHERE ns = ${ns}`);
    },

    /** MariaDB: a leader's renewal in one autocommit statement (see `renew.ts`). */
    renewInOneStatement: createRenewInOneStatement(shared),

    /** The lease end as the dialect reads it back: whole microseconds since the epoch, as stored. */
    leaseMicros: (stored: unknown) => (stored !== null && stored !== undefined ? Number(stored) : null),
  };
}
