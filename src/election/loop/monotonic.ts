/**
 * Local time for the elector's safety rule. The database clock decides leases; this only decides
 * when a process must assume its lease may have run out, so it must never run slow.
 */

/** Milliseconds from a monotonic clock (any origin). Default: `performance.now()`. */
export type MonotonicClock = () => number;

/** `performance.now()`: monotonic, unaffected by wall-clock changes (NTP steps, manual changes). */
export const defaultMonotonicClock: MonotonicClock = () => performance.now();

/**
 * The instant a local lease ends: `lengthMs` after a start taken just before the `elect` that
 * granted it was sent.
 *
 * Both the monotonic clock and the wall clock are measured, and the deadline passes when either
 * says so. Linux's monotonic clock (what Node's timers and `performance.now()` use) stops while
 * the machine or VM is suspended, whereas the lease on the database keeps running; the wall clock
 * keeps counting through a suspend. A wall clock stepped forward only ends a lease early (safe);
 * stepped backward, the monotonic clock still ends it on time.
 */
export class LocalDeadline {
  readonly #clock: MonotonicClock;
  readonly #monotonicStart: number;
  readonly #wallStart: number;
  readonly #lengthMs: number;

  constructor(clock: MonotonicClock, monotonicStart: number, wallStart: number, lengthMs: number) {
    this.#clock = clock;
    this.#monotonicStart = monotonicStart;
    this.#wallStart = wallStart;
    this.#lengthMs = lengthMs;
  }

  /** Starts a deadline now (call it just before sending the statement that may grant the lease). */
  static startingNow(clock: MonotonicClock, lengthMs: number): LocalDeadline {
    return new LocalDeadline(clock, clock(), Date.now(), lengthMs);
  }

  /** Milliseconds left, by the more pessimistic of the two clocks; ≤ 0 once passed. */
  remainingMs(): number {
    const monotonicLeft = this.#monotonicStart + this.#lengthMs - this.#clock();
    const wallLeft = this.#wallStart + this.#lengthMs - Date.now();
    return Math.min(monotonicLeft, wallLeft);
  }

  /** The host's wall-clock time when the deadline started. */
  get startedAt(): Date {
    return new Date(this.#wallStart);
  }

  get passed(): boolean {
    return this.remainingMs() <= 0;
  }
}
