import { decide } from '../../../election/decision';
import { fairShare, GroupElectInput, GroupNsOutcome, unknownOutcome } from '../../../election/group-tick';
import type { TickCandidates } from './tick-candidates';
import type { TickRow, TickRows } from './tick-lock';

/*
 * Step 3 of the group tick: the decision, in JavaScript, namespace by namespace, as `elect` makes
 * it (`decide`, election/decision.ts), on the rows read under their locks; balance caps the
 * acquisitions at the caller's fair share of the top-priority members, less what it holds.
 */

export interface TickDecision {
  /** The namespaces whose lease the caller renews. */
  readonly renew: string[];
  /** The rows whose lease the caller takes (term + 1). */
  readonly take: TickRow[];
  readonly outcomes: GroupNsOutcome[];
}

/** Decides every namespace of the tick; a row deleted behind the tick's back is forgotten from `known` (created again next tick). */
export function decideTick(input: GroupElectInput, { rows, skipped }: TickRows, { rival, registered, members }: TickCandidates, known: Set<string>): TickDecision {
  const me = input.candidateId;
  let held = 0;
  for (const row of rows.values()) if (row.live && row.leaderId === me) held++;
  let quota = input.balance ? Math.max(0, fairShare(input.namespaces.length, members, me) - held) : Infinity;
  const renew: string[] = [];
  const take: TickRow[] = [];
  const outcomes: GroupNsOutcome[] = [];
  for (const ns of input.namespaces) {
    const row = rows.get(ns);
    if (skipped.has(ns)) {
      outcomes.push(unknownOutcome(ns));
      continue;
    }
    if (!row) {
      // Deleted behind our back after we saw it: created again by the next tick.
      known.delete(ns);
      outcomes.push(unknownOutcome(ns));
      continue;
    }
    const standing = { registered: registered.has(ns), storedPriority: null, storedEligible: null, rivalPriority: rival.get(ns) ?? null };
    const { renewing, takes, handOver } = decide(row, me, standing, { priority: input.priority, eligible: input.eligible });
    if (renewing) {
      renew.push(ns);
      outcomes.push({ ns, leaderId: me, term: row.term, isLeader: true, acquired: false, handOver });
    } else if (takes && quota > 0) {
      quota--;
      take.push(row);
      outcomes.push({ ns, leaderId: me, term: row.term + 1, isLeader: true, acquired: true, handOver: false });
    } else {
      outcomes.push({ ns, leaderId: row.live ? row.leaderId : null, term: row.term, isLeader: false, acquired: false, handOver: false });
    }
  }
  return { renew, take, outcomes };
}
