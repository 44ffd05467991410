import { sql, SqlFragment } from '../../../db/sql';
import type { TickSql } from './tick-sql';

/*
 * The group tick's locks: the namespaces asked for (`input`) as of the statement's snapshot
 * (`snap`); with a lock wait, the caller's own live leases locked first, WAITING (`own`); then the
 * rows the tick may change locked without waiting (`locked`). What is locked and still as the
 * snapshot saw it is `seen`; rows held by others are `unlocked` (reported, never locked); rows not
 * created yet are `missing`.
 */

/** `input` … `missing`. */
export function lockCtes(x: TickSql): SqlFragment {
  const { t: { leaders }, me, nss, wait } = x;
  return sql`input AS (
  SELECT DISTINCT x AS ns FROM unnest(${nss}) AS x
), snap AS (
  -- The rows as of the statement's snapshot (a plain read): what the history and candidates read here match.
  SELECT l.ns, l.leader_id, l.term FROM ${leaders} l WHERE l.ns = ANY (${nss})
), ${
        wait === undefined
          ? sql``
          : sql`own AS (
  -- The leases this candidate holds, live: locked first, in namespace order, WAITING for a lock
  -- another transaction holds (its own fenced transactions hold these rows for a moment, and a
  -- lease must not be lost to them), each wait bounded by lock_timeout (set in params first).
  SELECT l.ns FROM ${leaders} l
  WHERE l.ns = ANY (${nss}) AND l.leader_id = ${me} AND l.lease_expires_at > clock_timestamp()
    AND (SELECT lock_timeout FROM params) IS NOT NULL
  ORDER BY l.ns FOR UPDATE
), `
      }locked AS (
  -- SKIP LOCKED: the other rows are never waited for. A row locked by another transaction (a
  -- rival's takeover or tick, a vacate) is left for the next tick, so ticks of many namespaces do
  -- not convoy. With own: only once own has locked all its rows (the count), and own's rows,
  -- locked by this statement already, are not skipped.
  SELECT l.ns, l.leader_id, l.term, l.lease_expires_at FROM ${leaders} l
  WHERE l.ns = ANY (${nss})
    AND (l.leader_id IS NULL OR l.leader_id = ${me} OR l.lease_expires_at IS NULL OR l.lease_expires_at <= clock_timestamp())${
      wait === undefined ? sql`` : sql`
    AND (SELECT count(*) FROM own) >= 0`
    }
  ORDER BY l.ns FOR UPDATE SKIP LOCKED
), seen AS (
  -- Only rows whose term and holder are the snapshot's: a row taken over (or vacated) by a
  -- transaction that committed after the statement began is locked in its newest version, but
  -- that term's history row and the candidates as that transaction left them are invisible to
  -- this statement's snapshot; it is unknown this tick.
  SELECT k.ns, k.leader_id, k.term, k.lease_expires_at, COALESCE(k.leader_id IS NOT NULL AND k.lease_expires_at > clock_timestamp(), false) AS live
  FROM locked k JOIN snap s ON s.ns = k.ns AND s.term = k.term AND s.leader_id IS NOT DISTINCT FROM k.leader_id
), seen_set AS MATERIALIZED (
  -- seen's namespaces as one jsonb object (ns -> true), looked up by key (see released_set).
  SELECT COALESCE(jsonb_object_agg(s.ns, true), CAST('{}' AS jsonb)) AS m FROM seen s
), unlocked AS (
  -- Held by someone else (not locked), as of the snapshot, and not in seen; a row skipped as
  -- locked, or that changed hands after the snapshot, is in neither (unknown).
  SELECT l.ns, l.leader_id, l.term FROM ${leaders} l
  WHERE l.ns = ANY (${nss}) AND l.leader_id IS NOT NULL AND l.leader_id <> ${me} AND l.lease_expires_at > clock_timestamp()
    AND (SELECT m FROM seen_set) -> CAST(l.ns AS text) IS NULL
), missing AS (
  SELECT i.ns FROM input i WHERE NOT EXISTS (SELECT 1 FROM ${leaders} l WHERE l.ns = i.ns)
)`;
}
