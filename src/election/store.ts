import type { EntityManager } from 'typeorm';
import type { DbContext } from '../db/context';
import { sqlBool } from '../db/dialect';
import { execute } from '../db/session';
import { raw, sql } from '../db/sql';
import { ElectionLeader } from '../../entities/ElectionLeader';
import { CANDIDATE_TABLE, LEADER_TABLE } from './schema';

/**
 * The election's statements, one function each, run on the manager they are given (the
 * transaction is the caller's business: see `session.ts`). Every instant comes from the
 * database clock (`dialect.now`), and every decision is read from a row, never from an
 * affected-row count (mysql2 reports matched rows, not changed ones).
 */

/** The leader row as the library reads it: `live` is decided by the database clock. */
export interface LeaderRow {
  ns: string;
  leaderId: string | null;
  term: number;
  /** `leader_id` is set and `lease_expires_at > now`. */
  live: boolean;
  leaseExpiresAt: Date | null;
  updatedAt: Date;
}

/** What one `elect` decided, as {@link ElectionStore.electInOneStatement} reports it. */
export interface ElectDecision {
  leaderId: string;
  term: number;
  isLeader: boolean;
  acquired: boolean;
}

/** PostgreSQL channel on which lease changes are announced (delivered at commit). */
export const NOTIFY_CHANNEL = 'gemstone_election';

/** What a NOTIFY on {@link NOTIFY_CHANNEL} carries, as JSON. */
export interface LeaseChange {
  ns: string;
  /** The new leader, or null when the lease was vacated. */
  leaderId: string | null;
  term: number;
}

export function createStore(context: DbContext) {
  const { dialect: d } = context;
  const candidates = context.table(CANDIDATE_TABLE);
  const leaders = context.table(LEADER_TABLE);

  function toRow(raw: Record<string, unknown>): LeaderRow {
    const leaderId = (raw.leader_id as string | null) ?? null;
    return {
      ns: String(raw.ns),
      leaderId,
      term: Number(raw.term),
      live: leaderId !== null && sqlBool(raw.live),
      leaseExpiresAt: d.parseInstant(raw.lease_expires_at),
      updatedAt: d.parseInstant(raw.updated_at) as Date,
    };
  }

  const selectLeader = (alias: string) =>
    [
      `${alias}.ns AS ns`,
      `${alias}.leader_id AS leader_id`,
      `${alias}.term AS term`,
      `CASE WHEN ${alias}.lease_expires_at > ${d.now.text} THEN 1 ELSE 0 END AS live`,
      `${d.instant(`${alias}.lease_expires_at`).text} AS lease_expires_at`,
      `${d.instant(`${alias}.updated_at`).text} AS updated_at`,
    ].join(', ');

  return {
    /**
     * Whether `elect` creates the leader row before locking it. PostgreSQL locks first and
     * inserts only for a new namespace, saving a statement on every renewal.
     */
    insertsLeaderRowFirst: d.name !== 'postgres',

    /**
     * MySQL/MariaDB: `elect` first reads the leader row WITHOUT a lock; when it shows an
     * unexpired lease held by another candidate, the call only touches the caller's candidate
     * row and returns that leader — followers never queue for the leader row's lock, which the
     * leader's renewal and every takeover still take (`lockLeader`).
     *
     * Why this keeps contract §3 rule 7 ("read with FOR UPDATE wherever leadership may change
     * hands"): a follower's call cannot change leadership — it never writes the leader row — so
     * there is nothing for the lock to serialize. The read is the first of a transaction the
     * library owns, so InnoDB's snapshot is taken at that moment (it is current), and `live` is
     * judged by the server clock at that moment: the call is linearized at the read, when the
     * lease it reports was held. Any other outcome (vacant, expired, the caller's own lease,
     * no row) takes the locked path in the same transaction, leader row before candidate row.
     * Not on PostgreSQL (one statement does it all) nor SQLite (its write lock is the only lock,
     * and a deferred read before a write would fail with SQLITE_BUSY_SNAPSHOT under contention).
     */
    followerReadsFirst: d.name === 'mysql',

    /** register / heartbeat: create the candidate row or extend it. */
    async touchCandidate(m: EntityManager, ns: string, candidateId: string, expireSeconds: number): Promise<void> {
      await execute(
        context,
        m,
        sql`INSERT INTO ${candidates} (ns, candidate_id, last_heartbeat_at, expires_at)
VALUES (${ns}, ${candidateId}, ${d.now}, ${d.nowPlus(expireSeconds)})
${d.upsert(['ns', 'candidate_id'], ['last_heartbeat_at', 'expires_at'])}`,
      );
    },

    /**
     * Creates a vacant leader row (term 0) unless one exists. It cannot raise a duplicate-key
     * error, so a race for the first row never aborts a caller's transaction. On MySQL it also
     * locks an existing row; on SQLite it takes the database write lock (first write statement).
     */
    async ensureLeaderRow(m: EntityManager, ns: string): Promise<void> {
      await execute(
        context,
        m,
        sql`INSERT INTO ${leaders} (ns, leader_id, lease_expires_at, updated_at, term)
VALUES (${ns}, NULL, NULL, ${d.now}, 0)
${d.insertIfAbsent(['ns'])}`,
      );
    },

    /**
     * Reads the leader row under a row lock held until the transaction ends: `write` (FOR
     * UPDATE) where leadership may change hands, `read` (FOR SHARE) to fence leader-only work.
     * SQLite has no row locks: a no-op write takes its database write lock instead, unless the
     * transaction already wrote.
     */
    async lockLeader(m: EntityManager, ns: string, mode: 'write' | 'read', writeLockHeld = false): Promise<LeaderRow | undefined> {
      if (!d.rowLocks && !writeLockHeld) {
        await execute(context, m, sql`UPDATE ${leaders} SET ns = ns WHERE ns = ${ns}`);
      }
      const query = m
        .createQueryBuilder()
        .select(selectLeader('l'))
        .from(ElectionLeader, 'l')
        .where('l.ns = :ns', { ns });
      // MySQL/MariaDB take FOR UPDATE for both modes: TypeORM renders a share lock as MySQL 8's
      // `FOR SHARE` for a MariaDB server behind `type: "mysql"`, which MariaDB rejects.
      if (d.rowLocks) query.setLock(mode === 'read' && d.name === 'postgres' ? 'pessimistic_read' : 'pessimistic_write');
      const row = await query.getRawOne<Record<string, unknown>>();
      return row ? toRow(row) : undefined;
    },

    /** The leader row without a lock (for reads that change nothing). */
    async readLeader(m: EntityManager, ns: string): Promise<LeaderRow | undefined> {
      const [row] = await execute(context, m, sql`SELECT ${raw(selectLeader('l'))} FROM ${leaders} l WHERE l.ns = ${ns}`);
      return row ? toRow(row) : undefined;
    },

    /**
     * PostgreSQL: the whole `elect` of an existing namespace in ONE statement (one round trip, one
     * transaction when run outside the caller's), returning what it decided; undefined when the
     * namespace has no leader row yet (nothing was written: the caller takes the general path).
     *
     * Same protocol as the general path, step for step (contract §3 rules 2, 6, 7):
     * - `locked` reads the leader row `FOR UPDATE`; `lease` and `touch` take their input rows
     *   from it, so the leader row is locked before the candidate row is written (lock order).
     * - `live` is judged by `clock_timestamp()` in `seen`, evaluated above the lock, so after
     *   waiting for the lock it is the clock of that moment, not of the statement's start.
     * - Under READ COMMITTED the locked read returns the newest committed row, and the UPDATE
     *   re-reads that newest version before writing it: a takeover committed while we waited is
     *   seen, never overwritten.
     * - The announcement (pg_notify, delivered at commit) is sent only when the lease changed
     *   hands, with the same payload fields as {@link announce}.
     */
    electInOneStatement:
      d.name !== 'postgres'
        ? undefined
        : async (m: EntityManager, ns: string, candidateId: string, expireSeconds: number): Promise<ElectDecision | undefined> => {
            const [row] = await execute(
              context,
              m,
              sql`WITH locked AS (
  SELECT ns, leader_id, term, lease_expires_at FROM ${leaders} WHERE ns = CAST(${ns} AS varchar) FOR UPDATE
), seen AS (
  SELECT ns, leader_id, term, COALESCE(leader_id IS NOT NULL AND lease_expires_at > clock_timestamp(), false) AS live FROM locked
), decided AS (
  SELECT ns, leader_id, term, live, (live AND leader_id = CAST(${candidateId} AS varchar)) AS renewing,
    (NOT live OR leader_id = CAST(${candidateId} AS varchar)) AS takes
  FROM seen
), lease AS (
  UPDATE ${leaders} AS l
  SET leader_id = CAST(${candidateId} AS varchar), term = CASE WHEN decided.renewing THEN decided.term ELSE decided.term + 1 END,
    lease_expires_at = ${d.nowPlus(expireSeconds)}, updated_at = clock_timestamp()
  FROM decided WHERE l.ns = decided.ns AND decided.takes
  RETURNING l.ns, l.leader_id, l.term
), touch AS (
  INSERT INTO ${candidates} (ns, candidate_id, last_heartbeat_at, expires_at)
  SELECT ns, CAST(${candidateId} AS varchar), clock_timestamp(), ${d.nowPlus(expireSeconds)} FROM decided
  ON CONFLICT (ns, candidate_id) DO UPDATE SET last_heartbeat_at = EXCLUDED.last_heartbeat_at, expires_at = EXCLUDED.expires_at
), announced AS (
  SELECT pg_notify(CAST(${NOTIFY_CHANNEL} AS text), json_build_object('ns', lease.ns, 'leaderId', lease.leader_id, 'term', lease.term)::text)
  FROM lease, decided WHERE NOT decided.renewing
)
SELECT decided.leader_id, decided.term, decided.renewing, decided.takes, lease.term AS new_term,
  (SELECT count(*) FROM announced) AS announced
FROM decided LEFT JOIN lease ON true`,
            );
            if (!row) return undefined;
            const takes = sqlBool(row.takes);
            return {
              leaderId: takes ? candidateId : (row.leader_id as string),
              term: Number(takes ? row.new_term : row.term),
              isLeader: takes,
              acquired: takes && !sqlBool(row.renewing),
            };
          },

    /** Gives the lease to `leaderId` under `term` until now + expireSeconds. */
    async setLeader(m: EntityManager, ns: string, leaderId: string, term: number, expireSeconds: number): Promise<void> {
      await execute(
        context,
        m,
        sql`UPDATE ${leaders} SET leader_id = ${leaderId}, term = ${term}, lease_expires_at = ${d.nowPlus(expireSeconds)}, updated_at = ${d.now}
WHERE ns = ${ns}`,
      );
    },

    /** Clears leader_id and lease_expires_at (the term stays: the next leader gets term + 1). */
    async vacate(m: EntityManager, ns: string): Promise<void> {
      await execute(context, m, sql`UPDATE ${leaders} SET leader_id = NULL, lease_expires_at = NULL, updated_at = ${d.now} WHERE ns = ${ns}`);
    },

    async deleteCandidate(m: EntityManager, ns: string, candidateId: string): Promise<void> {
      await execute(context, m, sql`DELETE FROM ${candidates} WHERE ns = ${ns} AND candidate_id = ${candidateId}`);
    },

    async isLeader(m: EntityManager, ns: string, candidateId: string): Promise<boolean> {
      const rows = await execute(
        context,
        m,
        sql`SELECT 1 AS yes FROM ${leaders} WHERE ns = ${ns} AND leader_id = ${candidateId} AND lease_expires_at > ${d.now}`,
      );
      return rows.length > 0;
    },

    async activeCandidates(m: EntityManager, ns: string): Promise<string[]> {
      const rows = await execute<{ candidate_id: string }>(
        context,
        m,
        sql`SELECT candidate_id FROM ${candidates} WHERE ns = ${ns} AND expires_at > ${d.now}`,
      );
      // Sorted here, not by ORDER BY: collations differ between databases.
      return rows.map((row) => row.candidate_id).sort();
    },

    /** Announces a lease change to LISTENers (PostgreSQL only; delivered when the transaction commits). */
    async announce(m: EntityManager, change: LeaseChange): Promise<void> {
      if (d.name !== 'postgres') return;
      await execute(context, m, sql`SELECT pg_notify(${NOTIFY_CHANNEL}, ${JSON.stringify(change)})`);
    },
  };
}

export type ElectionStore = ReturnType<typeof createStore>;
