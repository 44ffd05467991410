import { sql, SqlFragment } from '../../../db/sql';
import { GroupElectOutcome, GroupNsOutcome, unknownOutcome } from '../../../election/group-tick';
import { parseJson } from './group-context';
import type { TickSql } from './tick-sql';

/*
 * The group tick's answer, in one row: every namespace as decided and written (`result`, as JSON),
 * the members, what was announced, released and skipped, how many namespaces the caller had no
 * candidate row in, and the database clock; and that row read back as the tick's outcome.
 */

/** `result` and the statement's final SELECT. */
export function resultSelect(x: TickSql): SqlFragment {
  const { t: { d, candidates }, me } = x;
  return sql`result AS (
  -- The locked rows as decided and written (each taken one was written: it is locked; x.w: the
  -- row lease wrote, NULL when it wrote none), the created rows as inserted (a racing insert of
  -- the same row leaves it out: unknown), the others' rows.
  SELECT d.ns, CASE WHEN x.w IS NOT NULL THEN ${me} WHEN d.live AND NOT d.takes THEN d.leader_id END AS leader_id,
    COALESCE(CAST(x.w ->> 0 AS bigint), d.term) AS term,
    x.w IS NOT NULL AS leads, COALESCE(NOT CAST(x.w ->> 1 AS boolean), false) AS acquired,
    COALESCE(d.hand_over AND CAST(x.w ->> 1 AS boolean), false) AS hand_over
  FROM decided d CROSS JOIN LATERAL (SELECT (SELECT m FROM written) -> CAST(d.ns AS text) AS w) x WHERE d.existing
  UNION ALL
  SELECT ns, leader_id, term, leader_id IS NOT NULL, leader_id IS NOT NULL, false FROM created
  UNION ALL
  SELECT ns, leader_id, term, false, false, false FROM unlocked
)
SELECT (SELECT json_agg(json_build_object('n', ns, 'l', leader_id, 't', term, 'a', leads, 'q', acquired, 'h', hand_over)) FROM result) AS results,
  (SELECT json_agg(candidate_id) FROM members) AS members,
  (SELECT count(*) FROM announced) AS announced,
  (SELECT json_agg(json_build_object('n', ns, 't', term)) FROM vacated) AS released,
  (SELECT count(*) FROM vacated_announced) AS vacated_announced,
  (SELECT json_agg(ns) FROM release_skipped) AS release_skipped,
  -- Counted by a subplan per namespace (its primary-key lookup), not an anti join the planner
  -- makes a nested loop over a scan of the candidate rows.
  (SELECT count(*) FILTER (WHERE NOT EXISTS (SELECT 1 FROM ${candidates} c WHERE c.ns = i.ns AND c.candidate_id = ${me})) FROM input i) AS unregistered,
  ${d.instant(d.now.text)} AS db_now`;
}

/** The tick's outcome from the row of {@link resultSelect}; a namespace the row does not answer is unknown this tick. */
export function toTickOutcome(x: TickSql, row: Record<string, unknown>): GroupElectOutcome {
  const { t: { d }, input } = x;
  const results = (parseJson(row.results) ?? []) as Array<{ n: string; l: string | null; t: number | string | null; a: boolean; q: boolean; h: boolean }>;
  const outcomes: GroupNsOutcome[] = results.map((r) => ({
    ns: r.n,
    leaderId: r.l,
    term: r.t === null ? null : Number(r.t),
    isLeader: r.a === true,
    acquired: r.q === true,
    handOver: r.h === true,
  }));
  // A row that changed hands while the lock was awaited, or whose racing first insert won: unknown.
  if (outcomes.length < input.namespaces.length) {
    const answered = new Set(outcomes.map((o) => o.ns));
    for (const ns of input.namespaces) {
      if (!answered.has(ns)) outcomes.push(unknownOutcome(ns));
    }
  }
  return {
    outcomes,
    members: ((parseJson(row.members) ?? []) as string[]).map(String).sort(),
    unregistered: Number(row.unregistered),
    databaseNow: d.parseInstant(row.db_now) as Date,
    released: ((parseJson(row.released) ?? []) as Array<{ n: string; t: number | string }>).map((r) => ({ ns: r.n, term: Number(r.t) })),
    releaseSkipped: ((parseJson(row.release_skipped) ?? []) as string[]).map(String),
  };
}
