import { outsideRuns } from '../../../db/run-guard';
import { EntitiesNotRegisteredError } from '../../../errors';
import type { ElectorLogger } from '../elector-options';
import type { ElectorErrorPhase, LeaderElectorError } from '../errors';

/** The facade's side of events: an `EventEmitter` (typed by the facade; seen untyped here) that can be stopped. */
export interface LoopEmitter {
  emit(event: string | symbol, ...args: unknown[]): boolean;
  listenerCount(event: string | symbol): number;
  stop(): Promise<void>;
}

/** Builds the error a loop reports: `ns` is the namespace concerned, null for the whole loop. */
export type ErrorFactory = (phase: ElectorErrorPhase, ns: string | null, message: string, cause: unknown) => LeaderElectorError;

/**
 * Where a loop's events, user code and errors go. User code (callbacks, listeners, the logger)
 * runs outside the loop's run (its statements are the user's own, not refused when the loop
 * stops); a throw or rejection of it is reported as `'error'` (phase `callback`), never
 * propagated. Errors go to the `'error'` listeners, or to the logger when there are none.
 */
export class Reporter {
  readonly #emitter: LoopEmitter;
  readonly #logger: ElectorLogger;
  readonly #error: ErrorFactory;
  /** Messages of misconfiguration errors already reported since the last successful tick. */
  readonly #reportedMisconfigurations = new Set<string>();

  constructor(emitter: LoopEmitter, logger: ElectorLogger, error: ErrorFactory) {
    this.#emitter = emitter;
    this.#logger = logger;
    this.#error = error;
  }

  /** Reports a new error of `phase` and returns it. */
  fail(phase: ElectorErrorPhase, ns: string | null, message: string, cause: unknown): LeaderElectorError {
    const error = this.#error(phase, ns, message, cause);
    this.report(error);
    return error;
  }

  report(error: LeaderElectorError): void {
    if (this.#emitter.listenerCount('error') > 0) {
      try {
        outsideRuns(() => this.#emitter.emit('error', error));
        return;
      } catch (listenerError) {
        this.#log(this.#error('callback', null, "an 'error' listener threw", listenerError));
      }
    }
    this.#log(error);
  }

  /**
   * A misconfiguration (missing entities) fails every tick with the same message: it is reported
   * once per distinct message until a tick succeeds ({@link succeeded}), not once per tick.
   */
  isRepeatedMisconfiguration(error: unknown): boolean {
    if (!(error instanceof EntitiesNotRegisteredError)) return false;
    if (this.#reportedMisconfigurations.has(error.message)) return true;
    this.#reportedMisconfigurations.add(error.message);
    return false;
  }

  /** A tick succeeded: a misconfiguration met again is news. */
  succeeded(): void {
    this.#reportedMisconfigurations.clear();
  }

  /** Calls user code `fn` (named `name` in a report about `ns`). */
  callback(ns: string | null, name: string, fn: () => unknown): Promise<void> {
    const report = (error: unknown) => void this.fail('callback', ns, `${name} threw`, error);
    try {
      return Promise.resolve(outsideRuns(fn)).then(() => undefined, report);
    } catch (error) {
      report(error);
      return Promise.resolve();
    }
  }

  /** Emits `event` to the loop's listeners. */
  emit(event: string, ...args: unknown[]): void {
    try {
      outsideRuns(() => this.#emitter.emit(event, ...args));
    } catch (error) {
      this.fail('callback', null, `a '${event}' listener threw`, error);
    }
  }

  #log(error: LeaderElectorError): void {
    try {
      outsideRuns(() => this.#logger.error(`gemstone-utils: ${error.message}`, error));
    } catch {
      // A broken logger must not take the loop down with it.
    }
  }
}
