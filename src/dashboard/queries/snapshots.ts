/// <reference types="node" preserve="true" />

interface Entry<T> {
  /** performance.now() when its read began. */
  readonly startedAt: number;
  readonly value: Promise<T>;
  settled: boolean;
}

/**
 * Shared reads that stay good for one interval: `get(key, read)` answers with the result of the
 * read of `key` begun less than `maxAgeMs` ago, or with the read in flight, and starts a read only
 * when there is neither. So however many requests and streams ask, `key` is read at most once per
 * interval (a read takes as long as it takes: one that outlasts the interval is still shared, and
 * the next begins when it is asked for after it). A failed read is shared by those that waited
 * for it and not kept. At most `maxEntries` results are kept, the oldest dropped first; expired
 * ones go when the next `get` finds them.
 */
export class IntervalReads<T> {
  readonly #entries = new Map<string, Entry<T>>();
  readonly #maxAgeMs: number;
  readonly #maxEntries: number;

  constructor(maxAgeMs: number, maxEntries: number) {
    this.#maxAgeMs = maxAgeMs;
    this.#maxEntries = maxEntries;
  }

  /** Results kept now (reads in flight included). */
  get size(): number {
    return this.#entries.size;
  }

  get(key: string, read: () => Promise<T>): Promise<T> {
    const now = performance.now();
    for (const [k, entry] of this.#entries) {
      if (entry.settled && now - entry.startedAt >= this.#maxAgeMs) this.#entries.delete(k);
    }
    const kept = this.#entries.get(key);
    if (kept) return kept.value;
    const entry: Entry<T> = { startedAt: now, value: read(), settled: false };
    this.#entries.set(key, entry);
    entry.value.then(
      () => {
        entry.settled = true;
      },
      () => {
        if (this.#entries.get(key) === entry) this.#entries.delete(key);
      },
    );
    for (const k of this.#entries.keys()) {
      if (this.#entries.size <= this.#maxEntries) break;
      this.#entries.delete(k);
    }
    return entry.value;
  }
}
