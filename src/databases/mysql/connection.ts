import type { QueryRunner } from 'typeorm';
import type { SessionParts } from '../contract/session';
import type { DbContext } from '../../db/context';
import { executeRaw, OWN_ISOLATION_LEVEL, ownTransaction, withManager } from '../../db/session';
import { anyWithTransaction } from '../../db/transaction';
import { endImplicitTransaction, mysqlSessionFacts, runMysql } from './session';

/**
 * MySQL/MariaDB, outside any transaction of the caller's: runs `work` on the session's connection
 * or one borrowed from the pool (one connection for all its statements). A statement there is
 * its own transaction, except on a connection whose session has autocommit off (it would open a
 * transaction and leave it open, holding its snapshot and locks, also after the connection went
 * back to the pool) or reads uncommitted rows (READ UNCOMMITTED): there `work` runs in the
 * library's own READ COMMITTED transaction instead.
 */
async function mysqlOutsideTransaction<T>(
  context: DbContext,
  sessionRunner: QueryRunner | undefined,
  work: (runner: QueryRunner) => Promise<T>,
): Promise<T> {
  const runner = sessionRunner ?? context.dataSource.createQueryRunner();
  try {
    const facts = await mysqlSessionFacts(context.dataSource, runner);
    if (facts.autocommit && !facts.readUncommitted) return await work(runner);
    return await ownTransaction(context, runner, () => work(runner));
  } finally {
    if (!sessionRunner) await runner.release();
  }
}

/** How the library's statements and transactions reach MySQL/MariaDB. */
export const mysqlSession: SessionParts = {
  sharesOneConnection: false,
  isolationLevel: OWN_ISOLATION_LEVEL,
  /**
   * On the manager's QueryRunner, with values as server-side parameters (see `session.ts`); the
   * DataSource's own manager borrows a pooled connection for the statement, as `withManager` does.
   */
  async executeRaw(context, manager, statement) {
    const runner = manager.queryRunner;
    if (runner) return runMysql(context.dataSource, runner, statement);
    return withManager(context.dataSource, undefined, (m) => executeRaw(context, m, statement));
  },
  /** No named statements: mysql2 keeps its own prepared statement per text (see `session.ts`). */
  sendNamed: async () => undefined,
  /**
   * A statement outside a transaction that would not run at READ COMMITTED (autocommit off, READ
   * UNCOMMITTED) is put in a transaction of the library's by {@link mysqlOutsideTransaction}.
   */
  outsideIsReadCommitted: async () => true,
  outsideTransaction: (context, runner, work) => mysqlOutsideTransaction(context, runner, (r) => work(r.manager)),
  ownTransaction,
  /**
   * Autocommit off: whatever earlier statements left open on this connection ends first, so the
   * isolation level can be set and the snapshot is taken now.
   */
  beforeBegin: (context, runner) => endImplicitTransaction(context.dataSource, runner),
  withTransaction: anyWithTransaction,
};
