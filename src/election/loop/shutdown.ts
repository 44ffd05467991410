// Kept in the emitted declarations, whose public types use Node's (NodeJS.Signals): TypeScript 7
// projects load no @types by default (`types: []`).
/// <reference types="node" preserve="true" />
/**
 * Graceful shutdown: on SIGTERM/SIGINT, stop the electors (a leader vacates its lease, so another
 * process takes over at once instead of waiting for the lease to run out), then let the signal
 * end the process as it would have without a handler.
 */

/** Signals {@link stopOnSignals} handles unless told otherwise. */
export const DEFAULT_SHUTDOWN_SIGNALS: readonly NodeJS.Signals[] = Object.freeze(['SIGTERM', 'SIGINT'] as NodeJS.Signals[]);
/** How long {@link stopOnSignals} waits for the electors to stop before ending the process anyway. */
export const DEFAULT_SHUTDOWN_TIMEOUT_MS = 10_000;

/** What {@link stopOnSignals} stops: a `LeaderElector`, a `LeaderElectorGroup`, or anything with the same `stop()`. */
export interface Stoppable {
  /** Ends its work; resolves when nothing of it runs any more. */
  stop(): Promise<void>;
}

/** The options of {@link stopOnSignals}. */
export interface StopOnSignalsOptions {
  /** Default {@link DEFAULT_SHUTDOWN_SIGNALS} (`SIGTERM`, `SIGINT`). */
  signals?: readonly NodeJS.Signals[];
  /** Default {@link DEFAULT_SHUTDOWN_TIMEOUT_MS}. */
  timeoutMs?: number;
  /**
   * After stopping, re-raise the signal so the process ends as it would have by default
   * (exit status "killed by SIGTERM"). Default `true`. With `false` the application decides when
   * to exit (e.g. after closing its HTTP server); the handler only stops the electors.
   */
  exit?: boolean;
  /** Reports a failed or timed-out stop. Default `console.error`. */
  onError?: (error: unknown) => void;
}

/**
 * Stops `targets` when one of the signals arrives. A second signal while stopping ends the process
 * at once. Returns a function that removes the handlers again.
 *
 * ```ts
 * const elector = new LeaderElector({ ... });
 * stopOnSignals(elector);          // or: new LeaderElector({ handleSignals: true, ... })
 * await elector.start();
 * ```
 */
export function stopOnSignals(targets: Stoppable | readonly Stoppable[], options: StopOnSignalsOptions = {}): () => void {
  const list = Array.isArray(targets) ? [...(targets as readonly Stoppable[])] : [targets as Stoppable];
  const signals = options.signals ?? DEFAULT_SHUTDOWN_SIGNALS;
  const timeoutMs = options.timeoutMs ?? DEFAULT_SHUTDOWN_TIMEOUT_MS;
  const exit = options.exit ?? true;
  const report = options.onError ?? ((error: unknown) => console.error('gemstone-utils: stopping on a signal failed:', error));
  let stopping = false;

  const remove = () => {
    for (const signal of signals) process.removeListener(signal, handler);
  };
  const reraise = (signal: NodeJS.Signals) => {
    remove();
    // Without our handler (and with no other listener) the default action ends the process.
    if (process.listenerCount(signal) === 0) process.kill(process.pid, signal);
  };

  function handler(signal: NodeJS.Signals): void {
    if (stopping) {
      reraise(signal);
      return;
    }
    stopping = true;
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<void>((resolve) => {
      timer = setTimeout(() => {
        report(new Error(`gemstone-utils: electors did not stop within ${timeoutMs} ms of ${signal}; exiting anyway`));
        resolve();
      }, timeoutMs);
    });
    const stopped = Promise.all(list.map((t) => t.stop().catch(report))).then(() => undefined);
    void Promise.race([stopped, timeout]).then(() => {
      clearTimeout(timer);
      if (exit) reraise(signal);
      else remove();
    });
  }

  for (const signal of signals) process.on(signal, handler);
  return remove;
}
