/// <reference types="node" preserve="true" />
import type { LeaderChange, LeaderWatch } from '../../election/observe/watch';
import { SharedRuns } from './shared-runs';

/**
 * The watches behind the namespace streams of one DataSource: one `watch()` per namespace,
 * however many streams show it, so N browsers on a namespace cost one read per `pollMs` (and, on
 * PostgreSQL, one LISTEN subscription), not N. Shared as {@link SharedRuns} are: every state the
 * watch yields goes to every subscriber, in order, and one that joins a running watch first gets
 * the state it yielded last (the current one as of its latest read). So each subscriber sees what
 * a watch of its own would yield: the current state, then every change in term order, another
 * holder under the same term included.
 */
export class NamespaceWatches {
  readonly #runs = new SharedRuns<LeaderChange>();
  readonly #open: (ns: string, signal: AbortSignal) => LeaderWatch;
  readonly #onError: (error: unknown) => void;

  /**
   * `open` starts the watch of a namespace (as `ElectionService.watch` does), ending when `signal`
   * aborts: once its last stream has gone; its read in progress is then cancelled at the database.
   */
  constructor(open: (ns: string, signal: AbortSignal) => LeaderWatch, onError: (error: unknown) => void) {
    this.#open = open;
    this.#onError = onError;
  }

  /**
   * Subscribes `listener` to the watch of `ns` until `signal` aborts or the watch ends with an
   * error it cannot survive (reported to `onError` once, for all its subscribers). Resolves after
   * that, once the watch stopped if this was its last subscriber.
   */
  follow(ns: string, listener: (change: LeaderChange) => void, signal: AbortSignal): Promise<void> {
    return this.#runs.follow(ns, (emit, stop) => this.#watch(ns, emit, stop), listener, signal);
  }

  async #watch(ns: string, emit: (change: LeaderChange) => void, signal: AbortSignal): Promise<void> {
    try {
      for await (const change of this.#open(ns, signal)) emit(change);
    } catch (error) {
      // The watch ended with an error no retry can fix: its streams end, and browsers reconnect.
      if (!signal.aborted) this.#onError(error);
    }
  }
}
