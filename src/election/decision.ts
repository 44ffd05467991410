/**
 * The election's decisions, once, as pure functions: the reference of the protocol. Every path
 * that writes a lease — `elect` with or without a session, fast or locked, a group tick, on every
 * database — implements {@link decideElect}; `resign`, `handOver` and `unregister` implement
 * {@link decideVacate}; `assertLeader` implements {@link decideFence}. The SQL of each path
 * cites the branches by their names below (L, F, R, H, T0, T1, T2, D1, D2, V0, V1, V2, A, A1, A2, A3).
 *
 * Instants are milliseconds of the DATABASE clock; `now` is that clock at the statement that
 * writes the outcome (never the transaction's start, never an earlier statement's read: a lease
 * that ran out before the write is judged lapsed).
 *
 * L   A lease is live when the row names a leader and `now < leaseExpiresAt`: at
 *     `leaseExpiresAt <= now` it has ended.
 *
 * elect (the caller heartbeats in every branch; its effective priority and eligibility are the
 * ones given, else the stored ones, else 0 and true; rivals are the OTHER candidates that are
 * live — `expiresAt > now` — and eligible):
 * F   another candidate's live lease: follow it; nothing but the heartbeat is written.
 * R   the caller's own live lease: renew it (`leaseExpiresAt = now + expire`), the term stays.
 *     Nobody is preempted, not even by the caller's own preferences:
 * H   … and when the caller is ineligible or a rival's priority is strictly higher, it is told
 *     to hand over (`handOver`), which it does itself after its leader work has stopped.
 * T   no live lease (no row, a vacant row, or a lapsed lease — the caller's own included) and
 *     the caller is eligible and no rival outranks it: take it under `term + 1`.
 * T0  … the namespace has no leader row: it is created (term 0) and taken as term 1.
 * T1  … the row is vacant: nothing to close.
 * T2  … the row names the lapsed holder: its term is closed `expired` at its lease's end.
 * D   no live lease, and the caller may not take it: nobody leads after the call; the term
 *     stays, a lapsed term stays as it is (open in the history until someone takes over):
 * D1  … the caller is ineligible;
 * D2  … a rival outranks it (strictly higher priority): the preferred candidate takes it.
 *     A new namespace's row is created vacant (term 0) in both.
 *
 * resign / handOver / unregister (unregister also deletes the caller's candidate row):
 * V0  the row does not name the caller: nothing changes; false.
 * V1  it names the caller with a live lease: vacated (holder and lease cleared, term kept), the
 *     term closed now with the call's reason (`resigned`, `handed-over`, `unregistered`); true.
 * V2  it names the caller with a lapsed lease: vacated too, the term closed `expired` at its
 *     lease's end; false.
 *
 * assertLeader (the fence of a leader-only write; the row stays locked until the transaction ends):
 * A   the row names the caller with a live lease (and the term, when one is given): pass.
 * A1  no leader row: NotLeaderError, leader null, term null.
 * A2  no live lease, or another candidate's: NotLeaderError with the live leader (or null) and the row's term.
 * A3  the caller's live lease under another term than the one given: NotLeaderError, as A2.
 */
import type { HistoryEndReason } from '../../entities/ElectionHistory';

import { DEFAULT_ELIGIBLE, DEFAULT_PRIORITY } from './validate';

/** Milliseconds on the database clock. */
export type Instant = number;

/** The leader row of a namespace as the deciding statement sees it; undefined when there is none. */
export interface LeaseRow {
  readonly leaderId: string | null;
  readonly term: number;
  /** Null when vacant. */
  readonly leaseExpiresAt: Instant | null;
}

/** What a caller says about itself in this call (omitted: the stored value). */
export interface CallerFields {
  readonly priority?: number;
  readonly eligible?: boolean;
}

/**
 * The caller among the candidates: whether its candidate row exists, what that row stores, and
 * the highest priority among the OTHER live eligible candidates (null when there is none).
 */
export interface CallerStanding {
  readonly registered: boolean;
  readonly storedPriority: number | null;
  readonly storedEligible: boolean | null;
  readonly rivalPriority: number | null;
}

/** Branch L: whether the row holds a live lease at `now`. */
export function isLive(row: LeaseRow | undefined, now: Instant): boolean {
  return row !== undefined && row.leaderId !== null && row.leaseExpiresAt !== null && now < row.leaseExpiresAt;
}

/** The caller's effective eligibility, and whether a rival outranks its effective priority. */
export function callerRank(standing: CallerStanding, fields: CallerFields): { eligible: boolean; priority: number; outranked: boolean } {
  const eligible = fields.eligible ?? standing.storedEligible ?? DEFAULT_ELIGIBLE;
  const priority = fields.priority ?? standing.storedPriority ?? DEFAULT_PRIORITY;
  const outranked = standing.rivalPriority !== null && standing.rivalPriority > priority;
  return { eligible, priority, outranked };
}

export type ElectBranch = 'F' | 'R' | 'H' | 'T0' | 'T1' | 'T2' | 'D1' | 'D2';

/** The rule of {@link decideElect} on a lease already judged live or not (by the database, in SQL). */
export interface JudgedElect {
  readonly branch: ElectBranch;
  /** R/H: the caller keeps its live lease. */
  readonly renewing: boolean;
  /** R/H/T: the caller leads after the call. */
  readonly takes: boolean;
  /** H: renewed, but should be given up. */
  readonly handOver: boolean;
}

/**
 * {@link decideElect} for callers whose liveness was judged by the database: `live` must be
 * branch L at the writing statement's clock. `rowExists`: false for a namespace without a leader row.
 */
export function judgeElect(
  lease: { readonly leaderId: string | null; readonly live: boolean; readonly rowExists?: boolean },
  candidateId: string,
  standing: CallerStanding,
  fields: CallerFields,
): JudgedElect {
  const { eligible, outranked } = callerRank(standing, fields);
  if (lease.live && lease.leaderId !== candidateId) return { branch: 'F', renewing: false, takes: false, handOver: false };
  if (lease.live) {
    const handOver = !eligible || outranked;
    return { branch: handOver ? 'H' : 'R', renewing: true, takes: true, handOver };
  }
  if (!eligible) return { branch: 'D1', renewing: false, takes: false, handOver: false };
  if (outranked) return { branch: 'D2', renewing: false, takes: false, handOver: false };
  const branch = lease.rowExists === false ? 'T0' : lease.leaderId === null ? 'T1' : 'T2';
  return { branch, renewing: false, takes: true, handOver: false };
}

/** What one `elect` must do and answer. */
export interface ElectVerdict extends JudgedElect {
  /** The leader after the call (null when nobody holds a live lease). */
  readonly leaderId: string | null;
  /** The row's term after the call. */
  readonly term: number;
  /** T: the term that was acquired (`term`); undefined otherwise. */
  readonly acquiredTerm?: number;
  /** T2: the lapsed term to close `expired`, and its lease's end. */
  readonly closes?: { readonly term: number; readonly endedAt: Instant };
  /** T0, and D on a new namespace: the leader row is created (term 0) first. */
  readonly createsRow: boolean;
  /** R/H/T: the new lease's end. */
  readonly leaseExpiresAt?: Instant;
  readonly wasRegistered: boolean;
}

/** The reference `elect`: the leader row as the writing statement sees it, at `now`. */
export function decideElect(input: {
  readonly row: LeaseRow | undefined;
  readonly now: Instant;
  readonly candidateId: string;
  readonly standing: CallerStanding;
  readonly fields: CallerFields;
  readonly expireMs: number;
}): ElectVerdict {
  const { row, now, candidateId, standing, fields, expireMs } = input;
  const live = isLive(row, now);
  const judged = judgeElect({ leaderId: row?.leaderId ?? null, live, rowExists: row !== undefined }, candidateId, standing, fields);
  const term = row?.term ?? 0;
  const createsRow = row === undefined;
  const wasRegistered = standing.registered;
  switch (judged.branch) {
    case 'F':
      return { ...judged, leaderId: row!.leaderId, term, createsRow, wasRegistered };
    case 'R':
    case 'H':
      return { ...judged, leaderId: candidateId, term, createsRow, leaseExpiresAt: now + expireMs, wasRegistered };
    case 'T0':
    case 'T1':
    case 'T2': {
      const closes = judged.branch === 'T2' ? { term, endedAt: row!.leaseExpiresAt as Instant } : undefined;
      return { ...judged, leaderId: candidateId, term: term + 1, acquiredTerm: term + 1, closes, createsRow, leaseExpiresAt: now + expireMs, wasRegistered };
    }
    case 'D1':
    case 'D2':
      return { ...judged, leaderId: null, term, createsRow, wasRegistered };
  }
}

/**
 * Why a holder's own call gives a lease up: the `end_reason` its term is closed with (an expiry is
 * noticed by the next taker instead). Declared here only; `group-tick.ts` and `observe/history.ts`
 * re-export it.
 */
export type VacateReason = Exclude<HistoryEndReason, 'expired'>;

/** The reasons of a holder's step down that keeps it a candidate: `resign`, `handOver`, the end of `runAsOperator`. */
export type StepDownReason = Exclude<VacateReason, 'unregistered'>;

/** What `resign`, `handOver` or `unregister` must do to the lease and answer. */
export interface VacateVerdict {
  readonly branch: 'V0' | 'V1' | 'V2';
  /** `resign`'s answer: the caller held a live lease. */
  readonly result: boolean;
  /** V1/V2: the row is vacated (holder and lease cleared, term kept). */
  readonly vacates: boolean;
  /** V1/V2: the term closed, why and when. */
  readonly closes?: { readonly term: number; readonly reason: VacateReason | 'expired'; readonly endedAt: Instant };
}

/** The reference `resign` / `handOver` / `unregister` on the leader row, at `now`. */
export function decideVacate(row: LeaseRow | undefined, now: Instant, candidateId: string, reason: VacateReason): VacateVerdict {
  if (row === undefined || row.leaderId !== candidateId) return { branch: 'V0', result: false, vacates: false };
  if (isLive(row, now)) return { branch: 'V1', result: true, vacates: true, closes: { term: row.term, reason, endedAt: now } };
  return { branch: 'V2', result: false, vacates: true, closes: { term: row.term, reason: 'expired', endedAt: row.leaseExpiresAt ?? now } };
}

/** What `assertLeader` must answer: pass, or the fields of its NotLeaderError. */
export type FenceVerdict =
  | { readonly branch: 'A'; readonly pass: true; readonly leaderId: string; readonly term: number }
  | { readonly branch: 'A1' | 'A2' | 'A3'; readonly pass: false; readonly leaderId: string | null; readonly term: number | null };

/** The reference `assertLeader`, on the leader row at `now`, with the term the caller expects (if any). */
export function decideFence(row: LeaseRow | undefined, now: Instant, candidateId: string, term?: number): FenceVerdict {
  if (row === undefined) return { branch: 'A1', pass: false, leaderId: null, term: null };
  const live = isLive(row, now);
  const leaderId = live ? row.leaderId : null;
  if (!live || row.leaderId !== candidateId) return { branch: 'A2', pass: false, leaderId, term: row.term };
  if (term !== undefined && term !== row.term) return { branch: 'A3', pass: false, leaderId, term: row.term };
  return { branch: 'A', pass: true, leaderId: candidateId, term: row.term };
}

/**
 * The rule every path of `elect` applies, given the leader row as read under the lock and the
 * caller's standing: {@link judgeElect}, the reference decision (the branches named above). A leader always renews and is told to hand over when it is ineligible or outranked; a
 * vacant or expired lease is taken only by an eligible candidate that no live eligible candidate
 * outranks. Leadership therefore only ever moves to strictly higher priority while the candidates
 * stay the same: it cannot go back and forth.
 */
export function decide(
  row: { readonly leaderId: string | null; readonly live: boolean },
  candidateId: string,
  standing: CallerStanding,
  fields: CallerFields,
): { renewing: boolean; takes: boolean; handOver: boolean } {
  const { renewing, takes, handOver } = judgeElect(row, candidateId, standing, fields);
  return { renewing, takes, handOver };
}
