import type { SessionParts } from '../contract/session';
import { contextOf } from '../../db/context';
import { backoff, executeRendered, sleep } from '../../db/session';
import { ownSqliteTransaction } from './own-transaction';
import { inTransactionScope } from './transaction-scope';
import { outsideTransactions } from './waiters';

/**
 * How the library's statements and transactions reach SQLite: every QueryRunner of a TypeORM
 * SQLite DataSource shares ONE connection, so a transaction there is the connection's (see
 * `driver.ts`), and the library opens its own only once no other is open.
 */
export const sqliteSession: SessionParts = {
  sharesOneConnection: true,
  /** SQLite transactions are serializable by construction and are started without a level. */
  isolationLevel: undefined,
  executeRaw: executeRendered,
  /** No named statements: better-sqlite3's statements are cached by text (see `statement-cache.ts`). */
  sendNamed: async () => undefined,
  /** SQLite has no weaker isolation a session could default to. */
  outsideIsReadCommitted: async () => true,
  outsideTransaction(context, runner, work) {
    if (runner) return work(runner.manager);
    // Never read another transaction's uncommitted rows on the shared connection.
    const { dataSource } = context;
    return outsideTransactions(dataSource, () => work(dataSource.manager));
  },
  /** On the shared connection, once no other transaction is open (the session's runner is that connection's). */
  ownTransaction: (context, _runner, work) => ownSqliteTransaction(context.dataSource, (r) => work(r.manager)),
  beforeBegin: async () => undefined,
  /**
   * Waits (up to `waitMs`) until no other transaction is open on the shared connection, then
   * opens a real one (never a SAVEPOINT of someone else's); library calls inside `work` without
   * `session` are refused (see `inTransactionScope`).
   */
  async withTransaction(dataSource, work, retries, waitMs) {
    const { dialect } = contextOf(dataSource);
    for (let attempt = 0; ; attempt++) {
      try {
        return await ownSqliteTransaction(dataSource, (runner) => inTransactionScope(dataSource, () => work(runner.manager)), waitMs);
      } catch (error) {
        if (!dialect.isRetryableConflict(error) || attempt >= retries) throw error;
        await sleep(backoff(attempt));
      }
    }
  },
};
