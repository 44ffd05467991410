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
