import type { DataSource } from 'typeorm';
import type { CancellableReads, ReadStatement } from '../databases/contract/cancellable-reads';
import { partsOf } from '../databases/parts';
import { GemstoneError } from '../errors';
import { contextOf, DbContext } from './context';
import { explainedRun } from './explain-hook';
import { assertRunCurrent, currentRunSignal, outsideRuns, withinRun } from './run-guard';
import { execute, withManager } from './session';

/** How much earlier than the host's timer the database's clock may see a bound pass. */
const TIMER_SLACK_MS = 50;

/** What bounds one {@link boundedRead}. */
export interface ReadBounds {
  /** Ends the read early: a statement it runs is cancelled at the database, and no further one is sent. */
  readonly signal?: AbortSignal;
  /** How long the read may take, in ms (a whole number > 0), at the database and as a whole. */
  readonly timeoutMs: number;
  /** The name the timeout goes by where the caller configures it (e.g. `readTimeoutMs`): error messages name it. */
  readonly timeoutName: string;
  /** Receives a cancel that failed (the read then runs until the database answers it). */
  readonly onError: (error: unknown) => void;
}

/** A read that took longer than its bound: the database stopped it (or was told to). */
export class ReadTimeoutError extends GemstoneError {
  readonly timeoutMs: number;

  constructor(timeoutMs: number, timeoutName: string, options?: { cause?: unknown }) {
    super(
      `the database did not answer this read within ${timeoutName} (${timeoutMs} ms), so it was stopped there; a lock held by ` +
        `another session may be holding it up: try again later, or raise ${timeoutName}`,
      options,
    );
    this.timeoutMs = timeoutMs;
  }
}

/** A read ended by its `signal` (the caller went away or shut down); it was stopped at the database. */
export class ReadCancelledError extends GemstoneError {
  constructor(options?: { cause?: unknown }) {
    super('this read was cancelled at the database: the one who asked for it went away or is shutting down', options);
  }
}

/**
 * Runs `work` — reads only, outside any transaction of the application's — so that it can be
 * stopped at the database, not only abandoned: when `bounds.signal` aborts, when the read has
 * taken `bounds.timeoutMs`, or when the loop run it belongs to ends (see `run-guard.ts`), the
 * statement in flight is cancelled at the server and no further statement is sent; the promise
 * settles once the read's connection is back in the pool. The database's own timeout bounds each
 * statement too where the database has one, so a read is bounded even when the cancel cannot
 * reach the server. It rejects with {@link ReadTimeoutError} or {@link ReadCancelledError} then.
 *
 * Where the database has no cancellable reads (`DatabaseParts.cancellableReads`, absent on
 * SQLite) `work` runs as `withManager` runs it: no statement there waits without a bound (the
 * library's wait for the shared connection, the busy timeout), and a wait for the shared
 * connection ends at the next try once the read is stopped. A statement in flight there is not
 * interrupted: the sqlite3 driver's `interrupt()` would stop every statement of the one
 * connection all QueryRunners share (the application's and the elector's), and better-sqlite3
 * runs each statement synchronously, so none is ever in flight when the signal aborts.
 */
export function boundedRead<T>(dataSource: DataSource, bounds: ReadBounds, work: (send: ReadStatement, context: DbContext) => Promise<T>): Promise<T> {
  return explainedRun(dataSource, async () => {
    const context = contextOf(dataSource);
    const reads = partsOf(context).cancellableReads;
    const controller = new AbortController();
    const stop = () => controller.abort();
    const started = performance.now();
    let timedOut = false;
    const timer = setTimeout(() => {
      timedOut = true;
      stop();
    }, bounds.timeoutMs);
    const outer = [bounds.signal, currentRunSignal()].filter((signal): signal is AbortSignal => signal !== undefined);
    for (const signal of outer) {
      if (signal.aborted) stop();
      else signal.addEventListener('abort', stop, { once: true });
    }
    try {
      return await withinRun(controller.signal, () =>
        reads
          ? cancellable(context, reads, bounds, controller.signal, work)
          : withManager(dataSource, undefined, (m) => work((statement) => execute(context, m, statement), context)),
      );
    } catch (error) {
      if (controller.signal.aborted) throw timedOut ? new ReadTimeoutError(bounds.timeoutMs, bounds.timeoutName, { cause: error }) : new ReadCancelledError({ cause: error });
      // Not cancelled from here: the database's own bound ended the statement (not someone
      // else's cancel, which ends it before the bound and is passed on as it is).
      if (reads?.isCancelled(error) && performance.now() - started >= bounds.timeoutMs - TIMER_SLACK_MS) {
        throw new ReadTimeoutError(bounds.timeoutMs, bounds.timeoutName, { cause: error });
      }
      throw error;
    } finally {
      clearTimeout(timer);
      for (const signal of outer) signal.removeEventListener('abort', stop);
    }
  });
}

/**
 * `work` on a connection of its own, cancelled at the server when `signal` aborts. The cancel
 * goes only while `work` runs (its statements are this read's): before, nothing of it runs yet
 * and the next statement is refused; after, the connection may be about to serve someone else.
 * And the connection goes back to the pool only once a cancel sent for it has been passed on,
 * so that it can never reach the connection's next user.
 */
async function cancellable<T>(
  context: DbContext,
  reads: CancellableReads,
  bounds: ReadBounds,
  signal: AbortSignal,
  work: (send: ReadStatement, context: DbContext) => Promise<T>,
): Promise<T> {
  const runner = context.dataSource.createQueryRunner();
  let session: number | undefined;
  let working = false;
  let cancelling: Promise<void> | undefined;
  const cancel = () => {
    if (!working || session === undefined || cancelling) return;
    const id = session;
    // The cancel is no statement of the read's (whose run has just ended): it runs outside it.
    cancelling = outsideRuns(() => reads.cancel(context, id)).catch((error: unknown) => bounds.onError(error));
  };
  signal.addEventListener('abort', cancel, { once: true });
  try {
    // Taking a connection may wait for a free one: a read stopped meanwhile sends nothing.
    await runner.connect();
    assertRunCurrent();
    return await reads.run(
      context,
      runner,
      bounds.timeoutMs,
      (id) => (session = id),
      async (send) => {
        working = true;
        try {
          return await work(send, context);
        } finally {
          working = false;
          // Before COMMIT or ROLLBACK: a cancel under way has reached the server by then.
          await cancelling;
        }
      },
    );
  } finally {
    signal.removeEventListener('abort', cancel);
    await cancelling;
    await runner.release();
  }
}
