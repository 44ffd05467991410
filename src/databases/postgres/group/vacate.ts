import type { EntityManager } from 'typeorm';
import { execute } from '../../../db/session';
import { raw, sql } from '../../../db/sql';
import type { VacateReason } from '../../../election/group-tick';
import { GroupContext, parseJson } from './group-context';

/*
 * Vacates many leases in ONE statement: every lease of the namespaces the caller holds (a lapsed
 * one naming it too) is locked, its term closed with the reason (`expired` at its lease's end if
 * it had lapsed), its row vacated and the vacancy announced; with `unregister` the caller's
 * candidate rows are deleted too.
 */

/** Returns the namespaces whose unexpired lease was vacated. */
export async function vacatePostgres(
  gc: GroupContext,
  m: EntityManager,
  namespaces: readonly string[],
  me: string,
  reason: VacateReason,
  unregister: boolean,
): Promise<string[]> {
  const { context, t: { leaders, history, candidates }, announcement } = gc;
  const id = sql`CAST(${me} AS varchar)`;
  const nss = raw('CAST((SELECT nss FROM params) AS varchar[])');
  const [row] = await execute(
    context,
    m,
    sql`WITH params AS (
  SELECT CAST(${[...namespaces]} AS varchar[]) AS nss
), locked AS (
  SELECT ns, term, lease_expires_at, COALESCE(lease_expires_at > clock_timestamp(), false) AS live FROM ${leaders}
  WHERE ns = ANY (${nss}) AND leader_id = ${id} ORDER BY ns FOR UPDATE
), closed AS (
  UPDATE ${history} AS h SET ended_at = CASE WHEN k.live THEN clock_timestamp() ELSE k.lease_expires_at END,
    end_reason = CASE WHEN k.live THEN CAST(${reason} AS varchar) ELSE CAST(${'expired'} AS varchar) END
  FROM locked k WHERE h.ns = k.ns AND h.term = k.term AND h.ended_at IS NULL
), vacated AS (
  UPDATE ${leaders} AS l SET leader_id = NULL, lease_expires_at = NULL, updated_at = clock_timestamp()
  FROM locked k WHERE l.ns = k.ns RETURNING l.ns, l.term, k.live
), deleted AS (
  DELETE FROM ${candidates} WHERE CAST(${unregister} AS boolean) AND ns = ANY (${nss}) AND candidate_id = ${id}
    AND (SELECT count(*) FROM locked) >= 0
), announced AS (
  SELECT ${announcement(raw('v.ns'), raw('NULL'), raw('v.term'))} FROM vacated v
)
SELECT (SELECT json_agg(ns) FROM vacated WHERE live) AS vacated, (SELECT count(*) FROM announced) AS announced`,
  );
  return ((parseJson(row?.vacated) ?? []) as string[]).map(String);
}
