import { GemstoneError } from '../../errors';
import type { Lease } from './elector-options';

/**
 * Why a leadership ended:
 * - `lost`: the database says another candidate leads, or the lease was vacated behind this
 *   elector's back (`resign`/`unregisterCandidate` by someone else);
 * - `lease-expired-locally`: no renewal succeeded before the local deadline (database down or
 *   slow, network cut, event loop blocked, process paused);
 * - `stopped`: `stop()` was called;
 * - `handed-over`: a live eligible candidate of strictly higher priority appeared (or this
 *   elector is not eligible): leadership ends as on `stop()` — the signal aborts,
 *   `onStoppedLeading` is awaited — then the lease is vacated for the preferred candidate while
 *   this elector stays a candidate.
 */
export type DemotionReason = 'lost' | 'lease-expired-locally' | 'stopped' | 'handed-over';

/** The `reason` of an aborted `lease.signal`. */
export class LeadershipEndedError extends GemstoneError {
  /** Why the leadership ended. */
  readonly reason: DemotionReason;
  /** The namespace that was led. */
  readonly ns: string;
  /** The term of the leadership that ended. */
  readonly term: number;

  constructor(lease: Lease, reason: DemotionReason) {
    super(`leadership of namespace ${JSON.stringify(lease.ns)} (term ${lease.term}) ended: ${reason}; stop leader-only work`);
    this.reason = reason;
    this.ns = lease.ns;
    this.term = lease.term;
  }
}

/**
 * What failed inside the loop; the loop carries on (a tick is retried on the next tick).
 * `schedule`: a scheduled job threw (its slot is `failed`), a slot was abandoned, or a statement of
 * a schedule failed (retried).
 */
export type ElectorErrorPhase = 'tick' | 'listen' | 'callback' | 'stop' | 'prune' | 'clock' | 'hand-over' | 'schedule';

/** An error the elector reports through `'error'` (or its logger); the original is its `cause`. */
export class LeaderElectorError extends GemstoneError {
  /** What failed: a tick, LISTEN, a callback, the stop, pruning, the clock check, a hand-over or a schedule. */
  readonly phase: ElectorErrorPhase;
  /** The elector's namespace (`''` for a group's error about no one namespace: see `LeaderElectorGroupError.namespace`). */
  readonly ns: string;
  /** The elector's (or group's) candidate id. */
  readonly candidateId: string;

  constructor(phase: ElectorErrorPhase, elector: { ns: string; candidateId: string }, message: string, cause: unknown) {
    const detail = cause instanceof Error ? cause.message : String(cause);
    super(`LeaderElector ${elector.candidateId} in namespace ${JSON.stringify(elector.ns)}: ${message}: ${detail}`, { cause });
    this.phase = phase;
    this.ns = elector.ns;
    this.candidateId = elector.candidateId;
  }
}
