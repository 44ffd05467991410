import type { DataSource, EntityManager } from 'typeorm';
import { ValidationError, shown } from '../errors';
import { partsOf } from '../databases/parts';
import { contextOf } from './context';
import { asGuardRefusal } from './guard-refusal';
import { DEFAULT_SQLITE_WAIT_MS } from './defaults';
import { DEFAULT_CONFLICT_RETRIES, inTransaction } from './session';

/** The options of {@link withTransaction}. */
export interface WithTransactionOptions {
  /**
   * How often a deadlock, lock wait timeout or busy SQLite database reruns `work` (in a new
   * transaction: the failed one was rolled back). Default {@link DEFAULT_CONFLICT_RETRIES};
   * 0 never reruns it.
   */
  readonly conflictRetries?: number;
  /**
   * SQLite: how long to wait for a transaction someone else holds open on the shared connection
   * before throwing `SqliteTransactionOpenError`. Default {@link DEFAULT_SQLITE_WAIT_MS}.
   */
  readonly sqliteWaitMs?: number;
}

/**
 * Runs `work` in a transaction of its own and commits it — `dataSource.transaction()` made safe
 * beside the library on SQLite, and retried on conflicts everywhere. Use it for fenced
 * leader-only writes (`assertLeader` first, then the writes).
 *
 * SQLite: every QueryRunner of a TypeORM SQLite DataSource shares one connection. This helper
 * waits until no other transaction is open on it, then opens a real one (never a SAVEPOINT of
 * someone else's). Library calls inside `work` must pass `{ session: manager }`: without it they
 * throw `SessionRequiredError` at once (their own transaction could only start after this one).
 * `work` may run more than once: keep it to database work (or make its side effects idempotent),
 * or pass `{ conflictRetries: 0 }`.
 *
 * A write that a guarded table refused (`ElectionService.guardTable`: this transaction proved no
 * live leadership of its namespace) rejects as `NotLeaderError`, the database's error its `cause`.
 */
export function withTransaction<T>(
  dataSource: DataSource,
  work: (manager: EntityManager) => Promise<T>,
  options: WithTransactionOptions = {},
): Promise<T> {
  if (typeof dataSource !== 'object' || dataSource === null || typeof dataSource.createQueryRunner !== 'function') {
    return Promise.reject(new ValidationError('dataSource', 'must be a TypeORM DataSource'));
  }
  if (typeof work !== 'function') return Promise.reject(new ValidationError('work', 'must be a function'));
  const retries = options.conflictRetries ?? DEFAULT_CONFLICT_RETRIES;
  if (!Number.isSafeInteger(retries) || retries < 0) {
    return Promise.reject(new ValidationError('options.conflictRetries', `must be a non-negative integer (got ${shown(retries)})`));
  }
  const waitMs = options.sqliteWaitMs ?? DEFAULT_SQLITE_WAIT_MS;
  if (typeof waitMs !== 'number' || !Number.isFinite(waitMs) || waitMs < 0) {
    return Promise.reject(new ValidationError('options.sqliteWaitMs', `must be a finite number of milliseconds >= 0 (got ${shown(waitMs)})`));
  }
  // SQLite waits for the shared connection first (see `databases/sqlite/connection.ts`). A write a
  // guarded table refused (its transaction proved no live leadership) leaves as NotLeaderError.
  return partsOf(contextOf(dataSource))
    .session.withTransaction(dataSource, work, retries, waitMs)
    .catch((error: unknown) => {
      throw asGuardRefusal(dataSource, error);
    });
}

/**
 * @internal `withTransaction` on a database whose transactions need no more than the library's
 * own (`inTransaction`): rerun on conflicts, but not after a unique violation (the caller's
 * `work` is not known to be an election write).
 */
export function anyWithTransaction<T>(dataSource: DataSource, work: (manager: EntityManager) => Promise<T>, retries: number): Promise<T> {
  return inTransaction(dataSource, undefined, (manager) => work(manager), { conflictRetries: retries, retryUniqueViolation: false });
}
