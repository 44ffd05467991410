import { sqlBool } from '../../databases/dialect';
import { raw, RawSql, sql, SqlFragment } from '../../db/sql';
import type { LeaderRow } from '../rows';
import type { ElectionTables } from '../tables';
import { parseMetadata } from '../validate';

/*
 * The leader row as every read of the election selects it (`leaderColumns`) and reads it back
 * (`toLeaderRow`), and the plain reads of it. Every instant comes from the database clock
 * (`dialect.now`): whether the lease is live is judged by the statement that reads the row.
 */

/** The columns of a leader row as {@link toLeaderRow} reads them, from the table aliased `alias`. */
export function leaderColumns({ d, candidates }: ElectionTables, alias: string): string {
  return [
    `${alias}.ns AS ns`,
    `${alias}.leader_id AS leader_id`,
    `${alias}.term AS term`,
    `CASE WHEN ${alias}.lease_expires_at > ${d.now.text} THEN 1 ELSE 0 END AS live`,
    `${d.instant(`${alias}.lease_expires_at`).text} AS lease_expires_at`,
    `${d.instant(`${alias}.updated_at`).text} AS updated_at`,
    `${d.instant(d.now.text).text} AS db_now`,
    // A scalar subquery, not a join: PostgreSQL refuses FOR UPDATE on the nullable side of an outer join.
    `(SELECT c.metadata FROM ${candidates.text} c WHERE c.ns = ${alias}.ns AND c.candidate_id = ${alias}.leader_id) AS metadata`,
  ].join(', ');
}

/** A leader row as {@link leaderColumns} selected it. */
export function toLeaderRow({ d }: ElectionTables, raw: Record<string, unknown>): LeaderRow {
  const leaderId = (raw.leader_id as string | null) ?? null;
  return {
    ns: String(raw.ns),
    leaderId,
    term: Number(raw.term),
    live: leaderId !== null && sqlBool(raw.live),
    leaseExpiresAt: d.parseInstant(raw.lease_expires_at),
    updatedAt: d.parseInstant(raw.updated_at) as Date,
    metadata: parseMetadata(raw.metadata),
    now: d.parseInstant(raw.db_now) as Date,
  };
}

/** The leader row of `ns` with the `standing` columns, read with `lock` appended (a locking clause or nothing). */
export function selectLeaderRow(t: ElectionTables, ns: string, standing: RawSql | SqlFragment, lock: RawSql): SqlFragment {
  return sql`SELECT ${raw(leaderColumns(t, 'l'))}${standing} FROM ${t.leaders} l WHERE l.ns = ${ns}${lock}`;
}

/** The leader row of `ns` without a lock (for reads that change nothing). */
export function readLeaderStatement(t: ElectionTables, ns: string): SqlFragment {
  return sql`SELECT ${raw(leaderColumns(t, 'l'))} FROM ${t.leaders} l WHERE l.ns = ${ns}`;
}

/** {@link readLeaderStatement} plus whether `candidateId` has a candidate row (`registered`, a count). */
export function readLeaderForStatement(t: ElectionTables, ns: string, candidateId: string): SqlFragment {
  return sql`SELECT ${raw(leaderColumns(t, 'l'))}, (SELECT COUNT(*) FROM ${t.candidates} c WHERE c.ns = l.ns AND c.candidate_id = ${candidateId}) AS registered
FROM ${t.leaders} l WHERE l.ns = ${ns}`;
}

/** One row (`yes`) when `candidateId` holds the lease of `ns`, unexpired by the statement's clock. */
export function isLeaderStatement({ d, leaders }: ElectionTables, ns: string, candidateId: string): SqlFragment {
  return sql`SELECT 1 AS yes FROM ${leaders} WHERE ns = ${ns} AND leader_id = ${candidateId} AND lease_expires_at > ${d.now}`;
}
