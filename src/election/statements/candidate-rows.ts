import { sqlBool } from '../../databases/dialect';
import { sql, SqlFragment } from '../../db/sql';
import type { CandidateRow } from '../rows';
import type { ElectionTables } from '../tables';
import { parseMetadata } from '../validate';

/*
 * The reads of a namespace's active candidates (unexpired by the statement's clock): their ids,
 * or their rows with everything they said about themselves. Both are sorted in JavaScript, not
 * by ORDER BY: collations differ between databases.
 */

/** The ids of the active candidates of `ns`. */
export function activeCandidatesStatement({ d, candidates }: ElectionTables, ns: string): SqlFragment {
  return sql`SELECT candidate_id FROM ${candidates} WHERE ns = ${ns} AND expires_at > ${d.now}`;
}

/** What {@link activeCandidatesStatement} read, sorted. */
export function toActiveCandidates(rows: Record<string, unknown>[]): string[] {
  return rows.map((row) => String(row.candidate_id)).sort();
}

/** The active candidates of `ns` with everything they said about themselves. */
export function candidateRowsStatement({ d, candidates }: ElectionTables, ns: string): SqlFragment {
  return sql`SELECT candidate_id, ${d.instant('last_heartbeat_at')} AS last_heartbeat_at, ${d.instant('expires_at')} AS expires_at,
  priority, eligible, metadata FROM ${candidates} WHERE ns = ${ns} AND expires_at > ${d.now}`;
}

/** What {@link candidateRowsStatement} read, sorted by id. */
export function toCandidateRows({ d }: ElectionTables, rows: Record<string, unknown>[]): CandidateRow[] {
  return rows
    .map((row) => ({
      candidateId: String(row.candidate_id),
      lastHeartbeatAt: d.parseInstant(row.last_heartbeat_at) as Date,
      expiresAt: d.parseInstant(row.expires_at) as Date,
      priority: Number(row.priority),
      eligible: sqlBool(row.eligible),
      metadata: parseMetadata(row.metadata),
    }))
    .sort((a, b) => (a.candidateId < b.candidateId ? -1 : a.candidateId > b.candidateId ? 1 : 0));
}
