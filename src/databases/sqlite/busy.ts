import type { DataSource } from 'typeorm';
import { assertRunCurrent } from '../../db/run-guard';
import { betterSqlite, BetterSqliteDatabase } from './driver';

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

export function isBusy(error: unknown): boolean {
  const { code, message } = (error ?? {}) as { code?: unknown; message?: unknown };
  return /^SQLITE_(BUSY|LOCKED)/.test(String(code)) || /database is locked|SQLITE_BUSY/i.test(String(message));
}

/**
 * better-sqlite3: how long (milliseconds) a step may wait for another connection's write lock
 * inside SQLite, asleep in its busy handler (1, 2, 5, 10, 15, 20, 25, … 50, 100 ms between tries
 * of the lock), never longer than the connection's own `busy_timeout`; the event loop waits as
 * long. Holders in other threads and processes keep the lock well under a millisecond per
 * call of the library, so waits end long before. Retrying from JavaScript instead costs CPU at
 * every try, which the holder needs: with dozens of writers on few cores that starved the holder
 * and everyone behind it. A holder in THIS thread — a transaction open across an `await` on
 * another DataSource of the file — could not finish while the event loop waits: when the library
 * knows of one (see {@link connectionsInThisThread}) it waits {@link SYNC_BUSY_RETRY_WAIT_MS} at
 * most, between asynchronous pauses that let it run.
 */
const SYNC_BUSY_WAIT_MS = 250;

/** better-sqlite3: the longest wait inside SQLite while a connection of this thread holds a transaction (milliseconds). */
const SYNC_BUSY_RETRY_WAIT_MS = 3;

/**
 * The better-sqlite3 connections of this thread that the library has seen (initDb, its calls):
 * a transaction open on one of them, on the same file, may hold the write lock another one waits
 * for. (Module state is per thread: worker threads have their own.)
 */
const connectionsInThisThread = new Set<WeakRef<BetterSqliteDatabase>>();
const registered = new WeakSet<BetterSqliteDatabase>();

/** Remembers the DataSource's better-sqlite3 connection as one of this thread's (see {@link connectionsInThisThread}). */
export function registerSqliteConnection(dataSource: DataSource): void {
  const db = betterSqlite(dataSource);
  if (db) remember(db);
}

export function remember(db: BetterSqliteDatabase): void {
  if (registered.has(db)) return;
  registered.add(db);
  connectionsInThisThread.add(new WeakRef(db));
}

/** Whether another connection of this thread to the same file has a transaction open. */
function transactionElsewhereInThisThread(db: BetterSqliteDatabase): boolean {
  for (const ref of connectionsInThisThread) {
    const other = ref.deref();
    if (!other || !other.open) {
      connectionsInThisThread.delete(ref);
      continue;
    }
    if (other !== db && other.inTransaction && other.name === db.name) return true;
  }
  return false;
}

/** How long the next attempt of a step on `db` may wait for the write lock inside SQLite. */
export function syncBusyWait(db: BetterSqliteDatabase): number {
  return transactionElsewhereInThisThread(db) ? SYNC_BUSY_RETRY_WAIT_MS : SYNC_BUSY_WAIT_MS;
}

/**
 * Wait before retry `attempt` of a busy database: 1 to 5 ms, jittered, never growing further.
 * A wait that grows with the attempts is unfair: under contention the callers that already waited
 * longest would try least often, and some would never get the lock (measured: with 64 writers
 * on one file, several completed no call in two seconds). Short bounded waits give every waiter
 * the same chance at each release of the lock; the limit of the whole wait is `waitMs`.
 */
function busyBackoff(attempt: number): number {
  return 1 + Math.random() * Math.min(4, 1 + attempt);
}

/**
 * Retries `attempt` while it fails because another connection holds the write lock (it ends by
 * itself: wait without blocking), up to `waitMs` since the first attempt.
 */
export async function retryWhileBusy<T>(waitMs: number, attempt: () => Promise<T>, backoff: (attempt: number) => number = busyBackoff): Promise<T> {
  const since = Date.now();
  for (let tries = 0; ; tries++) {
    assertRunCurrent();
    try {
      return await attempt();
    } catch (error) {
      if (!isBusy(error) || Date.now() - since >= waitMs) throw error;
      await sleep(backoff(tries));
    }
  }
}
