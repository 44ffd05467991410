import { raw, sql, SqlFragment } from '../../../db/sql';
import type { TickSql } from './tick-sql';

/*
 * The group tick's writes: the leases taken or renewed (`lease`, each renewal judged again by the
 * clock of its write), the rows created for new namespaces (`created`), the caller's heartbeat
 * (`touch`), the lapsed terms of the leases taken over closed (`closed`) and the new terms opened
 * (`opened`) and announced; `written` keeps what `lease` wrote for the result.
 */

/** `lease` … `written`. */
export function writeCtes(x: TickSql): SqlFragment {
  const { t: { candidates, leaders, history }, announcement, me, eligible, priority, until, metaColumn, metaValue, metaUpdate } = x;
  return sql`lease AS (
  -- A renewal is decided again when it is written: the statement may have waited (in own, for
  -- another leader row's lock) since the rows were read, and a lease that ran out meanwhile is a takeover by the
  -- database clock (term + 1, the lapsed term closed below), never the same term resurrected.
  UPDATE ${leaders} AS l
  SET leader_id = ${me}, term = CASE WHEN d.renewing AND (d.hand_over OR l.lease_expires_at > clock_timestamp()) THEN d.term ELSE d.term + 1 END,
    lease_expires_at = ${until}, updated_at = clock_timestamp()
  FROM decided d WHERE l.ns = d.ns AND d.existing AND d.takes
    -- A lease to be given up that ran out meanwhile is not taken again (judged here once: one
    -- that passes is renewed under its term above).
    AND NOT (d.hand_over AND l.lease_expires_at <= clock_timestamp())
  RETURNING l.ns, l.term, l.term = d.term AS renewing, d.leader_id AS old_leader, d.term AS old_term, d.lease_expires_at AS old_lease,
    l.updated_at AS granted_at
), created AS (
  INSERT INTO ${leaders} (ns, leader_id, lease_expires_at, updated_at, term)
  SELECT d.ns, CASE WHEN d.takes THEN ${me} END, CASE WHEN d.takes THEN ${until} END, clock_timestamp(), CASE WHEN d.takes THEN 1 ELSE 0 END
  FROM decided d WHERE NOT d.existing ORDER BY d.ns
  ON CONFLICT (ns) DO NOTHING
  RETURNING ns, leader_id, term, updated_at AS granted_at
), touch AS (
  INSERT INTO ${candidates} (ns, candidate_id, last_heartbeat_at, expires_at, priority, eligible${metaColumn})
  SELECT i.ns, ${me}, clock_timestamp(), ${until}, ${priority}, ${eligible}${metaValue} FROM input i
  WHERE (SELECT count(*) FROM decided) >= 0
  ON CONFLICT (ns, candidate_id) DO UPDATE SET last_heartbeat_at = EXCLUDED.last_heartbeat_at, expires_at = EXCLUDED.expires_at,
    priority = EXCLUDED.priority, eligible = EXCLUDED.eligible${metaUpdate}
), taken_over AS MATERIALIZED (
  -- The leases taken from a previous holder (lapsed): their namespaces, and one jsonb object
  -- ns -> {term, ended_at} of the lapsed term (read back typed as the history row's columns).
  SELECT COALESCE(array_agg(x.ns), CAST('{}' AS varchar[])) AS nss,
    COALESCE(jsonb_object_agg(x.ns, jsonb_build_object('term', x.old_term, 'ended_at', x.old_lease)), CAST('{}' AS jsonb)) AS m
  FROM lease x WHERE NOT x.renewing AND x.old_leader IS NOT NULL
), closed AS (
  -- The lapsed term of each lease taken over is closed 'expired' at its lease's end. The history
  -- rows are selected by ns = ANY (the primary key's index) and their term looked up by key in
  -- one row of taken_over, not by joining lease: see released_set.
  UPDATE ${history} AS h SET ended_at = (jsonb_populate_record(CAST(NULL AS ${history}), t.m -> CAST(h.ns AS text))).ended_at,
    end_reason = CAST(${'expired'} AS varchar)
  FROM taken_over t WHERE h.ns = ANY (t.nss)
    AND h.term = (jsonb_populate_record(CAST(NULL AS ${history}), t.m -> CAST(h.ns AS text))).term AND h.ended_at IS NULL
), acquired AS (
  -- Dated by the write that granted the lease (clock_timestamp() moves on while a statement of
  -- thousands of rows runs): a term never begins after its lease's end.
  SELECT ns, term, granted_at FROM lease WHERE NOT renewing
  UNION ALL SELECT ns, term, granted_at FROM created WHERE leader_id IS NOT NULL
), opened AS (
  INSERT INTO ${history} (ns, term, leader_id, acquired_at, ended_at, end_reason)
  SELECT a.ns, a.term, ${me}, a.granted_at, NULL, NULL FROM acquired a
  ON CONFLICT (ns, term) DO UPDATE SET leader_id = EXCLUDED.leader_id, acquired_at = EXCLUDED.acquired_at, ended_at = NULL, end_reason = NULL
), announced AS (
  SELECT ${announcement(raw('a.ns'), sql`${me}`, raw('a.term'))} FROM acquired a
), written AS MATERIALIZED (
  -- lease's rows as one jsonb object ns -> [term, renewing], looked up by key in result instead of
  -- joining decided to lease (see released_set).
  SELECT COALESCE(jsonb_object_agg(x.ns, jsonb_build_array(x.term, x.renewing)), CAST('{}' AS jsonb)) AS m FROM lease x
)`;
}
