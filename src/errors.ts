/**
 * Every error this package throws on purpose extends {@link GemstoneError}, so callers can tell
 * "the library refused" from "the database failed" (database errors are surfaced as they are).
 */
export class GemstoneError extends Error {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = new.target.name;
  }
}

/**
 * @internal A bad value as a message shows it: `String(value)` where that works, else its kind.
 * (`String` itself throws for a symbol inside a template, and for an object whose `toString`
 * and `valueOf` are not functions: a hostile option must still get its ValidationError.)
 */
export function shown(value: unknown): string {
  try {
    return String(value);
  } catch {
    return value === null ? 'null' : Array.isArray(value) ? 'an array' : typeof value === 'object' ? 'an object' : typeof value;
  }
}

/** A bad argument. Nothing was written: validation runs before any statement. */
export class ValidationError extends GemstoneError {
  /** The parameter that was rejected, e.g. `"candidateId"` or `"options.ns"`. */
  readonly parameter: string;

  constructor(parameter: string, problem: string, options?: { cause?: unknown }) {
    super(`${parameter} ${problem}`, options);
    this.parameter = parameter;
  }
}

/**
 * Thrown by `assertLeader` when the caller does not hold the unexpired lease (or holds it under
 * another term). Leader-only writes in that transaction must not be committed.
 */
export class NotLeaderError extends GemstoneError {
  /** The namespace whose leadership was checked. */
  readonly ns: string;
  /** The candidate that is not the leader. */
  readonly candidateId: string;
  /** The current unexpired leader, or null when the namespace has no live leader. */
  readonly leaderId: string | null;
  /** The leader row's current term, or null when the namespace has no leader row yet. */
  readonly term: number | null;

  /**
   * @param fields.detail What failed, when it is not the lease itself (a fenced write whose row
   *   is no longer the caller's); replaces the sentence about who holds the lease.
   * @param options.cause The error behind the refusal (a guarded table's database error).
   */
  constructor(
    fields: { ns: string; candidateId: string; leaderId: string | null; term: number | null; expectedTerm?: number; detail?: string },
    options?: { cause?: unknown },
  ) {
    const held =
      fields.detail !== undefined
        ? fields.detail
        : fields.leaderId === null
        ? 'no candidate holds an unexpired lease'
        : fields.leaderId === fields.candidateId
          ? `it holds term ${fields.term}, not the expected term ${fields.expectedTerm}`
          : `${fields.leaderId} holds the lease (term ${fields.term})`;
    super(
      `candidate ${fields.candidateId} is not the leader of namespace ${JSON.stringify(fields.ns)}: ${held}. ` +
        'Roll back the leader-only work of this transaction.',
      options,
    );
    this.ns = fields.ns;
    this.candidateId = fields.candidateId;
    this.leaderId = fields.leaderId;
    this.term = fields.term;
  }
}

/** The shared default DataSource was asked for before `initDb` set it. */
export class NotInitializedError extends GemstoneError {
  constructor() {
    super(
      'gemstone-utils has no default DataSource yet: call `await initDb(dataSource)` (or `initDb(url)`) at startup, ' +
        'before creating the service or loop; or pass the DataSource where you create it ' +
        '(`new ElectionService(dataSource)`, `new LeaderElector({ dataSource })`, `new LeaderElectorGroup({ dataSource })`).',
    );
  }
}

/**
 * An initialized DataSource does not know the registered entities. TypeORM builds entity metadata
 * once, in `initialize()`, so they must be listed before that.
 */
export class EntitiesNotRegisteredError extends GemstoneError {
  constructor(missing: readonly string[]) {
    super(
      `the DataSource was initialized without the gemstone-utils entities (${missing.join(', ')}). ` +
        'Either call `await initDb(dataSource)` before `dataSource.initialize()` (initDb initializes it), ' +
        'or add `...GemstoneDB.entities` to the `entities` option of the DataSource.',
    );
  }
}

/** A database that this package does not support (the message names the supported ones). */
export class UnsupportedDatabaseError extends GemstoneError {
  constructor(type: string) {
    super(
      `database type ${JSON.stringify(type)} is not supported by gemstone-utils; use postgres, mysql, mariadb, ` +
        'better-sqlite3 or sqlite (TypeORM 0.3 only).',
    );
  }
}

/**
 * The caller's own transaction hit a serialization failure or deadlock (PostgreSQL 40001/40P01,
 * MySQL/MariaDB 1213, MariaDB 1020 under `innodb_snapshot_isolation`) while the library worked
 * inside it. The database has aborted (or will only roll back) that transaction: nothing the
 * library did in it counts. Roll it back and run the whole transaction again. `cause` is the
 * database error.
 */
export class SerializationFailureError extends GemstoneError {
  constructor(cause: unknown) {
    super(
      'the database aborted the caller\'s transaction (serialization failure or deadlock) while gemstone-utils worked in it: ' +
        'roll the transaction back and retry it from the start. The library retries on its own only in transactions it owns.',
      { cause },
    );
  }
}

/**
 * A DataSource option the library cannot honour for its tables (for example a naming strategy
 * that renames columns). The message names the option and what to do instead.
 */
export class UnsupportedConfigurationError extends GemstoneError {
  /** The DataSource option that was refused, e.g. `"namingStrategy"`. */
  readonly option: string;

  constructor(option: string, problem: string, options?: { cause?: unknown }) {
    super(`the DataSource option ${option} is not supported by gemstone-utils: ${problem}`, options);
    this.option = option;
  }
}

/**
 * SQLite: the library waited longer than its limit for a transaction someone else holds open on
 * the DataSource's one connection (every QueryRunner of a TypeORM SQLite DataSource shares it).
 * The library never runs its own transaction inside another one, so it waits, then gives up.
 * Nothing was written.
 */
export class SqliteTransactionOpenError extends GemstoneError {
  /** How long the library waited, in milliseconds. */
  readonly waitedMs: number;

  constructor(waitedMs: number, options?: { cause?: unknown }) {
    super(
      `an application transaction held the shared SQLite connection for more than ${waitedMs} ms, so gemstone-utils ` +
        'could not run its own transaction (nothing was written). To run the call inside that transaction, pass its ' +
        'EntityManager or QueryRunner as `session`; otherwise keep application transactions short.',
      options,
    );
    this.waitedMs = waitedMs;
  }
}

/**
 * SQLite: a library call without `session` was made inside `withTransaction` on the same
 * DataSource. Its transaction could only start after the surrounding one ends, which waits for
 * this call: it would never finish, so the library refuses at once.
 */
export class SessionRequiredError extends GemstoneError {
  constructor(options?: { cause?: unknown }) {
    super(
      'a gemstone-utils call without `session` was made inside withTransaction on the same SQLite DataSource, whose ' +
        'one connection that transaction holds: pass the EntityManager that withTransaction gives your work as ' +
        '`{ session: manager }` so the call joins the transaction.',
      options,
    );
  }
}

/**
 * The database that a URL or DataSource names does not exist on its server (PostgreSQL 3D000,
 * MySQL/MariaDB 1049). `initDb` creates the election tables, never a database. `cause` is the
 * driver's error.
 */
export class DatabaseNotFoundError extends GemstoneError {
  /** The missing database's name. */
  readonly database: string;

  constructor(database: string, createStatement: string, options?: { cause?: unknown }) {
    super(
      `database ${JSON.stringify(database)} does not exist: create it first (${createStatement}) or point the URL or ` +
        'DataSource at an existing database; gemstone-utils creates its tables, never the database.',
      options,
    );
    this.database = database;
  }
}

/**
 * A database failure the library can say what to do about: the fields every one of them has.
 * `target` names the database (its URL or host, port and database; never the password) and
 * `cause` is the driver's or TypeORM's error.
 */
export abstract class DatabaseSetupError extends GemstoneError {
  /** The database, as a URL without its password (e.g. `postgres://app@db:5432/app`). */
  readonly target: string;
  /** The message without the target: what is wrong and what to do (for a caller that names the target itself). */
  readonly detail: string;

  constructor(target: string, problem: string, fix: string, options?: { cause?: unknown }) {
    super(`${target}: ${problem}. ${fix}`, options);
    this.target = target;
    this.detail = `${problem}. ${fix}`;
  }
}

/** The database server refused the connection, or could not be reached (ECONNREFUSED, ENOTFOUND, ETIMEDOUT…). */
export class DatabaseUnreachableError extends DatabaseSetupError {
  constructor(target: string, reason: string, options?: { cause?: unknown }) {
    super(
      target,
      `cannot reach the database server (${reason})`,
      'Check that the server runs and that the host and port in DATABASE_URL (or the DataSource options) are right.',
      options,
    );
  }
}

/** The server refused the user: the role does not exist, the password is wrong, or access is denied. */
export class DatabaseAuthenticationError extends DatabaseSetupError {
  constructor(target: string, reason: string, options?: { cause?: unknown }) {
    super(
      target,
      `the database refused the login (${reason})`,
      'Check the user name and password in DATABASE_URL (or the DataSource options), and that this user exists and may connect to that database.',
      options,
    );
  }
}

/**
 * The registered tables (e.g. `gemstone_election_leader`) are not in the database: `initDb` was
 * not run against it (or ran with `createTables: false` and the migrations were not applied).
 */
export class TablesMissingError extends DatabaseSetupError {
  constructor(target: string, reason: string, options?: { cause?: unknown }) {
    super(
      target,
      `the gemstone-utils tables are missing (${reason})`,
      'Call `await initDb(dataSource)` at startup (it creates them), run `gemstone-election init --url <url>`, ' +
        'or apply the migrations (`...GemstoneDB.migrations`) when the role has no DDL rights.',
      options,
    );
  }
}

/** The DataSource is not connected: it was never initialized, or was destroyed. */
export class DataSourceNotInitializedError extends DatabaseSetupError {
  constructor(target: string, options?: { cause?: unknown }) {
    super(
      target,
      'the DataSource is not initialized (never initialized, or destroyed)',
      'Call `await initDb(dataSource)` at startup, before using the service or starting a loop, and destroy it only after stopping them.',
      options,
    );
  }
}
