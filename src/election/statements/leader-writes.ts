import { sql, SqlFragment } from '../../db/sql';
import type { ElectionTables } from '../tables';

/*
 * The writes of a leader row on the general path, each run after the row was read under its
 * lock: its creation (vacant, term 0), the grant of the lease, its vacancy, and the WHERE of a
 * renewal (which each database runs its own way, judged by the rows it matched).
 */

/** Creates a vacant leader row (term 0) unless one exists: never a duplicate-key error. */
export function ensureLeaderRowStatement({ d, leaders }: ElectionTables, ns: string): SqlFragment {
  return sql`INSERT INTO ${leaders} (ns, leader_id, lease_expires_at, updated_at, term)
VALUES (${ns}, NULL, NULL, ${d.now}, 0)
${d.insertIfAbsent(['ns'])}`;
}

/** Which row a renewal extends: the caller's lease under its term, unexpired by the writing statement's clock. */
export function renewWhere({ d }: ElectionTables, ns: string, candidateId: string, term: number): SqlFragment {
  return sql`WHERE ns = ${ns} AND leader_id = ${candidateId} AND term = ${term} AND lease_expires_at > ${d.now}`;
}

/** Grants the lease of `ns` to `leaderId` under `term`, until now + expireSeconds. */
export function setLeaderStatement({ d, leaders }: ElectionTables, ns: string, leaderId: string, term: number, expireSeconds: number): SqlFragment {
  return sql`UPDATE ${leaders} SET leader_id = ${leaderId}, term = ${term}, lease_expires_at = ${d.nowPlus(expireSeconds)}, updated_at = ${d.now}
WHERE ns = ${ns}`;
}

/** Clears leader_id and lease_expires_at (the term stays: the next leader gets term + 1). */
export function vacateStatement({ d, leaders }: ElectionTables, ns: string): SqlFragment {
  return sql`UPDATE ${leaders} SET leader_id = NULL, lease_expires_at = NULL, updated_at = ${d.now} WHERE ns = ${ns}`;
}
