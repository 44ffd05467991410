import type { EntityManager } from 'typeorm';
import { NotLeaderError } from '../errors';
import { decideFence, FenceVerdict, LeaseRow } from './decision';
import type { LeaderRow } from './rows';
import type { ElectionStore } from './store';

/**
 * The leader row as {@link decideFence} reads it, at the clock of the read (`row.now`). Liveness
 * is the database's judgement (`row.live`, compared in SQL at the database's precision, finer
 * than milliseconds on PostgreSQL and MariaDB): where milliseconds would round the lease's end
 * and the clock to the same instant, the end handed over is moved just past (or onto) the clock
 * so that branch L agrees with the database.
 */
function leaseRowOf(row: LeaderRow): { lease: LeaseRow; now: number } {
  const now = row.now.getTime();
  const end = row.leaseExpiresAt?.getTime() ?? null;
  const leaseExpiresAt = row.leaderId === null ? null : row.live ? Math.max(end ?? now + 1, now + 1) : Math.min(end ?? now, now);
  return { lease: { leaderId: row.leaderId, term: row.term, leaseExpiresAt }, now };
}

/**
 * THE fencing decision of every path (`assertLeader`, and every fenced write of the library: the
 * runs of schedules, on the general path and in SQLite's programs): {@link decideFence} on the
 * leader row as read (undefined: the namespace has none), for `candidateId` under `term` when given.
 */
export function judgeFence(row: LeaderRow | undefined, candidateId: string, term?: number): FenceVerdict {
  if (row === undefined) return decideFence(undefined, 0, candidateId, term);
  const { lease, now } = leaseRowOf(row);
  return decideFence(lease, now, candidateId, term);
}

/**
 * The {@link NotLeaderError} of a verdict: its leader and term are the verdict's (a passed fence's
 * when `detail` says why the write was refused after it). `term`: the term the caller expected.
 */
export function notLeaderError(ns: string, candidateId: string, verdict: FenceVerdict, term?: number, detail?: string): NotLeaderError {
  return new NotLeaderError({
    ns,
    candidateId,
    leaderId: verdict.leaderId,
    term: verdict.term,
    ...(term !== undefined ? { expectedTerm: term } : {}),
    ...(detail !== undefined ? { detail } : {}),
  });
}

/**
 * The fence of a leader row as read: the error to throw when it fails ({@link judgeFence}),
 * undefined when it passes.
 */
export function fenceError(ns: string, row: LeaderRow | undefined, candidateId: string, term?: number): NotLeaderError | undefined {
  const verdict = judgeFence(row, candidateId, term);
  return verdict.pass ? undefined : notLeaderError(ns, candidateId, verdict, term);
}

/**
 * THE fencing rule, inside the transaction of `m` (`assertLeader`, and every fenced write of the
 * library: the runs of schedules): the leader row is locked against a change of leadership
 * until that transaction ends, and {@link NotLeaderError} is thrown unless `candidateId` holds
 * the lease unexpired by the database clock of after the lock (under `term`, when given): the
 * verdict of {@link judgeFence}. Writes made after it in the same transaction can only commit
 * while the caller still leads. Returns the leader row as read under the lock (with the database
 * clock, `now`). Where tables can be guarded, the passing fence is also the transaction's proof
 * of leadership that their triggers check (`election/guards.ts`).
 */
export async function fenceLeader(m: EntityManager, store: ElectionStore, ns: string, candidateId: string, term?: number): Promise<LeaderRow> {
  const row = await store.lockLeaderToFence(m, ns, candidateId, term);
  const error = fenceError(ns, row, candidateId, term);
  if (error) throw error;
  // MySQL/MariaDB: the lock alone does not fence across Galera nodes; see `fencesByWriting`.
  if (store.fencesByWriting) await store.touchLeader(m, ns);
  return row!;
}
