import { AsyncLocalStorage } from 'async_hooks';
import { GemstoneError } from '../errors';

/*
 * A loop of the library (an elector, a group, a watch, a LISTEN connection) runs its work inside
 * its run: the run's AbortSignal travels with every asynchronous continuation of that work (timers,
 * awaits, retries). The places where the library sends a statement check it first, so work left
 * over from a run that ended — a retry after a busy database, the next batch of a prune, a
 * transaction waiting for the shared SQLite connection, the late answer of a tick — sends nothing
 * more, whatever it was waiting for. User code the loops call (callbacks, event listeners) runs
 * outside any run: its statements are the user's own.
 */
const runs = new AsyncLocalStorage<AbortSignal>();

/** A statement refused because the loop whose work would have sent it has stopped. */
export class RunEndedError extends GemstoneError {
  constructor() {
    super('gemstone-utils: the loop this work belonged to has stopped; no further statement is sent for it');
  }
}

/** Runs `work` as part of the run `signal` stands for: once it aborts, `work` sends no further statement. */
export function withinRun<T>(signal: AbortSignal, work: () => T): T {
  return runs.run(signal, work);
}

/** Runs `work` (user code a loop calls) outside any run. */
export function outsideRuns<T>(work: () => T): T {
  return runs.exit(work);
}

/** The signal of the run the current work belongs to, if any (a read that cancels itself follows it too). */
export function currentRunSignal(): AbortSignal | undefined {
  return runs.getStore();
}

/** Whether the current work belongs to a loop's run. */
export function inRun(): boolean {
  return runs.getStore() !== undefined;
}

/** Throws {@link RunEndedError} when the run of the current work has ended; call right before sending a statement. */
export function assertRunCurrent(): void {
  if (runs.getStore()?.aborted) throw new RunEndedError();
}
