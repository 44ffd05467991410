/**
 * An estimate of the database's clock on this host, for work that comes due by the database's
 * time (schedules' slots): the latest measurement — the database's now as a statement read it,
 * taken at the midpoint of that statement's round trip — carried forward by the monotonic clock,
 * so a step of the host's wall clock does not move it. The database still decides: a slot is
 * claimed only where the database's own clock says it is due; this only says when to ask.
 */
export class DatabaseClock {
  #databaseMs: number | undefined;
  #monotonicMs: number | undefined;

  /** The database read its clock as `databaseNow` between the monotonic instants `sentAt` and `answeredAt` (`performance.now()`). */
  observe(databaseNow: Date, sentAt: number, answeredAt: number): void {
    const databaseMs = databaseNow.getTime();
    if (!Number.isFinite(databaseMs)) return;
    this.#databaseMs = databaseMs;
    this.#monotonicMs = (sentAt + answeredAt) / 2;
  }

  /** Whether a measurement has been taken. */
  get measured(): boolean {
    return this.#databaseMs !== undefined;
  }

  /** The database's now, estimated (Unix ms); the host's wall clock before any measurement. */
  now(): number {
    if (this.#databaseMs === undefined || this.#monotonicMs === undefined) return Date.now();
    return this.#databaseMs + (performance.now() - this.#monotonicMs);
  }
}
