import { outsideRuns, withinRun } from './run-guard';
import { MAX_TIMER_MS, settlesWithin } from './timers';

/**
 * Everything one run of a loop started — its tasks (ticks, prunes, hand-overs, reads, connection
 * attempts) and its timers — kept in one place. Once the run has ended no timer of it is
 * scheduled, no task of it starts, and the statement any task of it would send next is refused
 * (see `db/run-guard.ts`); {@link settled} waits for the tasks still under way, which can then only
 * finish what they already sent.
 */
export class LoopRun {
  readonly #controller = new AbortController();
  readonly #tasks = new Set<Promise<unknown>>();
  readonly #timers = new Set<NodeJS.Timeout>();
  #ending: Promise<void> | undefined;

  get ended(): boolean {
    return this.#controller.signal.aborted;
  }

  /** Resolves when the run ends: a wait that the end of the run should cut short races it. */
  whenEnded(): Promise<void> {
    this.#ending ??= this.ended
      ? Promise.resolve()
      : new Promise((resolve) => this.#controller.signal.addEventListener('abort', () => resolve(), { once: true }));
    return this.#ending;
  }

  /**
   * Starts `work` as part of this run and tracks it until it settles; undefined once the run has
   * ended (nothing starts). A rejection of `work` is the caller's to handle.
   */
  start<T>(work: () => Promise<T>): Promise<T> | undefined {
    if (this.ended) return undefined;
    const task = withinRun(this.#controller.signal, work);
    this.#tasks.add(task);
    const forget = () => void this.#tasks.delete(task);
    task.then(forget, forget);
    return task;
  }

  /**
   * Calls `work` as part of this run after `ms`, unless the run ends first (then the timer is
   * cleared). `keepAlive: false` lets the process exit while only this timer is pending.
   */
  timer(work: () => void, ms: number, keepAlive = true): NodeJS.Timeout | undefined {
    if (this.ended) return undefined;
    const timer = setTimeout(
      () => {
        this.#timers.delete(timer);
        if (!this.ended) withinRun(this.#controller.signal, work);
      },
      Math.max(0, Math.min(ms, MAX_TIMER_MS)),
    );
    if (!keepAlive) timer.unref();
    this.#timers.add(timer);
    return timer;
  }

  clear(timer: NodeJS.Timeout | undefined): void {
    if (timer === undefined) return;
    clearTimeout(timer);
    this.#timers.delete(timer);
  }

  /** Ends the run: its timers are cleared, nothing of it starts, its tasks send no further statement. */
  end(): void {
    // Listeners of the signal are none of the user's, but keep them out of any run all the same.
    outsideRuns(() => this.#controller.abort());
    for (const timer of this.#timers) clearTimeout(timer);
    this.#timers.clear();
  }

  /**
   * Whether every task of the run settled within `ms` (those started meanwhile included). Call it
   * after {@link end}: from then on no task is added, so the wait ends.
   */
  async settled(ms: number): Promise<boolean> {
    const by = performance.now() + ms;
    while (this.#tasks.size > 0) {
      if (!(await settlesWithin(Promise.allSettled([...this.#tasks]), by - performance.now()))) return false;
    }
    return true;
  }
}
