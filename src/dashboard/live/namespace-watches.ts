/// <reference types="node" preserve="true" />
import type { ElectionService } from '../../election/service';
import type { LeaderChange } from '../../election/observe/watch';

type Listener = (change: LeaderChange) => void;

interface SharedWatch {
  readonly listeners: Set<Listener>;
  readonly controller: AbortController;
  /** The state yielded last: the namespace's current state as of the watch's latest read. */
  last: LeaderChange | undefined;
  /** Resolves when the watch has ended (its subscribers were told by `ended`). */
  done: Promise<void>;
  /** Wakes every subscriber when the watch ends on its own (an error no retry can fix). */
  readonly ended: Set<() => void>;
}

/**
 * The watches behind the namespace streams of one DataSource: one `watch()` per namespace,
 * however many streams show it, so N browsers on a namespace cost one read per `pollMs` (and, on
 * PostgreSQL, one LISTEN subscription), not N. It runs while it has subscribers: started by the
 * first, stopped after the last has gone. Every state it yields goes to every subscriber, in
 * order; a subscriber that joins a running watch first gets the state it yielded last (the
 * current one as of its latest read), so each subscriber sees what a watch of its own would
 * yield: the current state, then every change in term order, another holder under the same term
 * included. There is at most one watch per open stream (`maxStreams`).
 */
export class NamespaceWatches {
  readonly #watches = new Map<string, SharedWatch>();
  readonly #service: ElectionService;
  readonly #pollMs: number;
  readonly #onError: (error: unknown) => void;

  constructor(service: ElectionService, pollMs: number, onError: (error: unknown) => void) {
    this.#service = service;
    this.#pollMs = pollMs;
    this.#onError = onError;
  }

  /** Watches running now. */
  get size(): number {
    return this.#watches.size;
  }

  /**
   * Subscribes `listener` to the watch of `ns` (started when there is none; the state it yielded
   * last, if any, is passed at once) until `signal` aborts or the watch ends with an error it
   * cannot survive (reported to `onError` once, for all its subscribers). Resolves after that,
   * once the watch stopped if this was its last subscriber.
   */
  async follow(ns: string, listener: Listener, signal: AbortSignal): Promise<void> {
    if (signal.aborted) return;
    let watch = this.#watches.get(ns);
    if (!watch) {
      const started: SharedWatch = { listeners: new Set(), controller: new AbortController(), last: undefined, done: Promise.resolve(), ended: new Set() };
      this.#watches.set(ns, started);
      started.done = this.#run(started, ns).finally(() => {
        if (this.#watches.get(ns) === started) this.#watches.delete(ns);
        for (const wake of [...started.ended]) wake();
      });
      watch = started;
    } else if (watch.last) {
      listener(watch.last);
    }
    watch.listeners.add(listener);
    const shared = watch;
    await new Promise<void>((resolve) => {
      const leave = () => {
        signal.removeEventListener('abort', leave);
        shared.ended.delete(leave);
        resolve();
      };
      signal.addEventListener('abort', leave, { once: true });
      shared.ended.add(leave);
    });
    shared.listeners.delete(listener);
    if (shared.listeners.size === 0) {
      // A later stream of the same namespace starts a watch of its own.
      if (this.#watches.get(ns) === shared) this.#watches.delete(ns);
      shared.controller.abort();
      await shared.done;
    }
  }

  async #run(shared: SharedWatch, ns: string): Promise<void> {
    const signal = shared.controller.signal;
    try {
      for await (const change of this.#service.watch({ ns, signal, pollMs: this.#pollMs, onError: this.#onError })) {
        shared.last = change;
        for (const listener of [...shared.listeners]) listener(change);
      }
    } catch (error) {
      // The watch ended with an error no retry can fix: its streams end, and browsers reconnect.
      if (!signal.aborted) this.#onError(error);
    }
  }
}
