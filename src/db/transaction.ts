import type { DataSource, EntityManager } from 'typeorm';
import { ValidationError } from '../errors';
import { DEFAULT_CONFLICT_RETRIES, inTransaction } from './session';

export interface WithTransactionOptions {
  /**
   * How often a deadlock, lock wait timeout or busy SQLite database reruns `work` (in a new
   * transaction: the failed one was rolled back). Default {@link DEFAULT_CONFLICT_RETRIES};
   * 0 never reruns it.
   */
  readonly conflictRetries?: number;
}

/**
 * Runs `work` in a transaction of its own and commits it — `dataSource.transaction()` made safe
 * beside the library on SQLite, and retried on conflicts everywhere. Use it for fenced
 * leader-only writes (`assertLeader` first, then the writes).
 *
 * Why not `dataSource.transaction()`: every QueryRunner of a TypeORM SQLite DataSource shares one
 * connection, so an application transaction started while a `LeaderElector` tick is in its own
 * fails ("cannot start a transaction within a transaction"). This helper takes the library's
 * in-process SQLite lock, so the two take turns. `work` may run more than once: keep it to
 * database work (or make its side effects idempotent), or pass `{ conflictRetries: 0 }`.
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
    return Promise.reject(new ValidationError('options.conflictRetries', `must be a non-negative integer (got ${String(retries)})`));
  }
  return inTransaction(dataSource, undefined, (manager) => work(manager), { conflictRetries: retries, retryUniqueViolation: false });
}
