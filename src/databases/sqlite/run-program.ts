import type { DataSource } from 'typeorm';
import { DEFAULT_SQLITE_WAIT_MS } from '../../db/defaults';
import { render, SqlFragment } from '../../db/sql';
import { retryWhileBusy } from './busy';
import { connectionOf, isBetterSqlite, loggerOf, Rows, Sqlite3Database } from './driver';
import { queueAtomic, queueReads, readBusyTimeout } from './sqlite3-program';
import { ProgramOptions, runSyncStep } from './sync-step';
import { refuseInsideTransactionScope } from './transaction-scope';
import { connectionReleased, whenNoTransaction } from './waiters';

/**
 * Runs `statements` on the DataSource's shared connection as one uninterruptible step, in a
 * transaction of their own (`transaction: true`) that commits whole or changes nothing, once no
 * other transaction is open; returns each statement's rows (empty for writes). Another
 * connection (another DataSource or process) holding the write lock is waited for
 * asynchronously, up to the same limit: a busy attempt changed nothing and is run again.
 */
export async function runProgram(
  dataSource: DataSource,
  statements: readonly SqlFragment[],
  options: ProgramOptions,
): Promise<Rows[]> {
  if (isBetterSqlite(dataSource)) {
    return runSyncStep(dataSource, (step) => statements.map((statement) => step.run('', statement)), options);
  }
  refuseInsideTransactionScope(dataSource);
  const waitMs = options.waitMs ?? DEFAULT_SQLITE_WAIT_MS;
  const rendered = options.transaction ? [] : statements.map((s) => render(s, 'question'));
  const log = loggerOf(dataSource);
  const sqlite3 = connectionOf(dataSource) as Sqlite3Database;
  return retryWhileBusy(waitMs, async () => {
    const busyTimeout = await readBusyTimeout(sqlite3);
    const program = await whenNoTransaction(dataSource, waitMs, () =>
      options.transaction ? queueAtomic(sqlite3, statements, busyTimeout, log) : queueReads(sqlite3, rendered, busyTimeout, log),
    );
    try {
      return await program;
    } finally {
      connectionReleased(dataSource);
    }
  });
}
