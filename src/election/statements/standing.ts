import { sqlBool } from '../../databases/dialect';
import { raw, sql, SqlFragment } from '../../db/sql';
import type { Standing } from '../rows';
import type { ElectionTables } from '../tables';

/*
 * The caller's {@link Standing} in a namespace (its own candidate row, the best rival's
 * priority), read as three columns next to the leader row: what `decide` needs besides the row.
 */

/**
 * The standing columns `my_priority`, `my_eligible`, `rival_priority` of `me` for the leader row
 * aliased `alias`. The subqueries are plain reads, also under FOR UPDATE (which locks the leader row only).
 */
export function standingColumns({ d, candidates }: ElectionTables, alias: string, me: string): SqlFragment {
  const l = raw(alias);
  return sql`(SELECT c.priority FROM ${candidates} c WHERE c.ns = ${l}.ns AND c.candidate_id = ${me}) AS my_priority,
  (SELECT c.eligible FROM ${candidates} c WHERE c.ns = ${l}.ns AND c.candidate_id = ${me}) AS my_eligible,
  (SELECT MAX(c.priority) FROM ${candidates} c WHERE c.ns = ${l}.ns AND c.candidate_id <> ${me} AND c.eligible AND c.expires_at > ${d.now}) AS rival_priority`;
}

/** A standing as read by the columns `my_priority`, `my_eligible`, `rival_priority` (absent or NULL: no such row). */
export function toStanding(raw: Record<string, unknown>): Standing {
  const present = (value: unknown) => value !== null && value !== undefined;
  return {
    registered: present(raw.my_priority),
    storedPriority: present(raw.my_priority) ? Number(raw.my_priority) : null,
    storedEligible: present(raw.my_eligible) ? sqlBool(raw.my_eligible) : null,
    rivalPriority: present(raw.rival_priority) ? Number(raw.rival_priority) : null,
  };
}
