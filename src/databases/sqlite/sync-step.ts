import type { DataSource } from 'typeorm';
import { assertRunCurrent } from '../../db/run-guard';
import { DEFAULT_SQLITE_WAIT_MS } from '../../db/defaults';
import { render, SqlFragment } from '../../db/sql';
import { isBusy, remember, retryWhileBusy, syncBusyWait } from './busy';
import { CompiledStatement, Slot } from './compile';
import { betterSqlite, BetterSqliteDatabase, BetterSqliteStatement, Log, loggerOf, Rows, transactionOpen } from './driver';
import { execute, preparedByKey } from './statement-cache';
import { refuseInsideTransactionScope } from './transaction-scope';
import { whenNoTransaction } from './waiters';

export interface ProgramOptions {
  /** Run the statements in one BEGIN IMMEDIATE … COMMIT (false: reads that change nothing). */
  readonly transaction: boolean;
  /** See {@link DEFAULT_SQLITE_WAIT_MS}. */
  readonly waitMs?: number;
}

/**
 * The statements of a synchronous step (better-sqlite3): `run` executes one and returns its rows
 * (for a write without RETURNING: none). `key` names the statement's shape — the same key always
 * renders the same text — so its prepared statement is found without hashing the text.
 */
export interface SyncStep {
  run(key: string, statement: SqlFragment): Rows;
  /** Runs a statement made by `compile` (`compile.ts`) with its named inputs. */
  runCompiled(statement: CompiledStatement, input: Readonly<Record<string, unknown>>): Rows;
}

/**
 * better-sqlite3: runs `work` synchronously — in one turn of the event loop, so nothing else can
 * send a statement on the shared connection meanwhile — once no transaction is open on it, in a
 * transaction of its own (`BEGIN IMMEDIATE` … `COMMIT`, rolled back when `work` throws) when
 * `transaction` is true. `work` may decide in JavaScript between its statements: it holds the
 * database write lock throughout. A busy database is retried (see `retryWhileBusy` in `busy.ts`), so
 * `work` may run more than once: it must have no effect outside the database.
 */
export function runSyncStep<T>(dataSource: DataSource, work: (step: SyncStep) => T, options: ProgramOptions): Promise<T> {
  const db = betterSqlite(dataSource);
  try {
    refuseInsideTransactionScope(dataSource);
    if (!db) throw new Error('gemstone-utils: runSyncStep needs a better-sqlite3 DataSource');
    assertRunCurrent();
  } catch (error) {
    return Promise.reject(error);
  }
  remember(db);
  const log = loggerOf(dataSource);
  // The common case at once, in this turn: no transaction open, the write lock free (or freed
  // within the wait). No await before it, so nothing can open a transaction in between.
  if (!transactionOpen(dataSource)) {
    try {
      return Promise.resolve(runSynchronously(db, work, options.transaction, log, syncBusyWait(db)));
    } catch (error) {
      if (!isBusy(error)) return Promise.reject(error);
    }
  }
  const waitMs = options.waitMs ?? DEFAULT_SQLITE_WAIT_MS;
  return retryWhileBusy(waitMs, () => whenNoTransaction(dataSource, waitMs, () => runSynchronously(db, work, options.transaction, log, syncBusyWait(db))));
}

function runSynchronously<T>(db: BetterSqliteDatabase, work: (step: SyncStep) => T, transaction: boolean, log: Log, busyWaitMs: number): T {
  const run = (key: string, statement: SqlFragment | string): Rows => {
    const { text, values } = typeof statement === 'string' ? { text: statement, values: [] as readonly unknown[] } : render(statement, 'question');
    log.sent(text, values);
    try {
      return execute(preparedByKey(db, key, text), values);
    } catch (error) {
      log.error(error, text, values);
      throw error;
    }
  };
  const runCompiled = (statement: CompiledStatement, input: Readonly<Record<string, unknown>>): Rows => {
    const values = statement.values.map((value) => (value instanceof Slot ? input[value.key] : value));
    log.sent(statement.text, values);
    try {
      let prepared = statement.prepared.get(db) as BetterSqliteStatement | undefined;
      if (!prepared) statement.prepared.set(db, (prepared = db.prepare(statement.text)));
      return execute(prepared, values);
    } catch (error) {
      log.error(error, statement.text, values);
      throw error;
    }
  };
  // A long synchronous wait for another connection's lock would block the whole event loop, and
  // with it the holder if it lives in this process: wait briefly at most, then retry asynchronously.
  const busyRow = execute(preparedByKey(db, 'pragma:read', 'PRAGMA busy_timeout'), [])[0];
  const busyTimeout = Math.max(0, Math.floor(Number(busyRow ? Object.values(busyRow)[0] : 0))) || 0;
  const briefWait = Math.min(busyTimeout, busyWaitMs);
  if (briefWait !== busyTimeout) execute(preparedByKey(db, 'pragma:brief', `PRAGMA busy_timeout = ${briefWait}`), []);
  try {
    if (transaction) run('begin', 'BEGIN IMMEDIATE');
    try {
      const result = work({ run, runCompiled });
      if (transaction) run('commit', 'COMMIT');
      return result;
    } catch (error) {
      if (transaction && db.inTransaction) run('rollback', 'ROLLBACK');
      throw error;
    }
  } finally {
    if (briefWait !== busyTimeout) execute(preparedByKey(db, 'pragma:restore', `PRAGMA busy_timeout = ${busyTimeout}`), []);
  }
}
