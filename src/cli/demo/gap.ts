/** One reading of the leader row: database clock and lease, as `readSnapshot` returns them. */
export interface LeaderSample {
  dbNowMs: number;
  leaderId: string | null;
  term: number | null;
  leaseLeftMs: number | null;
}

/**
 * The longest stretch without a live lease, by the database clock, from periodic samples of the
 * leader row. A gap runs from the end of the previous lease (or the first sample without one, if
 * the lease was vacated early) to the start of the next lease, derived from its expiry minus the
 * lease length: exact while the poll sees a new lease before its first renewal, an overestimate
 * otherwise. Time before the first leader is not counted.
 */
export class LeaderlessTracker {
  #previous: { leaderId: string; term: number; leaseEndMs: number } | undefined;
  #firstLeaderlessMs: number | undefined;
  #longestMs: number | null = null;

  constructor(private readonly leaseMs: number) {}

  observe(sample: LeaderSample): void {
    if (sample.leaderId === null || sample.leaseLeftMs === null || sample.term === null) {
      if (this.#previous && this.#firstLeaderlessMs === undefined) this.#firstLeaderlessMs = sample.dbNowMs;
      return;
    }
    const leaseEndMs = sample.dbNowMs + sample.leaseLeftMs;
    const previous = this.#previous;
    if (previous && (previous.leaderId !== sample.leaderId || previous.term !== sample.term)) {
      const gapStart = Math.min(previous.leaseEndMs, this.#firstLeaderlessMs ?? Number.POSITIVE_INFINITY);
      this.#record(leaseEndMs - this.leaseMs - gapStart);
    }
    this.#previous = { leaderId: sample.leaderId, term: sample.term, leaseEndMs };
    this.#firstLeaderlessMs = undefined;
  }

  /** Counts a gap still open at `dbNowMs` (call once, before the workers are stopped). */
  close(dbNowMs: number): void {
    if (this.#previous && this.#firstLeaderlessMs !== undefined) {
      this.#record(dbNowMs - Math.min(this.#previous.leaseEndMs, this.#firstLeaderlessMs));
    }
  }

  /** Null until a leader was seen. */
  get longestMs(): number | null {
    return this.#previous ? (this.#longestMs ?? 0) : null;
  }

  #record(gapMs: number): void {
    this.#longestMs = Math.max(this.#longestMs ?? 0, Math.max(0, gapMs));
  }
}
