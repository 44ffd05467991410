import { raw, RawSql, slot, sql, SqlFragment } from '../../db/sql';
import { DEFAULT_ELIGIBLE, DEFAULT_PRIORITY } from '../../election/validate';

/**
 * The caller's standing in its namespace, as PostgreSQL's `elect` statements judge it (the rule of
 * `decide` in `election/decision.ts`), in one aggregate over the namespace's candidate rows: a
 * `CROSS JOIN LATERAL` named `st` on the row `row` (whose `ns` it reads), giving
 * - `registered`: the caller has a candidate row;
 * - `eligible`, `priority`: the call's options (slots `eligible`, `priority`), else the caller's
 *   stored values, else the defaults;
 * - `rival_priority`: the highest priority among the other live eligible candidates, judged by
 *   `clock_timestamp()` (null when there is none).
 * Written once for the whole statement (`elect.ts`) and the leader's renewal (`renew.ts`).
 */
export function standingOf(candidates: RawSql, row: string, me: SqlFragment): SqlFragment {
  return sql`CROSS JOIN LATERAL (
    SELECT COALESCE(bool_or(c.candidate_id = ${me}), false) AS registered,
      COALESCE(CAST(${slot('eligible')} AS boolean), bool_or(c.eligible) FILTER (WHERE c.candidate_id = ${me}), ${raw(String(DEFAULT_ELIGIBLE))}) AS eligible,
      COALESCE(CAST(${slot('priority')} AS integer), max(c.priority) FILTER (WHERE c.candidate_id = ${me}), ${raw(String(DEFAULT_PRIORITY))}) AS priority,
      max(c.priority) FILTER (WHERE c.candidate_id <> ${me} AND c.eligible AND c.expires_at > clock_timestamp()) AS rival_priority
    FROM ${candidates} c WHERE c.ns = ${raw(row)}.ns
  ) st`;
}
