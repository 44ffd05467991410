import type { DataSource } from 'typeorm';
import { contextOf } from '../../db/context';
import { execute } from '../../db/session';
import { sql } from '../../db/sql';
import { DEFAULT_SQLITE_BUSY_TIMEOUT_MS } from '../../db/defaults';
import type { SetupParts } from '../contract/setup';
import { registerSqliteConnection } from './busy';
import { outsideTransactions } from './waiters';
import { sqliteDialect } from './dialect';

/** better-sqlite3 (TypeORM 1.x and 0.3) and sqlite3 (TypeORM 0.3 only). */
export const SQLITE_TYPES: readonly string[] = ['better-sqlite3', 'sqlite'];

/**
 * A SQLite connection without a busy timeout fails at once when another process writes; give it
 * one unless the application chose its own.
 */
async function ensureBusyTimeout(dataSource: DataSource): Promise<void> {
  const context = contextOf(dataSource);
  await outsideTransactions(dataSource, async () => {
    const [row] = await execute<Record<string, unknown>>(context, dataSource.manager, sql`PRAGMA busy_timeout`);
    const current = Number(row ? Object.values(row)[0] : 0);
    if (current === 0) {
      await execute(context, dataSource.manager, sql`PRAGMA busy_timeout = ${DEFAULT_SQLITE_BUSY_TIMEOUT_MS}`);
    }
  });
}

/** SQLite: connecting (see `db/init-db.ts`). */
export const sqliteSetup: SetupParts = {
  types: SQLITE_TYPES,
  /** TypeORM 1.x has no `sqlite` (sqlite3) driver any more: a bad target on this TypeORM line. */
  missingDriverHint: (type) => (type === 'sqlite' ? ' (TypeORM 1.x removed the sqlite3 driver: use better-sqlite3)' : ''),
  /**
   * TypeORM 0.3's sqlite3 driver switches the file to WAL before it sets the busy timeout, so
   * processes opening one fresh file together can get SQLITE_BUSY from `initialize()` (which then
   * closes the connection again): retry it for a while.
   */
  busyOnInitialize: (error) => sqliteDialect.isRetryableConflict(error),
  /** A busy timeout (unless the application set one), and the connection known as one of this thread's. */
  async afterInitialize(dataSource) {
    await ensureBusyTimeout(dataSource);
    registerSqliteConnection(dataSource);
  },
};
