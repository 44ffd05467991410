import type { DataSource, QueryRunner } from 'typeorm';

/*
 * Every QueryRunner of a TypeORM SQLite DataSource shares ONE connection, so a transaction there
 * is the connection's: a second BEGIN from anyone becomes a SAVEPOINT of the first (TypeORM) or
 * fails, and every statement sent while a transaction is open belongs to it. The library therefore
 * never opens its transaction while another one is open (it waits), and runs its transaction as
 * ONE step nobody can slip a statement into:
 * - better-sqlite3 is synchronous: BEGIN IMMEDIATE … COMMIT run in one turn of the event loop.
 * - sqlite3 is asynchronous but runs the statements sent to a connection in order: the whole
 *   transaction, BEGIN IMMEDIATE … COMMIT, is ONE `exec` (see `queueAtomic` in `sqlite3-program.ts`), so whatever the
 *   application sends later runs after it. Decisions must then be made by the SQL itself (see
 *   `programs.ts`).
 */

/*
 * This file: the parts of the two drivers' connections the library uses, and how to reach them
 * from a DataSource. The rest of that machinery, one job per file: `transaction-scope.ts` (calls
 * inside `withTransaction`), `waiters.ts` (waiting for the shared connection, in arrival order),
 * `busy.ts` (another connection's write lock), `statement-cache.ts` (better-sqlite3's prepared
 * statements), `compile.ts` (statements rendered once), `sync-step.ts` (better-sqlite3: one
 * synchronous step), `sqlite3-program.ts` (sqlite3: one `exec`), `run-program.ts` (either),
 * `own-transaction.ts` (a transaction with JavaScript between its statements).
 */

/** The parts of a better-sqlite3 `Database` the library uses. */
export interface BetterSqliteDatabase {
  readonly inTransaction: boolean;
  /** The database file (as opened). */
  readonly name: string;
  readonly open: boolean;
  prepare(text: string): BetterSqliteStatement;
}

export interface BetterSqliteStatement {
  readonly reader: boolean;
  all(...values: unknown[]): unknown[];
  run(...values: unknown[]): unknown;
}

/** The parts of a node-sqlite3 `Database` the library uses. */
export interface Sqlite3Database {
  serialize(work?: () => void): void;
  all(text: string, values: unknown[], callback: (error: Error | null, rows: unknown[]) => void): void;
  /** `sqlite3_exec`: runs the statements of `text` one after the other and stops at the first that fails. */
  exec(text: string, callback: (error: Error | null) => void): void;
}

export type Rows = Record<string, unknown>[];

/** The driver's connection: a public property of TypeORM's SQLite drivers, absent from `Driver`. */
export function connectionOf(dataSource: DataSource): unknown {
  return (dataSource.driver as unknown as { databaseConnection?: unknown }).databaseConnection;
}

export function betterSqlite(dataSource: DataSource): BetterSqliteDatabase | undefined {
  const db = connectionOf(dataSource) as Partial<BetterSqliteDatabase> | undefined;
  return db && typeof db.prepare === 'function' && typeof db.inTransaction === 'boolean' ? (db as BetterSqliteDatabase) : undefined;
}

/** The one QueryRunner of a TypeORM SQLite DataSource (its drivers hand out the same one). */
export function sharedRunner(dataSource: DataSource): QueryRunner {
  return dataSource.createQueryRunner();
}

/** Whether a transaction is open (or being opened through TypeORM) on the shared connection. */
export function transactionOpen(dataSource: DataSource): boolean {
  // TypeORM sets isTransactionActive before it sends BEGIN and clears it after COMMIT completes.
  if (sharedRunner(dataSource).isTransactionActive) return true;
  return betterSqlite(dataSource)?.inTransaction === true;
}

/** Whether the DataSource runs on better-sqlite3 (synchronous steps: `sync-step.ts`). */
export function isBetterSqlite(dataSource: DataSource): boolean {
  return betterSqlite(dataSource) !== undefined;
}

export interface Log {
  sent(text: string, values: readonly unknown[]): void;
  error(error: unknown, text: string, values: readonly unknown[]): void;
}

/** Logs statements through the DataSource's logger, as TypeORM logs its own queries. */
export function loggerOf(dataSource: DataSource): Log {
  // (The connection settings this module changes around a step are not logged: they are not
  // statements of the call.)
  return {
    sent: (text, values) => dataSource.logger.logQuery(text, [...values]),
    error: (error, text, values) => dataSource.logger.logQueryError(error instanceof Error ? error : String(error), text, [...values]),
  };
}
