import type { EntityManager } from 'typeorm';
import { sql } from '../../../db/sql';
import type { GroupElectInput } from '../../../election/group-tick';
import { sqlBool } from '../../dialect';
import { GroupContext, run } from './group-context';
import { list } from './lists';

/*
 * Step 2 of the group tick: the candidates of its namespaces, by a plain read (the leader rows are
 * locked already): where the caller is registered, the best rival priority per namespace, and the
 * top-priority candidates of the group (`members`, the fair share's divisor).
 */

export interface TickCandidates {
  /** The highest priority of the other live eligible candidates, per namespace. */
  readonly rival: Map<string, number>;
  /** The namespaces where the caller has a candidate row. */
  readonly registered: Set<string>;
  /** The top-priority live eligible candidates (this one included when it qualifies), sorted. */
  readonly members: string[];
}

export async function readCandidates(gc: GroupContext, m: EntityManager, input: GroupElectInput, batches: readonly string[][]): Promise<TickCandidates> {
  const { d, candidates } = gc.t;
  const me = input.candidateId;
  const rival = new Map<string, number>();
  const others = new Map<string, number>();
  const registered = new Set<string>();
  for (const batch of batches) {
    const found = await run(
      gc,
      m,
      sql`SELECT ns, candidate_id, priority, CASE WHEN eligible AND expires_at > ${d.now} THEN 1 ELSE 0 END AS live_eligible
FROM ${candidates} WHERE ns IN ${list(batch)} AND (candidate_id = ${me} OR (eligible AND expires_at > ${d.now}))`,
    );
    for (const r of found) {
      const ns = String(r.ns);
      const id = String(r.candidate_id);
      if (id === me) {
        registered.add(ns);
        continue;
      }
      if (!sqlBool(r.live_eligible)) continue;
      const p = Number(r.priority);
      rival.set(ns, Math.max(rival.get(ns) ?? -Infinity, p));
      others.set(id, Math.max(others.get(id) ?? -Infinity, p));
    }
  }
  return { rival, registered, members: membersOf(others, input) };
}

/** The top-priority live eligible candidates (this one included when it qualifies), sorted. */
function membersOf(others: Map<string, number>, input: GroupElectInput): string[] {
  let top = input.eligible ? input.priority : -Infinity;
  for (const p of others.values()) top = Math.max(top, p);
  const members = [...others].filter(([, p]) => p === top).map(([id]) => id);
  if (input.eligible && input.priority === top) members.push(input.candidateId);
  return members.sort();
}
