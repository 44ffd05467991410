import type { EntityManager } from 'typeorm';
import { sql } from '../../../db/sql';
import { GROUP_BATCH_SIZE, GroupElectInput, sortedRelease } from '../../../election/group-tick';
import { GroupContext, run } from './group-context';
import { chunks, list } from './lists';
import { closeHeldTerms, vacateHeld } from './vacate';

/*
 * Step 0 of the group tick: the leases given up, vacated first, in the tick's transaction, rather
 * than renewed. Locked without waiting (SKIP LOCKED): a lease of the caller's locked by another
 * transaction is reported skipped, to retry, never waited for.
 */

export interface Released {
  /** The leases vacated, with their terms. */
  readonly released: Array<{ ns: string; term: number }>;
  /** The leases still held by the caller but locked by another transaction. */
  readonly releaseSkipped: string[];
}

export async function releaseLeases(gc: GroupContext, m: EntityManager, input: GroupElectInput): Promise<Released> {
  const { leaders } = gc.t;
  const me = input.candidateId;
  const released: Array<{ ns: string; term: number }> = [];
  const releaseSkipped: string[] = [];
  for (const batch of chunks(sortedRelease(input), GROUP_BATCH_SIZE)) {
    const ours = await run(gc, m, sql`SELECT ns FROM ${leaders} WHERE ns IN ${list(batch.map(([ns]) => ns))} AND leader_id = ${me}`);
    const held = await run(
      gc,
      m,
      sql`SELECT ns, term FROM ${leaders} WHERE ns IN ${list(batch.map(([ns]) => ns))} AND leader_id = ${me} ORDER BY ns FOR UPDATE SKIP LOCKED`,
    );
    const lockedNs = new Set(held.map((r) => String(r.ns)));
    for (const r of ours) if (!lockedNs.has(String(r.ns))) releaseSkipped.push(String(r.ns));
    if (held.length === 0) continue;
    const reasons = new Map(batch);
    for (const reason of new Set(held.map((r) => reasons.get(String(r.ns))))) {
      const names = held.filter((r) => reasons.get(String(r.ns)) === reason).map((r) => String(r.ns));
      await closeHeldTerms(gc, m, names, me, reason!);
    }
    await vacateHeld(gc, m, held.map((r) => String(r.ns)), me);
    for (const r of held) released.push({ ns: String(r.ns), term: Number(r.term) });
  }
  return { released, releaseSkipped };
}
