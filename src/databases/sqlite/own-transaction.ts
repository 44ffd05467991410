import type { DataSource, QueryRunner } from 'typeorm';
import { assertRunCurrent } from '../../db/run-guard';
import { DEFAULT_SQLITE_WAIT_MS } from '../../db/defaults';
import { registerSqliteConnection } from './busy';
import { sharedRunner } from './driver';
import { refuseInsideTransactionScope } from './transaction-scope';
import { connectionReleased, whenNoTransaction } from './waiters';

/**
 * SQLite, for library work that needs JavaScript between its statements (schema installation,
 * `withTransaction`): waits until no transaction is open, then opens one on the shared QueryRunner
 * in that same turn of the event loop, runs `work` on it and commits (rolls back when it throws).
 * Unlike `runProgram` (`run-program.ts`) it is not one step: `work` must be the only user of the DataSource
 * meanwhile, or pass its manager as `session` (see `withTransaction`).
 */
export async function ownSqliteTransaction<T>(
  dataSource: DataSource,
  work: (runner: QueryRunner) => Promise<T>,
  waitMs: number = DEFAULT_SQLITE_WAIT_MS,
): Promise<T> {
  refuseInsideTransactionScope(dataSource);
  registerSqliteConnection(dataSource);
  const runner = sharedRunner(dataSource);
  // startTransaction marks the runner active before its first await: nobody can open another.
  await whenNoTransaction(dataSource, waitMs, () => runner.startTransaction());
  try {
    const result = await work(runner);
    // A run that ended meanwhile commits nothing more: the ROLLBACK below ends the transaction.
    assertRunCurrent();
    await runner.commitTransaction();
    return result;
  } catch (error) {
    // The original error matters more than a failed rollback on a broken connection.
    if (runner.isTransactionActive) await runner.rollbackTransaction().catch(() => undefined);
    throw error;
  } finally {
    connectionReleased(dataSource);
  }
}
