import { raw, sql, SqlFragment } from '../../../db/sql';
import { lockTimeout } from './lock-timeout';
import type { TickSql } from './tick-sql';

/*
 * The group tick's first CTEs: its parameters (the namespaces as one array; with a lock wait, the
 * transaction's `lock_timeout`, set before any lock is taken) and the leases the caller gives up,
 * vacated in the tick's own statement rather than renewed: locked without waiting, their terms
 * closed, their rows vacated and each vacancy announced; a lease locked by another transaction is
 * reported skipped (`release_skipped`), to retry.
 */

/** `params` … `vacated_announced`. */
export function releaseCtes(x: TickSql): SqlFragment {
  const { t: { leaders, history }, announcement, me, wait, release, input } = x;
  return sql`params AS (
  SELECT CAST(${[...input.namespaces]} AS varchar[]) AS nss${
    wait === undefined
      ? sql``
      : sql`,
    -- For this transaction only: every lock wait of the statement from here on is bounded by it.
    ${lockTimeout(wait)} AS lock_timeout`
  }
), released AS (
  -- The leases given up: vacated here rather than renewed (never waiting: a row locked by a
  -- takeover of a lapsed lease is left to it).
  SELECT l.ns, l.term, l.lease_expires_at, COALESCE(l.lease_expires_at > clock_timestamp(), false) AS live, r.reason
  FROM ${leaders} l JOIN unnest(CAST(${release.map(([ns]) => ns)} AS varchar[]), CAST(${release.map(([, reason]) => reason)} AS varchar[])) AS r (ns, reason)
    ON r.ns = l.ns
  WHERE l.leader_id = ${me} ORDER BY l.ns FOR UPDATE OF l SKIP LOCKED
), released_closed AS (
  UPDATE ${history} AS h SET ended_at = CASE WHEN k.live THEN clock_timestamp() ELSE k.lease_expires_at END,
    end_reason = CASE WHEN k.live THEN k.reason ELSE CAST(${'expired'} AS varchar) END
  FROM released k WHERE h.ns = k.ns AND h.term = k.term AND h.ended_at IS NULL
), vacated AS (
  UPDATE ${leaders} AS l SET leader_id = NULL, lease_expires_at = NULL, updated_at = clock_timestamp()
  FROM released k WHERE l.ns = k.ns RETURNING l.ns, l.term
), released_set AS MATERIALIZED (
  -- The released namespaces as one jsonb object (ns -> true), looked up by key below: a join of
  -- two of the statement's own results is planned from estimates of a row or two (the namespaces
  -- are a parameter the planner cannot count) as a nested loop, N x N comparisons.
  SELECT COALESCE(jsonb_object_agg(k.ns, true), CAST('{}' AS jsonb)) AS m FROM released k
), release_skipped AS (
  SELECT l.ns FROM ${leaders} l WHERE l.ns = ANY (CAST(${release.map(([ns]) => ns)} AS varchar[])) AND l.leader_id = ${me}
    AND (SELECT m FROM released_set) -> CAST(l.ns AS text) IS NULL
), vacated_announced AS (
  SELECT ${announcement(raw('v.ns'), raw('NULL'), raw('v.term'))} FROM vacated v
)`;
}
