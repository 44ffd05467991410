import type { LeaderElectorError } from './errors';

/**
 * How one tick's `elect` ended, from the database's answer: `acquired` (this elector took the
 * lease under a new term), `renewed` (it extended the lease it held), `follower` (someone else
 * holds it), `error` (the call failed).
 */
export type TickOutcome = 'acquired' | 'renewed' | 'follower' | 'error';

/**
 * The database clock minus the host clock, measured by one tick: the database read its clock at
 * some instant while the `elect` was in flight, and the host's wall clock is taken before sending
 * and (by the monotonic clock) at the answer. Taking the midpoint, the true skew lies within
 * `seconds ± errorSeconds`, where `errorSeconds` is half the round trip plus 1 ms of clock
 * resolution.
 */
export interface ClockSkew {
  /** Database clock minus host clock, in seconds (positive: the database is ahead). */
  readonly seconds: number;
  /** The measurement's error bound, in seconds: half the tick's round trip plus 1 ms. */
  readonly errorSeconds: number;
  /** The database clock as the tick read it. */
  readonly databaseNow: Date;
}

/**
 * One completed tick, as the elector's `'tick'` event reports it: what the metrics in
 * `gemstone-utils/metrics` are made of (and what any other observer may use).
 */
export interface ElectorTick {
  /** The elector's namespace. */
  readonly ns: string;
  /** The elector's candidate id. */
  readonly candidateId: string;
  /** What the tick's `elect` did: acquired or renewed the lease, followed another leader, or failed. */
  readonly outcome: TickOutcome;
  /** From just before the `elect` was sent until its answer or error arrived (monotonic clock), in seconds. */
  readonly durationSeconds: number;
  /** The leader the database reported; null on error. */
  readonly leaderId: string | null;
  /** The leader's term the database reported; null on error. */
  readonly term: number | null;
  /** Null on error. */
  readonly clockSkew: ClockSkew | null;
  /** The error of a failed tick (also reported as `'error'`); null otherwise. */
  readonly error: LeaderElectorError | null;
}

/** Measures the skew from the database's clock and the host's wall clock around the call. */
export function measureClockSkew(databaseNow: Date, sentAtWallMs: number, durationMs: number): ClockSkew {
  const midpoint = sentAtWallMs + durationMs / 2;
  return Object.freeze({
    seconds: (databaseNow.getTime() - midpoint) / 1000,
    errorSeconds: (durationMs / 2 + 1) / 1000,
    databaseNow,
  });
}

/**
 * Says when the measured skew crosses a threshold: once when it is certainly beyond it
 * (`|seconds| - errorSeconds > threshold`), then not again until it is certainly back within it
 * (`|seconds| + errorSeconds <= threshold`). The gap between the two is the hysteresis that keeps
 * a skew hovering around the threshold from warning on every tick.
 */
export class ClockSkewAlarm {
  readonly #thresholdSeconds: number;
  #raised = false;

  constructor(thresholdSeconds: number) {
    this.#thresholdSeconds = thresholdSeconds;
  }

  /** A warning message when this measurement crosses the threshold outwards; null otherwise. */
  check(skew: ClockSkew): string | null {
    const magnitude = Math.abs(skew.seconds);
    if (!this.#raised && magnitude - skew.errorSeconds > this.#thresholdSeconds) {
      this.#raised = true;
      const direction = skew.seconds > 0 ? 'ahead of' : 'behind';
      return (
        `the database clock is ${magnitude.toFixed(3)} s (±${skew.errorSeconds.toFixed(3)} s) ${direction} this host's clock, ` +
        `beyond the warning threshold of ${this.#thresholdSeconds} s`
      );
    }
    if (this.#raised && magnitude + skew.errorSeconds <= this.#thresholdSeconds) this.#raised = false;
    return null;
  }
}
