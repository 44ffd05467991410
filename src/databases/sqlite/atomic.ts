import { AsyncLocalStorage } from 'async_hooks';
import type { DataSource, QueryRunner } from 'typeorm';
import { SessionRequiredError, SqliteTransactionOpenError } from '../../errors';
import { assertRunCurrent } from '../../db/run-guard';
import { render, SqlFragment } from '../../db/sql';
import { DEFAULT_SQLITE_WAIT_MS } from '../../db/defaults';

// How long a call waits for a transaction someone else holds open (kept in a shared leaf, so
// that `gemstone-utils/db` exports it without importing this folder).
export { DEFAULT_SQLITE_WAIT_MS } from '../../db/defaults';

/*
 * Every QueryRunner of a TypeORM SQLite DataSource shares ONE connection, so a transaction there
 * is the connection's: a second BEGIN from anyone becomes a SAVEPOINT of the first (TypeORM) or
 * fails, and every statement sent while a transaction is open belongs to it. The library therefore
 * never opens its transaction while another one is open (it waits), and runs its transaction as
 * ONE step nobody can slip a statement into:
 * - better-sqlite3 is synchronous: BEGIN IMMEDIATE … COMMIT run in one turn of the event loop.
 * - sqlite3 is asynchronous but runs the statements sent to a connection in order: the whole
 *   transaction, BEGIN IMMEDIATE … COMMIT, is ONE `exec` (see `queueAtomic`), so whatever the
 *   application sends later runs after it. Decisions must then be made by the SQL itself (see
 *   `election/sqlite-programs.ts`).
 */

/** The parts of a better-sqlite3 `Database` the library uses. */
interface BetterSqliteDatabase {
  readonly inTransaction: boolean;
  /** The database file (as opened). */
  readonly name: string;
  readonly open: boolean;
  prepare(text: string): BetterSqliteStatement;
}

interface BetterSqliteStatement {
  readonly reader: boolean;
  all(...values: unknown[]): unknown[];
  run(...values: unknown[]): unknown;
}

/** How many prepared statements are kept per connection (the library sends a few dozen texts). */
const STATEMENT_CACHE_SIZE = 128;

/**
 * Prepared statements per better-sqlite3 connection, by SQL text. Preparing costs more than
 * running a small statement, and the library's texts never change between calls (values are
 * parameters), so a renewal would otherwise pay the compilation of every statement each tick.
 * SQLite recompiles a cached statement by itself when the schema changes.
 */
const statementCaches = new WeakMap<BetterSqliteDatabase, Map<string, BetterSqliteStatement>>();

/** Runs a statement; a statement that returns rows (a reader) must be read with `all`. */
function execute(statement: BetterSqliteStatement, values: readonly unknown[]): Rows {
  return (statement.reader ? statement.all(...values) : (statement.run(...values), [])) as Rows;
}

function prepared(db: BetterSqliteDatabase, text: string): BetterSqliteStatement {
  let cache = statementCaches.get(db);
  if (!cache) statementCaches.set(db, (cache = new Map()));
  let statement = cache.get(text);
  if (statement) {
    // Most recently used last: the first entry is the one to evict.
    cache.delete(text);
  } else {
    statement = db.prepare(text);
    if (cache.size >= STATEMENT_CACHE_SIZE) cache.delete(cache.keys().next().value as string);
  }
  cache.set(text, statement);
  return statement;
}

/** The parts of a node-sqlite3 `Database` the library uses. */
interface Sqlite3Database {
  serialize(work?: () => void): void;
  all(text: string, values: unknown[], callback: (error: Error | null, rows: unknown[]) => void): void;
  /** `sqlite3_exec`: runs the statements of `text` one after the other and stops at the first that fails. */
  exec(text: string, callback: (error: Error | null) => void): void;
}

type Rows = Record<string, unknown>[];

/** DataSources whose transaction `withTransaction` is running `work` in (this async context). */
const scope = new AsyncLocalStorage<DataSource>();

/** Runs `work` marked as inside `withTransaction` on `dataSource`. @internal */
export function inTransactionScope<T>(dataSource: DataSource, work: () => Promise<T>): Promise<T> {
  return scope.run(dataSource, work);
}

/**
 * Throws {@link SessionRequiredError} for a library call without `session` inside
 * `withTransaction` on the same DataSource: its transaction could only start after the
 * surrounding one ends, which waits for this call.
 */
export function refuseInsideTransactionScope(dataSource: DataSource): void {
  if (scope.getStore() === dataSource) throw new SessionRequiredError();
}

/** The driver's connection: a public property of TypeORM's SQLite drivers, absent from `Driver`. */
function connectionOf(dataSource: DataSource): unknown {
  return (dataSource.driver as unknown as { databaseConnection?: unknown }).databaseConnection;
}

function betterSqlite(dataSource: DataSource): BetterSqliteDatabase | undefined {
  const db = connectionOf(dataSource) as Partial<BetterSqliteDatabase> | undefined;
  return db && typeof db.prepare === 'function' && typeof db.inTransaction === 'boolean' ? (db as BetterSqliteDatabase) : undefined;
}

/** The one QueryRunner of a TypeORM SQLite DataSource (its drivers hand out the same one). */
function sharedRunner(dataSource: DataSource): QueryRunner {
  return dataSource.createQueryRunner();
}

/** Whether a transaction is open (or being opened through TypeORM) on the shared connection. */
export function transactionOpen(dataSource: DataSource): boolean {
  // TypeORM sets isTransactionActive before it sends BEGIN and clears it after COMMIT completes.
  if (sharedRunner(dataSource).isTransactionActive) return true;
  return betterSqlite(dataSource)?.inTransaction === true;
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** The library's waiters for the shared connection of each DataSource, in arrival order. */
const waiters = new WeakMap<DataSource, object[]>();
/** The sleeping waiters of each DataSource, woken early when the library releases the connection. */
const sleepers = new WeakMap<DataSource, Set<() => void>>();

/** Wakes the library's waiters: a transaction or program of its own on the connection ended. */
export function connectionReleased(dataSource: DataSource): void {
  const set = sleepers.get(dataSource);
  if (set) for (const wake of [...set]) wake();
}

/** Sleeps `ms`, or less when {@link connectionReleased} is called meanwhile. */
function pause(dataSource: DataSource, ms: number): Promise<void> {
  let set = sleepers.get(dataSource);
  if (!set) sleepers.set(dataSource, (set = new Set()));
  const sleeping = set;
  return new Promise((resolve) => {
    const wake = () => {
      clearTimeout(timer);
      sleeping.delete(wake);
      resolve();
    };
    const timer = setTimeout(wake, ms);
    sleeping.add(wake);
  });
}

/**
 * Calls `start` in the same turn of the event loop in which no transaction was open, waiting
 * (polling with a short backoff) up to `waitMs`; then throws {@link SqliteTransactionOpenError}.
 * The library's waiters take the connection in arrival order: a stream of back-to-back
 * `withTransaction` calls cannot keep a loop's tick waiting past its lease (each poll sees the
 * connection free at some moment, and without a queue the luckiest poller would win).
 */
export async function whenNoTransaction<T>(dataSource: DataSource, waitMs: number, start: () => T): Promise<T> {
  const since = Date.now();
  let queue = waiters.get(dataSource);
  if (!queue) waiters.set(dataSource, (queue = []));
  const me = {};
  queue.push(me);
  try {
    for (let attempt = 0; queue[0] !== me || transactionOpen(dataSource); attempt++) {
      if (Date.now() - since >= waitMs) throw new SqliteTransactionOpenError(waitMs);
      await pause(dataSource, Math.min(25, 1 + attempt * 2));
      // Waiting for someone else's transaction must not outlive the loop that asked.
      assertRunCurrent();
    }
    assertRunCurrent();
    return start();
  } finally {
    // Out of the queue in the turn that started (or gave up): the next waiter goes next, at once
    // when the connection is free (a synchronous step has already ended).
    queue.splice(queue.indexOf(me), 1);
    connectionReleased(dataSource);
  }
}

function isBusy(error: unknown): boolean {
  const { code, message } = (error ?? {}) as { code?: unknown; message?: unknown };
  return /^SQLITE_(BUSY|LOCKED)/.test(String(code)) || /database is locked|SQLITE_BUSY/i.test(String(message));
}

/**
 * better-sqlite3: how long (milliseconds) a step may wait for another connection's write lock
 * inside SQLite, asleep in its busy handler (1, 2, 5, 10, 15, 20, 25, … 50, 100 ms between tries
 * of the lock), never longer than the connection's own `busy_timeout`; the event loop waits as
 * long. Holders in other threads and processes keep the lock well under a millisecond per
 * call of the library, so waits end long before. Retrying from JavaScript instead costs CPU at
 * every try, which the holder needs: with dozens of writers on few cores that starved the holder
 * and everyone behind it. A holder in THIS thread — a transaction open across an `await` on
 * another DataSource of the file — could not finish while the event loop waits: when the library
 * knows of one (see {@link connectionsInThisThread}) it waits {@link SYNC_BUSY_RETRY_WAIT_MS} at
 * most, between asynchronous pauses that let it run.
 */
const SYNC_BUSY_WAIT_MS = 250;

/** better-sqlite3: the longest wait inside SQLite while a connection of this thread holds a transaction (milliseconds). */
const SYNC_BUSY_RETRY_WAIT_MS = 3;

/**
 * The better-sqlite3 connections of this thread that the library has seen (initDb, its calls):
 * a transaction open on one of them, on the same file, may hold the write lock another one waits
 * for. (Module state is per thread: worker threads have their own.)
 */
const connectionsInThisThread = new Set<WeakRef<BetterSqliteDatabase>>();
const registered = new WeakSet<BetterSqliteDatabase>();

/** Remembers the DataSource's better-sqlite3 connection as one of this thread's (see {@link connectionsInThisThread}). */
export function registerSqliteConnection(dataSource: DataSource): void {
  const db = betterSqlite(dataSource);
  if (db) remember(db);
}

function remember(db: BetterSqliteDatabase): void {
  if (registered.has(db)) return;
  registered.add(db);
  connectionsInThisThread.add(new WeakRef(db));
}

/** Whether another connection of this thread to the same file has a transaction open. */
function transactionElsewhereInThisThread(db: BetterSqliteDatabase): boolean {
  for (const ref of connectionsInThisThread) {
    const other = ref.deref();
    if (!other || !other.open) {
      connectionsInThisThread.delete(ref);
      continue;
    }
    if (other !== db && other.inTransaction && other.name === db.name) return true;
  }
  return false;
}

/** How long the next attempt of a step on `db` may wait for the write lock inside SQLite. */
function syncBusyWait(db: BetterSqliteDatabase): number {
  return transactionElsewhereInThisThread(db) ? SYNC_BUSY_RETRY_WAIT_MS : SYNC_BUSY_WAIT_MS;
}

/**
 * Wait before retry `attempt` of a busy database: 1 to 5 ms, jittered, never growing further.
 * A wait that grows with the attempts is unfair: under contention the callers that already waited
 * longest would try least often, and some would never get the lock (measured: with 64 writers
 * on one file, several completed no call in two seconds). Short bounded waits give every waiter
 * the same chance at each release of the lock; the limit of the whole wait is `waitMs`.
 */
function busyBackoff(attempt: number): number {
  return 1 + Math.random() * Math.min(4, 1 + attempt);
}

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
  /** Runs a {@link compile}d statement with its named inputs. */
  runCompiled(statement: CompiledStatement, input: Readonly<Record<string, unknown>>): Rows;
}

/** A named input of a {@link compile}d statement: bound as a parameter at each run. */
export class Slot {
  constructor(readonly name: string) {}
}

/**
 * A statement rendered once: its text, and its parameter values in order — constants, or
 * {@link Slot}s filled from the input at each run. Its prepared statement is kept per connection.
 */
export interface CompiledStatement {
  readonly text: string;
  readonly values: readonly unknown[];
  readonly prepared: WeakMap<object, unknown>;
}

/**
 * Renders `statement` once (built with the `sql` tag, so every value is a parameter; put a
 * {@link Slot} where a value changes from run to run): a hot statement is then neither rebuilt,
 * rendered nor looked up by its text at each run.
 */
export function compile(statement: SqlFragment): CompiledStatement {
  const { text, values } = render(statement, 'question');
  return Object.freeze({ text, values, prepared: new WeakMap<object, unknown>() });
}

/** Whether the DataSource runs on better-sqlite3 (synchronous steps via {@link runSyncStep}). */
export function isBetterSqlite(dataSource: DataSource): boolean {
  return betterSqlite(dataSource) !== undefined;
}

/** Logs statements through the DataSource's logger, as TypeORM logs its own queries. */
function loggerOf(dataSource: DataSource): Log {
  // (The connection settings this module changes around a step are not logged: they are not
  // statements of the call.)
  return {
    sent: (text, values) => dataSource.logger.logQuery(text, [...values]),
    error: (error, text, values) => dataSource.logger.logQueryError(error instanceof Error ? error : String(error), text, [...values]),
  };
}

/**
 * Retries `attempt` while it fails because another connection holds the write lock (it ends by
 * itself: wait without blocking), up to `waitMs` since the first attempt.
 */
async function retryWhileBusy<T>(waitMs: number, attempt: () => Promise<T>, backoff: (attempt: number) => number = busyBackoff): Promise<T> {
  const since = Date.now();
  for (let tries = 0; ; tries++) {
    assertRunCurrent();
    try {
      return await attempt();
    } catch (error) {
      if (!isBusy(error) || Date.now() - since >= waitMs) throw error;
      await sleep(backoff(tries));
    }
  }
}

/**
 * better-sqlite3: runs `work` synchronously — in one turn of the event loop, so nothing else can
 * send a statement on the shared connection meanwhile — once no transaction is open on it, in a
 * transaction of its own (`BEGIN IMMEDIATE` … `COMMIT`, rolled back when `work` throws) when
 * `transaction` is true. `work` may decide in JavaScript between its statements: it holds the
 * database write lock throughout. A busy database is retried (see {@link busyBackoff}), so
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

interface Log {
  sent(text: string, values: readonly unknown[]): void;
  error(error: unknown, text: string, values: readonly unknown[]): void;
}

/** Prepared statements by key (see {@link SyncStep}), per connection. */
const keyedStatements = new WeakMap<BetterSqliteDatabase, Map<string, { text: string; statement: BetterSqliteStatement }>>();

function preparedByKey(db: BetterSqliteDatabase, key: string, text: string): BetterSqliteStatement {
  // No key: by text, in the bounded cache.
  if (key === '') return prepared(db, text);
  let cache = keyedStatements.get(db);
  if (!cache) keyedStatements.set(db, (cache = new Map()));
  const entry = cache.get(key);
  // Comparing is cheaper than hashing a fresh text; a key reused for another text is re-prepared.
  if (entry && entry.text === text) return entry.statement;
  const statement = db.prepare(text);
  cache.set(key, { text, statement });
  return statement;
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
    const values = statement.values.map((value) => (value instanceof Slot ? input[value.name] : value));
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

/** The connection's busy_timeout, read through its queue (what the program restores). */
function readBusyTimeout(db: Sqlite3Database): Promise<number> {
  return new Promise((resolve, reject) =>
    db.all('PRAGMA busy_timeout', [], (error, rows) => {
      if (error) return reject(error);
      const value = Number(Object.values((rows[0] ?? {}) as Record<string, unknown>)[0]);
      resolve(Number.isSafeInteger(value) && value > 0 ? value : 0);
    }),
  );
}

/**
 * sqlite3, statements that only read: queued at once, each on its own (nothing to keep together).
 * busy_timeout is 0 meanwhile (see {@link queueAtomic}).
 */
function queueReads(db: Sqlite3Database, rendered: readonly { text: string; values: readonly unknown[] }[], busyTimeout: number, log: Log): Promise<Rows[]> {
  const results: Rows[] = rendered.map(() => []);
  let failure: unknown;
  return new Promise<Rows[]>((resolve, reject) => {
    db.serialize();
    db.serialize(() => {
      db.all('PRAGMA busy_timeout = 0', [], ignore);
      rendered.forEach(({ text, values }, i) => {
        log.sent(text, values);
        db.all(text, [...values], (error, rows) => {
          if (error) log.error(error, text, values);
          if (error) failure ??= error;
          else results[i] = rows as Rows;
        });
      });
      db.all(`PRAGMA busy_timeout = ${Math.floor(busyTimeout)}`, [], () => (failure === undefined ? resolve(results) : reject(failure)));
    });
  });
}

const ignore = () => undefined;

/** Values per temporary table of a program's arguments (one column each): far below SQLite's limits on columns and on variables. */
const ARGUMENTS_PER_TABLE = 500;

/** Numbers the sqlite3 programs of this process: their temporary tables are never reused, so never read stale. */
let programs = 0;

/** Marks, inside the library's own transaction, that the transaction is the library's (see {@link queueAtomic}). */
const PROGRAM_SAVEPOINT = 'gemstone_program';

/** Whether a statement returns rows (its rows are kept in a temporary table, see {@link queueAtomic}). */
function returnsRows(text: string): boolean {
  return /^\s*(SELECT|WITH)\b/i.test(text);
}

/**
 * sqlite3: runs `statements` as ONE transaction that either commits whole or changes nothing, and
 * returns each statement's rows.
 *
 * node-sqlite3 runs every queued statement whatever became of the one before it: a program queued
 * as separate statements after a BEGIN that failed (the database busy) ran them one by one outside
 * any transaction. So the transaction is ONE `exec` — `BEGIN IMMEDIATE; …; COMMIT` — and
 * `sqlite3_exec` stops at the first statement that fails: after a failed BEGIN nothing runs, and
 * after a failure further on (a statement, COMMIT busy) nothing more does. The ROLLBACK queued right
 * behind it then ends the transaction if it is still open — but only the library's: it starts with
 * `ROLLBACK TO` the savepoint the program set after its BEGIN, which fails, ending the `exec`,
 * when the BEGIN did not run (or COMMIT did).
 *
 * `exec` binds no values and returns no rows, and values are never written into SQL text: they are
 * bound by the statements queued before it, which create temporary tables of one row holding them
 * (each table created whole or not at all), and each value in the program is a subquery of its
 * table (`+` keeps it without affinity, as a bound value is). A program whose tables are missing
 * fails at its first reference to them. Each statement that returns rows creates a temporary table
 * of them instead, read after COMMIT (within the transaction, so created only if it commits).
 * Every temporary table belongs to this program alone and is dropped at its end.
 *
 * All of it is queued in one turn, the connection in serialized mode (statements run in the order
 * sent: in its default mode node-sqlite3 may start a statement before the previous one finished,
 * so the library switches the connection to serialized mode for good; one connection runs one
 * statement at a time anyway, so the application loses nothing). Nothing the application sends
 * can run inside the transaction, and the transaction never runs inside one of the application's:
 * its BEGIN would fail.
 *
 * busy_timeout is 0 meanwhile: a wait for another connection's lock would occupy one of libuv's few
 * threadpool threads, and enough of them waiting starve the holder's COMMIT of a thread (every
 * DataSource on the file in this process stalls for busy_timeout). A busy database is retried
 * asynchronously instead; the application's value is restored last.
 */
function queueAtomic(db: Sqlite3Database, statements: readonly SqlFragment[], busyTimeout: number, log: Log): Promise<Rows[]> {
  const program = ++programs;
  const argumentTable = (chunk: number) => `gemstone_program_${program}_arguments_${chunk}`;
  const rowsTable = (index: number) => `gemstone_program_${program}_rows_${index}`;
  const values: unknown[] = [];
  const body: string[] = [];
  const logged: { text: string; values: readonly unknown[] }[] = [];
  const reads: number[] = [];
  statements.forEach((statement, index) => {
    const offset = values.length;
    const { text, values: own } = render(statement, (position) => {
      const at = offset + position - 1;
      return `(SELECT +a${(at % ARGUMENTS_PER_TABLE) + 1} FROM temp.${argumentTable(Math.floor(at / ARGUMENTS_PER_TABLE))})`;
    });
    values.push(...own);
    logged.push(render(statement, 'question'));
    if (returnsRows(text)) {
      reads.push(index);
      body.push(`CREATE TEMP TABLE ${rowsTable(index)} AS ${text}`);
    } else {
      if (/\bRETURNING\b/i.test(text)) throw new Error('gemstone-utils: a sqlite3 program cannot return rows from a write (RETURNING); read them with a SELECT');
      body.push(text);
    }
  });
  const argumentTables: string[] = [];
  const fillArguments: { text: string; values: unknown[] }[] = [];
  for (let from = 0; from < values.length; from += ARGUMENTS_PER_TABLE) {
    const chunk = values.slice(from, from + ARGUMENTS_PER_TABLE);
    const table = argumentTable(argumentTables.length);
    argumentTables.push(table);
    fillArguments.push({ text: `CREATE TEMP TABLE ${table} AS SELECT ${chunk.map((_, i) => `? AS a${i + 1}`).join(', ')}`, values: chunk });
  }
  const transaction = ['BEGIN IMMEDIATE', `SAVEPOINT ${PROGRAM_SAVEPOINT}`, ...body, 'COMMIT'].join(';\n');
  const loggedProgram = ['BEGIN IMMEDIATE', ...logged.map((l) => l.text), 'COMMIT'].join(';\n');

  const results: Rows[] = statements.map(() => []);
  let failure: unknown;
  let committed = false;
  log.sent('BEGIN IMMEDIATE', []);
  for (const { text, values: own } of logged) log.sent(text, own);
  log.sent('COMMIT', []);
  return new Promise<Rows[]>((resolve, reject) => {
    db.serialize();
    db.serialize(() => {
      db.all('PRAGMA busy_timeout = 0', [], ignore);
      for (const fill of fillArguments) {
        db.all(fill.text, fill.values, (error) => {
          if (!error) return;
          log.error(error, fill.text, fill.values);
          failure ??= error;
        });
      }
      db.exec(transaction, (error) => {
        if (!error) committed = true;
        else {
          log.error(error, loggedProgram, values);
          failure ??= error;
        }
      });
      db.exec(`ROLLBACK TO ${PROGRAM_SAVEPOINT};\nROLLBACK`, ignore);
      for (const index of reads) {
        db.all(`SELECT * FROM temp.${rowsTable(index)}`, [], (error, rows) => {
          if (!committed) return;
          if (error) failure ??= error;
          else results[index] = rows as Rows;
        });
      }
      const tables = [...argumentTables, ...reads.map(rowsTable)];
      if (tables.length > 0) db.exec(tables.map((table) => `DROP TABLE IF EXISTS temp.${table}`).join(';\n'), ignore);
      db.all(`PRAGMA busy_timeout = ${Math.floor(busyTimeout)}`, [], () => (failure === undefined ? resolve(results) : reject(failure)));
    });
  });
}

/**
 * SQLite, for library work that needs JavaScript between its statements (schema installation,
 * `withTransaction`): waits until no transaction is open, then opens one on the shared QueryRunner
 * in that same turn of the event loop, runs `work` on it and commits (rolls back when it throws).
 * Unlike {@link runProgram} it is not one step: `work` must be the only user of the DataSource
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

/** SQLite, reads with JavaScript between statements: run once no transaction is open. */
export async function outsideTransactions<T>(dataSource: DataSource, work: () => Promise<T>, waitMs = DEFAULT_SQLITE_WAIT_MS): Promise<T> {
  refuseInsideTransactionScope(dataSource);
  return whenNoTransaction(dataSource, waitMs, work);
}
