import type { DataSource, EntityManager, QueryRunner } from 'typeorm';
import type { SessionParts } from '../databases/contract/session';
import { partsOf } from '../databases/parts';
import { SerializationFailureError, ValidationError } from '../errors';
import { contextOf, DbContext } from './context';
import { explainedRun } from './explain-hook';
import { assertRunCurrent, inRun } from './run-guard';
import { bind, PreparedSql, render, SqlFragment } from './sql';

import type { Session } from './session-type';

export type { Session } from './session-type';

/** How many times a call that owns its transaction retries a deadlock, lock timeout or busy database. */
export const DEFAULT_CONFLICT_RETRIES = 8;

/**
 * The isolation level of every transaction the library opens on PostgreSQL and MySQL/MariaDB,
 * whatever the DataSource's `isolationLevel` option or the server's default: the election's
 * locked reads rely on READ COMMITTED semantics (see `store.ts`). SQLite transactions are
 * serializable by construction and are started without a level.
 */
export const OWN_ISOLATION_LEVEL = 'READ COMMITTED';

function isQueryRunner(value: object): value is QueryRunner {
  return typeof (value as QueryRunner).startTransaction === 'function' && 'isTransactionActive' in value;
}

function isEntityManager(value: object): value is EntityManager {
  // `queryRunner` is absent (not just undefined) on a DataSource's default manager.
  return (
    typeof (value as EntityManager).transaction === 'function' &&
    typeof (value as EntityManager).getRepository === 'function' &&
    typeof (value as EntityManager).connection === 'object'
  );
}

/** The QueryRunner a session stands for; undefined for a plain `dataSource.manager`. */
export function runnerOf(session: Session | undefined, parameter = 'options.session'): QueryRunner | undefined {
  if (session === undefined) return undefined;
  if (typeof session !== 'object' || session === null) {
    throw new ValidationError(parameter, 'must be a TypeORM QueryRunner or EntityManager');
  }
  const runner = isQueryRunner(session) ? session : isEntityManager(session) ? session.queryRunner : null;
  if (runner === null) throw new ValidationError(parameter, 'must be a TypeORM QueryRunner or EntityManager');
  if (runner?.isReleased) throw new ValidationError(parameter, 'is a released QueryRunner; pass one that is still open');
  return runner;
}

/** The DataSource a session belongs to. */
export function dataSourceOfSession(session: Session): DataSource {
  return isQueryRunner(session) ? (session as QueryRunner).connection : (session as EntityManager).connection;
}

/** Runs one statement on a manager. All library SQL goes through here (see `sql.ts`). */
export async function execute<T = Record<string, unknown>>(
  context: DbContext,
  manager: EntityManager,
  statement: SqlFragment,
): Promise<T[]> {
  const result = await executeRaw(context, manager, statement);
  // Drivers answer writes with counts or [rows, count]; callers of writes ignore the result.
  return (Array.isArray(result) ? result : []) as T[];
}

/** What the DataSource's database does differently in sending statements and opening transactions. */
function sessionOf(context: DbContext): SessionParts {
  return partsOf(context).session;
}

/**
 * {@link execute}, returning what the driver answered (for writes whose affected-row count
 * matters). How the statement reaches the server is the database's (`SessionParts.executeRaw`):
 * MySQL/MariaDB sends values as server-side parameters (see `databases/mysql/session.ts`).
 */
export async function executeRaw(context: DbContext, manager: EntityManager, statement: SqlFragment): Promise<unknown> {
  return sessionOf(context).executeRaw(context, manager, statement);
}

/**
 * @internal The plain way to run one statement: rendered with the dialect's placeholders and
 * sent by {@link sendQuery} (what `executeRaw` is on PostgreSQL and SQLite).
 */
export async function executeRendered(context: DbContext, manager: EntityManager, statement: SqlFragment): Promise<unknown> {
  const { text, values } = render(statement, context.dialect.placeholders);
  return sendQuery(context, manager, text, values);
}

/**
 * Sends one statement on `manager`, as `manager.query` does. Inside a loop's run (see
 * `run-guard.ts`) the connection is taken first — a pool may make the call wait for a free one —
 * and the run checked again before the statement goes: a wait for a connection never ends in a
 * statement sent after the loop stopped. On a database whose QueryRunners share one connection
 * (`SessionParts.sharesOneConnection`) there is nothing to wait for. (MySQL/MariaDB statements
 * go through `runMysql`, which does the same.)
 */
async function sendQuery(context: DbContext, manager: EntityManager, text: string, values: readonly unknown[]): Promise<unknown> {
  assertRunCurrent();
  if (!inRun() || sessionOf(context).sharesOneConnection) return manager.query(text, [...values]);
  const own = manager.queryRunner ? undefined : context.dataSource.createQueryRunner();
  const runner = manager.queryRunner ?? own!;
  try {
    await runner.connect();
    assertRunCurrent();
    return await runner.query(text, [...values]);
  } finally {
    if (own) await own.release();
  }
}

type Work<T> = (manager: EntityManager, context: DbContext) => Promise<T>;

/**
 * The library's ways of reaching the database ({@link inTransactionRaw}, {@link inOneStatement},
 * {@link withManager}): a failure a setup meets (server unreachable, login refused, tables
 * missing, DataSource not initialized) leaves them as the GemstoneError that says what to do
 * (see `explain-error.ts`, through `explain-hook.ts`), so the service, the loops and the CLI all say it alike.
 */
export function inTransaction<T>(dataSource: DataSource, session: Session | undefined, work: Work<T>, options?: TransactionOptions): Promise<T> {
  return explainedRun(dataSource, () => inTransactionRaw(dataSource, session, work, options));
}

/** See {@link inTransaction}: {@link inOneStatementRaw}, its failures explained. */
export function inOneStatement<T>(
  dataSource: DataSource,
  session: Session | undefined,
  work: Work<T>,
  options?: Pick<TransactionOptions, 'conflictRetries'>,
): Promise<T> {
  return explainedRun(dataSource, () => inOneStatementRaw(dataSource, session, work, options));
}

/** See {@link inTransaction}: {@link withManagerRaw}, its failures explained. */
export function withManager<T>(dataSource: DataSource, session: Session | undefined, work: Work<T>): Promise<T> {
  return explainedRun(dataSource, () => withManagerRaw(dataSource, session, work));
}

/** @internal */
export const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** @internal Jittered exponential wait before retry `attempt` (0-based) of a conflict: 5 ms doubling to 250 ms. */
export function backoff(attempt: number): number {
  return Math.min(250, 5 * 2 ** attempt) * (0.5 + Math.random());
}

export interface TransactionOptions {
  /** Retries for deadlocks, lock timeouts and SQLITE_BUSY (only when the library owns the transaction). */
  conflictRetries?: number;
  /** Rerun once after a unique violation (a racing first insert). Default true. */
  retryUniqueViolation?: boolean;
}

/**
 * Runs `work` in a transaction: the caller's when `session` has one active, else one the library
 * opens (on the session's connection, or a fresh one it releases) and commits.
 *
 * Owning the transaction is what makes retries possible: a deadlock victim (MySQL 1213,
 * PostgreSQL 40P01), SQLITE_BUSY, or a unique violation from a racing first insert (retried once,
 * see docs/protocol.md) reruns the whole transaction. Inside the caller's transaction nothing can be
 * retried, so the error is surfaced for the caller to roll back.
 */
async function inTransactionRaw<T>(
  dataSource: DataSource,
  session: Session | undefined,
  work: (manager: EntityManager, context: DbContext) => Promise<T>,
  options: TransactionOptions = {},
): Promise<T> {
  const runner = runnerOf(session);
  const context = contextOf(dataSource);
  if (runner?.isTransactionActive) return inCallersTransaction(context, () => work(runner.manager, context));

  const retries = options.conflictRetries ?? DEFAULT_CONFLICT_RETRIES;
  let uniqueRetried = options.retryUniqueViolation === false;
  for (let attempt = 0; ; attempt++) {
    assertRunCurrent();
    try {
      return await sessionOf(context).ownTransaction(context, runner, (m) => work(m, context));
    } catch (error) {
      const { dialect } = context;
      // Library calls inside `work` joined this transaction as a caller's and reported an abort
      // as SerializationFailureError; here the transaction is ours, so it is rerun like any conflict.
      const conflict = error instanceof SerializationFailureError ? error.cause : error;
      if (dialect.isRetryableConflict(conflict) && attempt < retries) {
        await sleep(backoff(attempt));
        continue;
      }
      if (dialect.isUniqueViolation(error) && !uniqueRetried) {
        uniqueRetried = true;
        continue;
      }
      throw error;
    }
  }
}

/**
 * Runs `work` — ONE statement — without an explicit transaction (the statement is its own), on
 * the session's connection or a pooled one; inside the caller's transaction when it has one.
 * Retries conflicts like {@link inTransaction} (`options.conflictRetries` times), except inside
 * the caller's transaction.
 */
async function inOneStatementRaw<T>(
  dataSource: DataSource,
  session: Session | undefined,
  work: (manager: EntityManager, context: DbContext) => Promise<T>,
  options: Pick<TransactionOptions, 'conflictRetries'> = {},
): Promise<T> {
  const runner = runnerOf(session);
  const context = contextOf(dataSource);
  if (runner?.isTransactionActive) return inCallersTransaction(context, () => work(runner.manager, context));
  // A statement outside a transaction runs at the connection's default isolation; when that is
  // not READ COMMITTED (e.g. `default_transaction_isolation = serializable`) the statement gets
  // an explicit READ COMMITTED transaction of its own instead.
  if (!(await sessionOf(context).outsideIsReadCommitted(context))) return inTransactionRaw(dataSource, session, work, options);
  const retries = options.conflictRetries ?? DEFAULT_CONFLICT_RETRIES;
  for (let attempt = 0; ; attempt++) {
    assertRunCurrent();
    try {
      return await withManagerRaw(dataSource, session, work);
    } catch (error) {
      if (attempt >= retries || !context.dialect.isRetryableConflict(error)) throw error;
      await sleep(backoff(attempt));
    }
  }
}

/**
 * Runs one prepared statement outside any transaction of the caller's. Where the database keeps
 * named prepared statements on the DataSource's connections (`SessionParts.sendNamed`: a
 * PostgreSQL DataSource reaching the server directly, without a session) it is sent as one,
 * planned once per connection instead of at every call; everywhere else, and when the named
 * statement was given up (see `databases/postgres/connection.ts`), it is sent by {@link sendQuery}.
 */
export async function executeBound<T = Record<string, unknown>>(
  context: DbContext,
  manager: EntityManager,
  prepared: PreparedSql,
  args: Readonly<Record<string, unknown>>,
): Promise<T[]> {
  assertRunCurrent();
  const rows = await sessionOf(context).sendNamed(context, manager, prepared, args);
  if (rows !== undefined) return rows as T[];
  const { text, values } = bind(prepared, args);
  const result: unknown = await sendQuery(context, manager, text, values);
  return (Array.isArray(result) ? result : []) as T[];
}

/**
 * Runs `work` inside the caller's transaction. Nothing can be retried there; an error after
 * which the database aborted the whole transaction becomes a {@link SerializationFailureError}
 * telling the caller to retry its transaction.
 */
async function inCallersTransaction<T>(context: DbContext, work: () => Promise<T>): Promise<T> {
  try {
    return await work();
  } catch (error) {
    if (context.dialect.isTransactionAbort(error)) throw new SerializationFailureError(error);
    throw error;
  }
}

/** Runs read-only `work` on the session (joining its transaction if any) or a pooled connection. */
async function withManagerRaw<T>(
  dataSource: DataSource,
  session: Session | undefined,
  work: (manager: EntityManager, context: DbContext) => Promise<T>,
): Promise<T> {
  const runner = runnerOf(session);
  const context = contextOf(dataSource);
  if (runner?.isTransactionActive) return inCallersTransaction(context, () => work(runner.manager, context));
  assertRunCurrent();
  return sessionOf(context).outsideTransaction(context, runner, (manager) => work(manager, context));
}

/**
 * @internal Runs `work` in a transaction the library opens on the session's connection (or a
 * fresh one it releases) at the database's isolation level (`SessionParts.isolationLevel`), and
 * commits it; rolls back when `work` throws.
 */
export async function ownTransaction<T>(
  context: DbContext,
  sessionRunner: QueryRunner | undefined,
  work: (manager: EntityManager) => Promise<T>,
): Promise<T> {
  assertRunCurrent();
  const runner = sessionRunner ?? context.dataSource.createQueryRunner();
  try {
    // Taking the connection may wait for a free one: the run is checked again before BEGIN.
    await runner.connect();
    assertRunCurrent();
    const session = sessionOf(context);
    // MySQL/MariaDB, autocommit off: whatever earlier statements left open on this connection
    // ends first, so the isolation level can be set and the snapshot is taken now.
    await session.beforeBegin(context, runner);
    await runner.startTransaction(session.isolationLevel);
    try {
      const result = await work(runner.manager);
      // A run that ended meanwhile commits nothing more: the ROLLBACK below ends the transaction.
      assertRunCurrent();
      await runner.commitTransaction();
      return result;
    } catch (error) {
      if (runner.isTransactionActive) {
        // The original error matters more than a failed rollback on a broken connection.
        await runner.rollbackTransaction().catch(() => undefined);
      }
      throw error;
    }
  } finally {
    if (!sessionRunner) await runner.release();
  }
}
