import { sql } from '../../../db/sql';
import type { StepDownReason } from '../../../election/decision';
import { deleteCandidateStatement } from '../../../election/statements/candidate-writes';
import { ProgramContext, readLeader, toRow, vacateIfHeld, write } from './program-context';

/*
 * The programs that end a candidate's lease: resign (or hand-over) and unregister. Each closes
 * the term first (by the clock of that statement: `expired` at the lease's end if it had run
 * out), then vacates the lease if the caller holds it, in one transaction.
 */

/**
 * resign (or hand-over): true only if the caller held an unexpired lease; a lapsed one naming
 * it is vacated too. Whether it was unexpired is what closing its term decided (`expired` or
 * not, by the clock of that statement); a lease without a history row is judged by the read.
 */
export async function resignProgram(pc: ProgramContext, ns: string, id: string, reason: StepDownReason): Promise<boolean> {
  const { leaders, history } = pc.t;
  const [before, , closed] = await write(pc, [
    readLeader(pc, ns),
    pc.history.closeTerm(ns, reason, undefined, id),
    sql`SELECT h.end_reason FROM ${history} h JOIN ${leaders} l ON l.ns = h.ns AND l.term = h.term WHERE l.ns = ${ns} AND l.leader_id = ${id}`,
    vacateIfHeld(pc, ns, id),
  ]);
  const row = toRow(pc, before);
  if (row?.leaderId !== id) return false;
  const ended = closed?.[0];
  return ended ? ended.end_reason === reason : row.live;
}

/** unregister: the term closed `unregistered` (if the caller leads), the lease vacated, the candidate row deleted. */
export async function unregisterProgram(pc: ProgramContext, ns: string, id: string): Promise<void> {
  await write(pc, [
    pc.history.closeTerm(ns, 'unregistered', undefined, id),
    vacateIfHeld(pc, ns, id),
    deleteCandidateStatement(pc.t, ns, id),
  ]);
}
