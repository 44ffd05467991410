import { DataSource, QueryFailedError, QueryRunner, QueryRunnerAlreadyReleasedError } from 'typeorm';
import { UnsupportedConfigurationError } from '../../errors';
import { assertRunCurrent } from '../../db/run-guard';
import { raw, render, sql, SqlFragment } from '../../db/sql';

/**
 * MySQL/MariaDB: how the library's statements reach the server, whatever the session's settings.
 *
 * Values travel by the binary protocol (mysql2 `execute`): the server binds them to a prepared
 * statement, so no value is ever part of the SQL text. TypeORM's `query()` lets mysql2 splice
 * values into the text with backslash escapes, which a session with `sql_mode` containing
 * `NO_BACKSLASH_ESCAPES` reads as plain characters: a quote in a value would end its string.
 * Statements without values go as text (nothing is spliced into them).
 *
 * mysql2 keeps one prepared statement per distinct text on each connection (and the server counts
 * them against the global `max_prepared_stmt_count`): the library's texts are a small fixed set;
 * lists of variable length are padded to a few sizes (see {@link padded}).
 */

type Callback = (error: unknown, result?: unknown) => void;

/** What the library uses of a mysql2 connection. */
interface Mysql2Connection {
  execute(options: { sql: string; timeout?: number }, values: unknown[], callback: Callback): unknown;
  query(options: { sql: string; timeout?: number }, callback: Callback): unknown;
}

/** The runner's connection (connecting it if needed); refused when it cannot take server-side parameters. */
async function connectionOf(runner: QueryRunner): Promise<Mysql2Connection> {
  if (runner.isReleased) throw new QueryRunnerAlreadyReleasedError();
  const connection = (await runner.connect()) as Partial<Mysql2Connection> | null | undefined;
  if (typeof connection?.execute !== 'function' || typeof connection.query !== 'function') {
    throw new UnsupportedConfigurationError(
      'connectorPackage',
      "MySQL/MariaDB connections must come from the mysql2 package (connectorPackage: 'mysql2'): the library sends values as " +
        'server-side parameters (the binary protocol, execute()), which this connection does not offer (the old mysql package?)',
    );
  }
  return connection as Mysql2Connection;
}

/**
 * Runs one statement on the runner's connection and returns what mysql2 answers (rows, or the OK
 * packet of a write). Logged, broadcast to subscribers and timed as TypeORM does for its own
 * queries; a failure is TypeORM's `QueryFailedError` around the driver's error (whose `errno`
 * the dialect classifies).
 */
export async function runMysql(dataSource: DataSource, runner: QueryRunner, statement: SqlFragment): Promise<unknown> {
  const { text, values } = render(statement, 'question');
  // mysql2 refuses undefined parameters; TypeORM's query() sends them as NULL.
  const parameters = values.map((value) => (value === undefined ? null : value));
  assertRunCurrent();
  const connection = await connectionOf(runner);
  // Taking the connection may have waited for a free one: a loop that stopped meanwhile sends nothing.
  assertRunCurrent();
  const { logger } = dataSource;
  const options = dataSource.options as { maxQueryExecutionTime?: number; enableQueryTimeout?: boolean };
  const slowAfter = options.maxQueryExecutionTime;
  const timeout = options.enableQueryTimeout && slowAfter ? { timeout: slowAfter } : {};
  logger.logQuery(text, parameters, runner);
  await runner.broadcaster.broadcast('BeforeQuery', text, parameters);
  const started = Date.now();
  const timed = () => {
    const elapsed = Date.now() - started;
    if (slowAfter && elapsed > slowAfter) logger.logQuerySlow(elapsed, text, parameters, runner);
    return elapsed;
  };
  let result: unknown;
  try {
    result = await new Promise<unknown>((resolve, reject) => {
      const done: Callback = (error, answer) => (error ? reject(error) : resolve(answer));
      if (parameters.length > 0) connection.execute({ sql: text, ...timeout }, parameters, done);
      else connection.query({ sql: text, ...timeout }, done);
    });
  } catch (error) {
    timed();
    logger.logQueryError(error as Error, text, parameters, runner);
    await runner.broadcaster.broadcast('AfterQuery', text, parameters, false, undefined, undefined, error);
    throw new QueryFailedError(text, parameters, error as Error);
  }
  await runner.broadcaster.broadcast('AfterQuery', text, parameters, true, timed(), result, undefined);
  return result;
}

/** What a connection's session settings mean for a statement run outside a transaction. */
export interface MysqlSessionFacts {
  /** `@@autocommit`: off, every statement opens a transaction that stays open until COMMIT. */
  readonly autocommit: boolean;
  /** The session's isolation is READ UNCOMMITTED: a plain read could see uncommitted leases. */
  readonly readUncommitted: boolean;
}

/** Per mysql2 connection object (the pool hands out the same object for the same connection). */
const sessionFacts = new WeakMap<object, MysqlSessionFacts>();
const serverVersions = new WeakMap<DataSource, Promise<string>>();

/** `transaction_isolation` from MariaDB 11.1 and MySQL 5.7.20 on, `tx_isolation` before (MySQL 8 has only the new name). */
export function isolationVariableOf(version: string): 'transaction_isolation' | 'tx_isolation' {
  const match = /^(\d+)\.(\d+)\.(\d+)/.exec(version);
  if (!match) return 'transaction_isolation';
  const [major, minor, patch] = [Number(match[1]), Number(match[2]), Number(match[3])];
  const atLeast = (a: number, b: number, c: number) => major > a || (major === a && (minor > b || (minor === b && patch >= c)));
  return (/mariadb/i.test(version) ? atLeast(11, 1, 0) : atLeast(5, 7, 20)) ? 'transaction_isolation' : 'tx_isolation';
}

/** The server's `VERSION()`, read once per DataSource (a failed read is not remembered). */
function serverVersion(dataSource: DataSource, runner: QueryRunner): Promise<string> {
  let known = serverVersions.get(dataSource);
  if (!known) {
    known = runMysql(dataSource, runner, sql`SELECT VERSION() AS version`).then((rows) => String((rows as Array<{ version?: unknown }>)[0]?.version ?? ''));
    serverVersions.set(dataSource, known);
    known.catch(() => serverVersions.delete(dataSource));
  }
  return known;
}

/**
 * Whether the DataSource's server is MariaDB (not MySQL): MariaDB's `max_statement_time` bounds a
 * lock wait to a fraction of a second, where `innodb_lock_wait_timeout` counts whole seconds.
 */
export async function isMariadbServer(dataSource: DataSource, runner: QueryRunner): Promise<boolean> {
  return /mariadb/i.test(await serverVersion(dataSource, runner));
}

/**
 * The session settings of the runner's connection that decide how the library runs statements
 * outside a transaction there, read once per connection (one statement that opens no
 * transaction). A setting changed later on that connection (`SET SESSION autocommit = 0` by the
 * application) is not seen.
 */
export async function mysqlSessionFacts(dataSource: DataSource, runner: QueryRunner): Promise<MysqlSessionFacts> {
  const connection = await connectionOf(runner);
  const known = sessionFacts.get(connection);
  if (known) return known;
  const variable = isolationVariableOf(await serverVersion(dataSource, runner));
  const rows = (await runMysql(dataSource, runner, sql`SELECT @@SESSION.autocommit AS autocommit, @@SESSION.${raw(variable)} AS isolation`)) as Array<
    Record<string, unknown>
  >;
  const facts = Object.freeze({
    autocommit: Number(rows[0]?.autocommit) === 1,
    readUncommitted: /UNCOMMITTED/i.test(String(rows[0]?.isolation)),
  });
  sessionFacts.set(connection, facts);
  return facts;
}

/**
 * With autocommit off, ends the transaction a statement outside TypeORM's transactions left open
 * on the runner's connection (anyone's: the pool hands out connections as they were returned).
 * It commits, as the START TRANSACTION that would follow does implicitly; the library's own
 * transaction can then set its isolation level (MySQL refuses that inside a transaction, error 1568).
 */
export async function endImplicitTransaction(dataSource: DataSource, runner: QueryRunner): Promise<void> {
  if ((await mysqlSessionFacts(dataSource, runner)).autocommit) return;
  await runMysql(dataSource, runner, sql`COMMIT`);
}

/** The list lengths {@link padded} rounds up to. */
const LIST_SIZES = [1, 4, 16, 64, 256, 1024];

/**
 * `values` repeated at the end up to the next of a few fixed lengths, for `IN (…)` lists and
 * multi-row inserts whose statements are idempotent per value: each length is one more prepared
 * statement per connection, so the number of texts stays small whatever the lists' lengths.
 */
export function padded<T>(values: readonly T[]): T[] {
  if (values.length === 0) return [];
  const largest = LIST_SIZES[LIST_SIZES.length - 1]!;
  const size = LIST_SIZES.find((s) => s >= values.length) ?? Math.ceil(values.length / largest) * largest;
  const out = [...values];
  while (out.length < size) out.push(values[out.length % values.length]!);
  return out;
}
