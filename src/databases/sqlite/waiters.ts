import type { DataSource } from 'typeorm';
import { assertRunCurrent } from '../../db/run-guard';
import { DEFAULT_SQLITE_WAIT_MS } from '../../db/defaults';
import { SqliteTransactionOpenError } from '../../errors';
import { transactionOpen } from './driver';
import { refuseInsideTransactionScope } from './transaction-scope';

/** The library's waiters for the shared connection of each DataSource, in arrival order. */
const waiters = new WeakMap<DataSource, object[]>();
/** The sleeping waiters of each DataSource, woken early when the library releases the connection. */
const sleepers = new WeakMap<DataSource, Set<() => void>>();

/** Wakes the library's waiters: a transaction or program of its own on the connection ended. */
export function connectionReleased(dataSource: DataSource): void {
  const set = sleepers.get(dataSource);
  if (set) for (const wake of [...set]) wake();
}

/** Sleeps `ms`, or less when {@link connectionReleased} is called meanwhile. */
function pause(dataSource: DataSource, ms: number): Promise<void> {
  let set = sleepers.get(dataSource);
  if (!set) sleepers.set(dataSource, (set = new Set()));
  const sleeping = set;
  return new Promise((resolve) => {
    const wake = () => {
      clearTimeout(timer);
      sleeping.delete(wake);
      resolve();
    };
    const timer = setTimeout(wake, ms);
    sleeping.add(wake);
  });
}

/**
 * Calls `start` in the same turn of the event loop in which no transaction was open, waiting
 * (polling with a short backoff) up to `waitMs`; then throws {@link SqliteTransactionOpenError}.
 * The library's waiters take the connection in arrival order: a stream of back-to-back
 * `withTransaction` calls cannot keep a loop's tick waiting past its lease (each poll sees the
 * connection free at some moment, and without a queue the luckiest poller would win).
 */
export async function whenNoTransaction<T>(dataSource: DataSource, waitMs: number, start: () => T): Promise<T> {
  const since = Date.now();
  let queue = waiters.get(dataSource);
  if (!queue) waiters.set(dataSource, (queue = []));
  const me = {};
  queue.push(me);
  try {
    for (let attempt = 0; queue[0] !== me || transactionOpen(dataSource); attempt++) {
      if (Date.now() - since >= waitMs) throw new SqliteTransactionOpenError(waitMs);
      await pause(dataSource, Math.min(25, 1 + attempt * 2));
      // Waiting for someone else's transaction must not outlive the loop that asked.
      assertRunCurrent();
    }
    assertRunCurrent();
    return start();
  } finally {
    // Out of the queue in the turn that started (or gave up): the next waiter goes next, at once
    // when the connection is free (a synchronous step has already ended).
    queue.splice(queue.indexOf(me), 1);
    connectionReleased(dataSource);
  }
}

/** SQLite, reads with JavaScript between statements: run once no transaction is open. */
export async function outsideTransactions<T>(dataSource: DataSource, work: () => Promise<T>, waitMs = DEFAULT_SQLITE_WAIT_MS): Promise<T> {
  refuseInsideTransactionScope(dataSource);
  return whenNoTransaction(dataSource, waitMs, work);
}
