import { DataSource, EntityManager, QueryFailedError, QueryRunner } from 'typeorm';
import { SerializationFailureError, ValidationError } from '../errors';
import { contextOf, DbContext } from './context';
import { endImplicitTransaction, mysqlSessionFacts, runMysql } from '../databases/mysql/session';
import { assertRunCurrent, inRun } from './run-guard';
import { bind, PreparedSql, render, sql, SqlFragment } from './sql';
import { outsideTransactions, ownSqliteTransaction } from '../databases/sqlite/atomic';

/**
 * The caller's connection or transaction. Inside an active transaction the library joins it and
 * never commits, rolls back or releases it; otherwise it runs its own transaction on it.
 */
export type Session = QueryRunner | EntityManager;

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

/**
 * {@link execute}, returning what the driver answered (for writes whose affected-row count
 * matters). MySQL/MariaDB: on the manager's QueryRunner, with values as server-side parameters
 * (see `mysql-session.ts`); the DataSource's own manager borrows a pooled connection for the
 * statement, as {@link withManager} does.
 */
export async function executeRaw(context: DbContext, manager: EntityManager, statement: SqlFragment): Promise<unknown> {
  if (context.dialect.name === 'mysql') {
    const runner = manager.queryRunner;
    if (runner) return runMysql(context.dataSource, runner, statement);
    return withManager(context.dataSource, undefined, (m) => executeRaw(context, m, statement));
  }
  const { text, values } = render(statement, context.dialect.placeholders);
  return sendQuery(context, manager, text, values);
}

/**
 * Sends one statement on `manager`, as `manager.query` does. Inside a loop's run (see
 * `run-guard.ts`) the connection is taken first — a pool may make the call wait for a free one —
 * and the run checked again before the statement goes: a wait for a connection never ends in a
 * statement sent after the loop stopped. (MySQL/MariaDB statements go through `runMysql`, which
 * does the same.)
 */
async function sendQuery(context: DbContext, manager: EntityManager, text: string, values: readonly unknown[]): Promise<unknown> {
  assertRunCurrent();
  if (!inRun() || context.dialect.name === 'sqlite') return manager.query(text, [...values]);
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
export async function inTransaction<T>(
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
      return await (context.dialect.name === 'sqlite'
        ? ownSqliteTransaction(dataSource, (r) => work(r.manager, context))
        : ownTransaction(context, runner, (m) => work(m, context)));
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
export async function inOneStatement<T>(
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
  if (!(await defaultIsReadCommitted(context))) return inTransaction(dataSource, session, work, options);
  const retries = options.conflictRetries ?? DEFAULT_CONFLICT_RETRIES;
  for (let attempt = 0; ; attempt++) {
    assertRunCurrent();
    try {
      return await withManager(dataSource, session, work);
    } catch (error) {
      if (attempt >= retries || !context.dialect.isRetryableConflict(error)) throw error;
      await sleep(backoff(attempt));
    }
  }
}

/** What is learnt once per PostgreSQL DataSource about its connections (see {@link connectionFacts}). */
interface ConnectionFacts {
  /** A statement outside a transaction runs at READ COMMITTED. */
  readCommitted: boolean;
  /** Connections reach PostgreSQL itself, not a pooler in front of it: named prepared statements are kept. */
  direct: boolean;
}

const facts = new WeakMap<DataSource, Promise<ConnectionFacts>>();
/** DataSources whose connections may keep named prepared statements (see {@link executeBound}). */
const namedStatements = new WeakMap<DataSource, boolean>();

/** The port a PostgreSQL DataSource connects to, as TypeORM's driver takes it (`url` first). */
function configuredPort(dataSource: DataSource): number | undefined {
  const options = dataSource.options as { url?: string; port?: number; replication?: unknown };
  if (options.replication !== undefined) return undefined;
  if (options.url) {
    try {
      return Number(new URL(options.url).port || 5432);
    } catch {
      return undefined;
    }
  }
  return options.port ?? 5432;
}

/**
 * Learnt once per DataSource (PostgreSQL), with one statement outside a transaction:
 * - whether a statement outside a transaction runs at READ COMMITTED (the session's default);
 * - whether the connection reaches PostgreSQL directly: the server's port is the one the
 *   DataSource was configured with. A pooler in front of it (PgBouncer, in transaction mode, moves
 *   a client between server connections, which then lack its named statements) listens on a port
 *   of its own; so does anything else in between, which only costs the named statements. Behind
 *   a Unix socket `inet_server_port()` is NULL: not counted as direct either.
 * A failed look-up is not remembered and answers "no" to both, which only costs speed.
 */
function connectionFacts(context: DbContext): Promise<ConnectionFacts> {
  const { dataSource } = context;
  let known = facts.get(dataSource);
  if (!known) {
    known = execute<{ transaction_isolation?: unknown; server_port?: unknown }>(
      context,
      dataSource.manager,
      sql`SELECT current_setting('transaction_isolation') AS transaction_isolation, inet_server_port() AS server_port`,
    ).then((rows) => {
      const row = rows[0];
      const port = row?.server_port === null || row?.server_port === undefined ? undefined : Number(row.server_port);
      const result = {
        readCommitted: String(row?.transaction_isolation).toLowerCase() === 'read committed',
        direct: port !== undefined && port === configuredPort(dataSource),
      };
      if (!namedStatements.has(dataSource)) namedStatements.set(dataSource, result.direct);
      return result;
    });
    facts.set(dataSource, known);
    known.catch(() => facts.delete(dataSource));
  }
  return known.catch(() => ({ readCommitted: false, direct: false }));
}

/**
 * Whether a statement outside a transaction runs at READ COMMITTED on this DataSource's
 * connections (PostgreSQL). Learnt once per DataSource (see {@link connectionFacts}).
 */
async function defaultIsReadCommitted(context: DbContext): Promise<boolean> {
  if (context.dialect.name !== 'postgres') return true;
  return (await connectionFacts(context)).readCommitted;
}

/** PostgreSQL: "prepared statement does not exist" / "already exists" — a pooler moved the client. */
const NAMED_STATEMENT_LOST = new Set(['26000', '42P05']);

/**
 * Runs one prepared statement outside any transaction of the caller's. On a PostgreSQL
 * DataSource whose connections reach the server directly (see {@link connectionFacts}) and
 * without a session (`manager` is the DataSource's own), it is sent as a NAMED prepared statement
 * on a pooled connection: PostgreSQL then plans it once per connection instead of at every call.
 * The statement is logged through the DataSource's logger as TypeORM logs its own, and errors
 * are TypeORM's `QueryFailedError`. If a named statement is found missing or duplicated on the
 * server after all (a pooler the port check did not see), named statements are given up for the
 * DataSource and the call is repeated unnamed (the failed statement changed nothing). Everywhere
 * else it is {@link execute}.
 */
export async function executeBound<T = Record<string, unknown>>(
  context: DbContext,
  manager: EntityManager,
  prepared: PreparedSql,
  args: Readonly<Record<string, unknown>>,
): Promise<T[]> {
  const { dataSource } = context;
  const { name, text, values } = bind(prepared, args);
  assertRunCurrent();
  if (manager.queryRunner === undefined && manager === dataSource.manager && namedStatements.get(dataSource) === true) {
    const runner = dataSource.createQueryRunner();
    try {
      const client = (await runner.connect()) as { query(config: { name: string; text: string; values: unknown[] }): Promise<{ rows?: T[] }> };
      // Taking the connection may have waited (see sendQuery).
      assertRunCurrent();
      dataSource.logger.logQuery(text, values, runner);
      try {
        const result = await client.query({ name, text, values });
        return Array.isArray(result.rows) ? result.rows : [];
      } catch (error) {
        if (!NAMED_STATEMENT_LOST.has(String((error as { code?: unknown }).code))) {
          dataSource.logger.logQueryError(error as Error, text, values, runner);
          throw new QueryFailedError(text, values, error as Error);
        }
        namedStatements.set(dataSource, false);
      }
    } finally {
      await runner.release();
    }
  }
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
export async function withManager<T>(
  dataSource: DataSource,
  session: Session | undefined,
  work: (manager: EntityManager, context: DbContext) => Promise<T>,
): Promise<T> {
  const runner = runnerOf(session);
  const context = contextOf(dataSource);
  if (runner?.isTransactionActive) return inCallersTransaction(context, () => work(runner.manager, context));
  assertRunCurrent();
  if (context.dialect.name === 'mysql') return mysqlOutsideTransaction(context, runner, (r) => work(r.manager, context));
  if (runner) return work(runner.manager, context);
  // SQLite: never read another transaction's uncommitted rows on the shared connection.
  if (context.dialect.name === 'sqlite') return outsideTransactions(dataSource, () => work(dataSource.manager, context));
  return work(dataSource.manager, context);
}

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

async function ownTransaction<T>(
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
    // MySQL/MariaDB, autocommit off: whatever earlier statements left open on this connection
    // ends first, so the isolation level can be set and the snapshot is taken now.
    if (context.dialect.name === 'mysql') await endImplicitTransaction(context.dataSource, runner);
    await runner.startTransaction(context.dialect.name === 'sqlite' ? undefined : OWN_ISOLATION_LEVEL);
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
