import type { LeaderElectorError } from './errors';
import { LocalDeadline, MonotonicClock } from './monotonic';

/** What a {@link LeaderElector} is doing: leading, following (campaigning), or not running. */
export type ElectorRole = 'leader' | 'follower' | 'stopped';

/**
 * `elector.health()`: a synchronous answer for liveness and readiness probes, computed from the
 * local clocks without a query.
 */
export interface ElectorHealth {
  /**
   * False when the elector is not running (`role: 'stopped'`), when no tick has succeeded for
   * longer than the lease (`expireSeconds`) — the database is out of reach, a statement hangs, or
   * the process was paused or its event loop blocked — or when a leader's renewal is overdue past
   * its local deadline. True otherwise.
   */
  readonly ok: boolean;
  /** `'leader'` while it holds an unexpired lease, `'follower'` while running otherwise, `'stopped'` before `start()` and from `stop()` on. */
  readonly role: ElectorRole;
  /**
   * Host wall-clock time just before the last successful tick's `elect` was sent (the instant its
   * local deadline counts from); null before the first success since `start()`.
   */
  readonly lastRenewedAt: Date | null;
  /**
   * The error of the latest tick if it failed (or is still hanging past the lease); null once a
   * tick succeeds, and after `start()`. Errors of other phases (LISTEN, callbacks) do not count.
   */
  readonly lastError: LeaderElectorError | null;
  /** Why `ok` is false, in words for a probe's response body; null when ok. */
  readonly problem: string | null;
}

/**
 * The elector's record of its ticks for `health()`. The freshness window is a {@link LocalDeadline}
 * of one lease, restarted just before each successful tick's `elect` was sent (and by `start()`,
 * so a fresh elector gets one lease for its first tick): it measures by both the monotonic and the
 * wall clock, so a paused or suspended process reads stale at once, before any timer fires.
 */
export class TickHealth {
  readonly #clock: MonotonicClock;
  readonly #leaseMs: number;
  #fresh: LocalDeadline | undefined;
  #lastRenewedAt: Date | null = null;
  #lastError: LeaderElectorError | null = null;

  constructor(clock: MonotonicClock, leaseMs: number) {
    this.#clock = clock;
    this.#leaseMs = leaseMs;
  }

  /** `start()` began: one lease from now for the first tick to succeed; earlier records cleared. */
  started(): void {
    this.#fresh = LocalDeadline.startingNow(this.#clock, this.#leaseMs);
    this.#lastRenewedAt = null;
    this.#lastError = null;
  }

  /** A tick succeeded; `sent` is the deadline taken just before its `elect` was sent. */
  succeeded(sent: LocalDeadline): void {
    this.#fresh = sent;
    this.#lastRenewedAt = sent.startedAt;
    this.#lastError = null;
  }

  /** A tick failed (or is hanging past the lease). */
  failed(error: LeaderElectorError): void {
    this.#lastError = error;
  }

  /** Whether no tick has succeeded for a lease (or since `start()`). */
  get stale(): boolean {
    return !this.#fresh || this.#fresh.passed;
  }

  /**
   * The report, given the role, whether this read ended a leadership whose own deadline had
   * passed, and {@link stale} as read before the role (so the three agree).
   */
  report(role: ElectorRole, leaderOverdue: boolean, stale: boolean): ElectorHealth {
    const base = { role, lastRenewedAt: this.#lastRenewedAt, lastError: this.#lastError };
    let problem: string | null = null;
    if (role === 'stopped') {
      problem = 'the elector is not running (start() was not called, or stop() was)';
    } else if (leaderOverdue) {
      problem = "the leader's renewal is overdue past its local deadline";
    } else if (stale) {
      problem =
        this.#lastRenewedAt === null
          ? `no tick has succeeded within the lease (${this.#leaseMs} ms) since start()`
          : `no tick has succeeded for longer than the lease (${this.#leaseMs} ms)`;
      if (this.#lastError) problem += `; last error: ${this.#lastError.message}`;
    }
    return Object.freeze({ ok: problem === null, ...base, problem });
  }
}
