import type { EntityManager } from 'typeorm';
import { sql } from '../../../db/sql';
import { GROUP_BATCH_SIZE, VacateReason } from '../../../election/group-tick';
import { sqlBool } from '../../dialect';
import { GroupContext, run } from './group-context';
import { chunks, list } from './lists';

/*
 * Vacating leases the caller holds, many at once: the statements both the tick's release (the
 * leases given up, tick-release.ts) and the vacate of many leases run, on rows the caller has
 * locked: each term closed (with the reason, or `expired` at its lease's end if it had lapsed),
 * then the rows vacated.
 */

/** Closes the open terms of the leases of `names` the caller `me` holds: `reason` if live, `expired` at the lease's end if lapsed. */
export async function closeHeldTerms(gc: GroupContext, m: EntityManager, names: readonly string[], me: string, reason: VacateReason): Promise<void> {
  const { d, leaders, history } = gc.t;
  await run(
    gc,
    m,
    sql`UPDATE ${history} h JOIN ${leaders} l ON l.ns = h.ns AND l.term = h.term
SET h.end_reason = CASE WHEN l.lease_expires_at > ${d.now} THEN ${reason} ELSE ${'expired'} END,
  h.ended_at = CASE WHEN l.lease_expires_at > ${d.now} THEN ${d.now} ELSE l.lease_expires_at END
WHERE h.ns IN ${list(names)} AND h.ended_at IS NULL AND l.leader_id = ${me}`,
  );
}

/** Vacates the leases of `names` the caller `me` holds (the term stays: the next leader gets term + 1). */
export async function vacateHeld(gc: GroupContext, m: EntityManager, names: readonly string[], me: string): Promise<void> {
  const { d, leaders } = gc.t;
  await run(gc, m, sql`UPDATE ${leaders} SET leader_id = NULL, lease_expires_at = NULL, updated_at = ${d.now} WHERE ns IN ${list(names)} AND leader_id = ${me}`);
}

/**
 * Vacates every lease of `namespaces` the caller holds (a lapsed one naming it too), locked in
 * namespace order, batch by batch; with `unregister` also deletes its candidate rows. Returns the
 * namespaces whose unexpired lease was vacated.
 */
export async function vacateMysql(gc: GroupContext, m: EntityManager, namespaces: readonly string[], me: string, reason: VacateReason, unregister: boolean): Promise<string[]> {
  const { d, leaders, candidates } = gc.t;
  const vacated: string[] = [];
  for (const batch of chunks(namespaces, GROUP_BATCH_SIZE)) {
    const held = await run(
      gc,
      m,
      sql`SELECT ns, CASE WHEN lease_expires_at > ${d.now} THEN 1 ELSE 0 END AS live FROM ${leaders}
WHERE ns IN ${list(batch)} AND leader_id = ${me} ORDER BY ns FOR UPDATE`,
    );
    if (held.length > 0) {
      const names = held.map((r) => String(r.ns));
      for (const r of held) if (sqlBool(r.live)) vacated.push(String(r.ns));
      await closeHeldTerms(gc, m, names, me, reason);
      await vacateHeld(gc, m, names, me);
    }
    if (unregister) await run(gc, m, sql`DELETE FROM ${candidates} WHERE ns IN ${list(batch)} AND candidate_id = ${me}`);
  }
  return vacated;
}
