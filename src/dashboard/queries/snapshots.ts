/// <reference types="node" preserve="true" />
import { ReadCancelledError } from '../../db/bounded-read';

interface Entry<T> {
  /** performance.now() when its read began. */
  readonly startedAt: number;
  readonly value: Promise<T>;
  /** Aborts the read: once every one who waited for it has gone before it settled. */
  readonly controller: AbortController;
  /** Those waiting for the read now. */
  waiters: number;
  settled: boolean;
}

/**
 * Shared reads that stay good for one interval: `get(key, read, signal)` answers with the result
 * of the read of `key` begun less than `maxAgeMs` ago, or with the read in flight, and starts a
 * read only when there is neither. So however many requests and streams ask, `key` is read at most
 * once per interval (a read takes as long as it takes: one that outlasts the interval is still
 * shared, and the next begins when it is asked for after it). A failed read is shared by those
 * that waited for it and not kept. A caller whose `signal` aborts stops waiting; when the last one
 * waiting for a read in flight goes, the read is stopped (its signal aborts) and forgotten, and
 * that caller's promise settles once the read has: so no read runs on for nobody, and one who goes
 * last leaves nothing running. At most `maxEntries` results are kept, the oldest dropped first;
 * expired ones go when the next `get` finds them.
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

  /** Rejects with {@link ReadCancelledError} when `signal` aborts first. */
  get(key: string, read: (signal: AbortSignal) => Promise<T>, signal: AbortSignal): Promise<T> {
    if (signal.aborted) return Promise.reject(new ReadCancelledError());
    const now = performance.now();
    for (const [k, entry] of this.#entries) {
      if (entry.settled && now - entry.startedAt >= this.#maxAgeMs) this.#entries.delete(k);
    }
    const entry = this.#entries.get(key) ?? this.#start(key, read, now);
    return entry.settled ? entry.value : this.#wait(key, entry, signal);
  }

  #start(key: string, read: (signal: AbortSignal) => Promise<T>, now: number): Entry<T> {
    const controller = new AbortController();
    const entry: Entry<T> = { startedAt: now, value: read(controller.signal), controller, waiters: 0, settled: false };
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
    return entry;
  }

  #wait(key: string, entry: Entry<T>, signal: AbortSignal): Promise<T> {
    entry.waiters++;
    return new Promise<T>((resolve, reject) => {
      const leave = () => {
        entry.waiters--;
        if (entry.waiters > 0) return reject(new ReadCancelledError());
        // The last one waiting: the read is stopped, and a later `get` starts a new one.
        if (this.#entries.get(key) === entry) this.#entries.delete(key);
        entry.controller.abort();
        void entry.value.then(
          () => reject(new ReadCancelledError()),
          (error: unknown) => reject(new ReadCancelledError({ cause: error })),
        );
      };
      signal.addEventListener('abort', leave, { once: true });
      entry.value.then(
        (value) => {
          if (signal.aborted) return;
          signal.removeEventListener('abort', leave);
          entry.waiters--;
          resolve(value);
        },
        (error: unknown) => {
          if (signal.aborted) return;
          signal.removeEventListener('abort', leave);
          entry.waiters--;
          reject(error);
        },
      );
    });
  }
}
