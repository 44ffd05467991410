/// <reference types="node" preserve="true" />

/** What a run is given: `emit` tells every subscriber a result; `signal` aborts after the last subscriber left. */
export type RunBody<T> = (emit: (value: T) => void, signal: AbortSignal) => Promise<void>;

interface Run<T> {
  readonly listeners: Set<(value: T) => void>;
  readonly controller: AbortController;
  /** The result emitted last, given at once to a subscriber that joins. */
  last: { value: T } | undefined;
  /** Settles when the run's body has returned. */
  done: Promise<void>;
  /** Wakes the subscribers when the body returns on its own. */
  readonly ended: Set<() => void>;
}

/**
 * The rule the dashboard's live reads share: one run per key (a namespace's watch, an overview
 * page's poll), however many streams follow it. The first subscriber starts it; every result it
 * emits goes to every subscriber, in order; a subscriber that joins a running one first gets the
 * result emitted last; the run is stopped (its signal aborted, and waited for) when the last
 * subscriber has gone, and a later subscriber of the key starts a new one. So there are at most
 * as many runs as subscribers.
 */
export class SharedRuns<T> {
  readonly #runs = new Map<string, Run<T>>();

  /** Runs going now. */
  get size(): number {
    return this.#runs.size;
  }

  /**
   * Subscribes `listener` to the run of `key` (started with `body` when there is none) until
   * `signal` aborts or the body returns on its own. Resolves after that, once the run stopped if
   * this was its last subscriber.
   */
  async follow(key: string, body: RunBody<T>, listener: (value: T) => void, signal: AbortSignal): Promise<void> {
    if (signal.aborted) return;
    let run = this.#runs.get(key);
    if (!run) {
      const started: Run<T> = { listeners: new Set(), controller: new AbortController(), last: undefined, done: Promise.resolve(), ended: new Set() };
      this.#runs.set(key, started);
      const emit = (value: T) => {
        started.last = { value };
        for (const each of [...started.listeners]) each(value);
      };
      started.done = body(emit, started.controller.signal).finally(() => {
        if (this.#runs.get(key) === started) this.#runs.delete(key);
        for (const wake of [...started.ended]) wake();
      });
      run = started;
    } else if (run.last) {
      listener(run.last.value);
    }
    run.listeners.add(listener);
    const joined = run;
    await new Promise<void>((resolve) => {
      const leave = () => {
        signal.removeEventListener('abort', leave);
        joined.ended.delete(leave);
        resolve();
      };
      signal.addEventListener('abort', leave, { once: true });
      joined.ended.add(leave);
    });
    joined.listeners.delete(listener);
    if (joined.listeners.size === 0) {
      if (this.#runs.get(key) === joined) this.#runs.delete(key);
      joined.controller.abort();
      await joined.done;
    }
  }
}
