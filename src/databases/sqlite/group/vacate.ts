import { sql } from '../../../db/sql';
import type { VacateReason } from '../../../election/group-tick';
import { GroupContext, inInput, nowOnce as clockOnce, runGroupProgram } from './group-context';

/*
 * Vacates many leases in ONE program (the leases given up by a group, which SQLite does not fold
 * into the tick): the caller's live leases read first (what it returns), each term of the
 * caller's closed (the reason, or `expired` at its lease's end if it had lapsed, by the clock of
 * that statement), the rows vacated; with `unregister` the caller's candidate rows deleted too.
 */

/** Returns the namespaces whose unexpired lease was vacated. */
export async function vacateSqlite(gc: GroupContext, namespaces: readonly string[], me: string, reason: VacateReason, unregister: boolean): Promise<string[]> {
  const { leaders, history, candidates } = gc.t;
  const inNs = inInput(JSON.stringify(namespaces));
  const nowOnce = clockOnce(gc);
  const statements = [
    sql`SELECT ns FROM ${leaders} WHERE ns ${inNs} AND leader_id = ${me} AND lease_expires_at > ${nowOnce}`,
    sql`UPDATE ${history} SET
  end_reason = (SELECT CASE WHEN l.lease_expires_at > ${nowOnce} THEN ${reason} ELSE ${'expired'} END FROM ${leaders} l WHERE l.ns = ${history}.ns),
  ended_at = (SELECT CASE WHEN l.lease_expires_at > ${nowOnce} THEN ${nowOnce} ELSE l.lease_expires_at END FROM ${leaders} l WHERE l.ns = ${history}.ns)
WHERE ended_at IS NULL AND (ns, term) IN (SELECT l.ns, l.term FROM ${leaders} l WHERE l.ns ${inNs} AND l.leader_id = ${me})`,
    sql`UPDATE ${leaders} SET leader_id = NULL, lease_expires_at = NULL, updated_at = ${nowOnce} WHERE ns ${inNs} AND leader_id = ${me}`,
    ...(unregister ? [sql`DELETE FROM ${candidates} WHERE ns ${inNs} AND candidate_id = ${me}`] : []),
  ];
  const results = await runGroupProgram(gc, `group:vacate:${unregister ? 'u' : ''}`, statements);
  return (results[0] ?? []).map((r) => String(r.ns));
}
