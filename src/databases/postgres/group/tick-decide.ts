import { sql, SqlFragment } from '../../../db/sql';
import type { TickSql } from './tick-sql';

/*
 * The group tick's decision, in SQL: the top-priority live eligible candidates of the group
 * (`members`) and the caller's fair share of them (`quota`, as `fairShare` in
 * election/group-tick.ts), then per namespace the rule of `decide` (election/decision.ts): renew,
 * take, hand over, or leave; balance caps the acquisitions at the quota, in namespace order.
 */

/** `others` … `decided`. */
export function decideCtes(x: TickSql): SqlFragment {
  const { t: { candidates }, me, eligible, priority, nss, input } = x;
  return sql`others AS (
  SELECT c.candidate_id, max(c.priority) AS priority FROM ${candidates} c
  WHERE c.ns = ANY (${nss}) AND c.candidate_id <> ${me} AND c.eligible AND c.expires_at > clock_timestamp()
  GROUP BY c.candidate_id
), top AS (
  SELECT GREATEST((SELECT max(priority) FROM others), CASE WHEN ${eligible} THEN ${priority} END) AS priority
), members AS (
  SELECT candidate_id FROM others WHERE priority = (SELECT priority FROM top)
  UNION ALL SELECT ${me} WHERE ${eligible} AND ${priority} = (SELECT priority FROM top)
), quota AS (
  -- fairShare (election/group-tick.ts) of the top-priority members, less what the caller holds.
  SELECT CASE WHEN NOT CAST(${input.balance} AS boolean) THEN NULL
    WHEN NOT EXISTS (SELECT 1 FROM members WHERE candidate_id = ${me}) THEN 0
    ELSE GREATEST(0, m.n / m.k + CASE WHEN m.rank < m.n % m.k THEN 1 ELSE 0 END
      - (SELECT count(*) FROM seen WHERE live AND leader_id = ${me})) END AS n
  FROM (SELECT CAST(${input.namespaces.length} AS bigint) AS n, count(*) AS k,
    count(*) FILTER (WHERE candidate_id COLLATE "C" < ${me} COLLATE "C") AS rank FROM members) m
), base AS (
  -- Every namespace of the group but those held by others: the locked rows, and the missing ones.
  -- The highest priority of the other live eligible candidates, per namespace, by its index.
  SELECT s.ns, true AS existing, s.leader_id, s.term, s.lease_expires_at, s.live, (s.live AND s.leader_id = ${me}) AS renewing,
    COALESCE((SELECT max(c.priority) FROM ${candidates} c WHERE c.ns = s.ns AND c.candidate_id <> ${me} AND c.eligible
      AND c.expires_at > clock_timestamp()) > ${priority}, false) AS outranked
  FROM seen s
  UNION ALL
  SELECT mi.ns, false, NULL, 0, NULL, false, false,
    COALESCE((SELECT max(c.priority) FROM ${candidates} c WHERE c.ns = mi.ns AND c.candidate_id <> ${me} AND c.eligible
      AND c.expires_at > clock_timestamp()) > ${priority}, false)
  FROM missing mi
), numbered AS (
  SELECT b.*, (NOT b.live AND ${eligible} AND NOT b.outranked) AS open,
    row_number() OVER (PARTITION BY (NOT b.live AND ${eligible} AND NOT b.outranked) ORDER BY b.ns) AS i
  FROM base b
), decided AS (
  -- decide() of store.ts per namespace; balance caps the acquisitions at the quota, in namespace order.
  SELECT n.ns, n.existing, n.leader_id, n.term, n.lease_expires_at, n.live, n.renewing,
    (n.renewing OR (n.open AND ((SELECT n FROM quota) IS NULL OR n.i <= (SELECT n FROM quota)))) AS takes,
    (n.renewing AND (NOT ${eligible} OR n.outranked)) AS hand_over
  FROM numbered n
)`;
}
