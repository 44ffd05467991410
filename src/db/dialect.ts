import type { DataSource } from 'typeorm';
import { UnsupportedDatabaseError } from '../errors';
import { PlaceholderStyle, raw, RawSql, sql, SqlFragment } from './sql';

export type DialectName = 'postgres' | 'mysql' | 'sqlite';

/**
 * What differs between the supported databases, in one place: the server clock, instant
 * arithmetic and read-back, upsert syntax, row locks and how errors are classified.
 *
 * Instants are always computed by the database (`now`, `nowPlus`) and read back as epoch
 * milliseconds or UTC text (`instant`), so neither the application host's clock and time zone nor
 * the driver's date conversion (mysql2's `timezone`, pg's type parsers) can shift a lease.
 */
export interface Dialect {
  readonly name: DialectName;
  readonly placeholders: PlaceholderStyle;
  /** The server's clock at this statement (never the transaction start), in the stored form. */
  readonly now: RawSql;
  /** `now + seconds`, with the seconds bound as a parameter. */
  nowPlus(seconds: number): SqlFragment;
  /** Selects an instant column in a form {@link Dialect.parseInstant} reads exactly. */
  instant(column: string): RawSql;
  parseInstant(value: unknown): Date | null;
  /** `ON CONFLICT … DO NOTHING` or its MySQL equivalent (which also locks an existing row). */
  insertIfAbsent(keys: readonly string[]): RawSql;
  /** Upsert tail that copies `columns` from the proposed row on conflict. */
  upsert(keys: readonly string[], columns: readonly string[]): RawSql;
  /** Whether `SELECT … FOR UPDATE` exists; SQLite relies on its database write lock instead. */
  readonly rowLocks: boolean;
  /**
   * Whether the server pushes notifications to a listening connection (PostgreSQL LISTEN/NOTIFY):
   * an observer then learns of a lease change at once instead of at its next poll.
   */
  readonly notifications: boolean;
  /** `LIMIT count OFFSET offset`, both bound as parameters (whole numbers >= 0). */
  limit(count: number, offset?: number): SqlFragment;
  /** Deadlock or serialization failure: the whole transaction may be retried. */
  isRetryableConflict(error: unknown): boolean;
  /**
   * An error after which the database has aborted the whole transaction (serialization
   * failure, deadlock): inside the caller's transaction it becomes a `SerializationFailureError`.
   */
  isTransactionAbort(error: unknown): boolean;
  /** Unique-key violation (a racing first insert of the same leader row). */
  isUniqueViolation(error: unknown): boolean;
}

/** The driver's own error object: TypeORM wraps it in QueryFailedError as `driverError`. */
function driverError(error: unknown): Record<string, unknown> {
  if (typeof error !== 'object' || error === null) return {};
  const wrapped = (error as { driverError?: unknown }).driverError;
  return (typeof wrapped === 'object' && wrapped !== null ? wrapped : error) as Record<string, unknown>;
}

function toDate(ms: number): Date {
  return new Date(Math.round(ms));
}

const postgres: Dialect = {
  name: 'postgres',
  placeholders: 'dollar',
  // now() is the transaction start: a caller's long transaction would freeze the lease clock.
  now: raw('clock_timestamp()'),
  nowPlus: (seconds) => sql`(clock_timestamp() + make_interval(secs => ${seconds}))`,
  instant: (column) => raw(`CAST(EXTRACT(EPOCH FROM ${column}) * 1000 AS double precision)`),
  parseInstant: (value) => (value === null || value === undefined ? null : toDate(Number(value))),
  insertIfAbsent: (keys) => raw(`ON CONFLICT (${keys.join(', ')}) DO NOTHING`),
  upsert: (keys, columns) =>
    raw(`ON CONFLICT (${keys.join(', ')}) DO UPDATE SET ${columns.map((c) => `${c} = EXCLUDED.${c}`).join(', ')}`),
  rowLocks: true,
  notifications: true,
  limit: (count, offset = 0) => sql`LIMIT ${count} OFFSET ${offset}`,
  isRetryableConflict: (error) => ['40P01', '40001'].includes(String(driverError(error).code)),
  isTransactionAbort: (error) => ['40P01', '40001'].includes(String(driverError(error).code)),
  isUniqueViolation: (error) => driverError(error).code === '23505',
};

const mysql: Dialect = {
  name: 'mysql',
  placeholders: 'question',
  // UTC_TIMESTAMP ignores the session time_zone; NOW() would follow it.
  now: raw('UTC_TIMESTAMP(6)'),
  // Whole microseconds: INTERVAL with a fractional SECOND value is not portable across versions.
  nowPlus: (seconds) => sql`(UTC_TIMESTAMP(6) + INTERVAL ${Math.round(seconds * 1e6)} MICROSECOND)`,
  // Plain arithmetic on DATETIME: no time zone conversion anywhere (UNIX_TIMESTAMP would apply one).
  instant: (column) => raw(`TIMESTAMPDIFF(MICROSECOND, '1970-01-01 00:00:00', ${column})`),
  parseInstant: (value) => (value === null || value === undefined ? null : toDate(Number(value) / 1000)),
  // Updating the key to itself is a no-op that, unlike INSERT IGNORE, hides no other error.
  insertIfAbsent: (keys) => raw(`ON DUPLICATE KEY UPDATE ${keys[0]} = ${keys[0]}`),
  upsert: (_keys, columns) => raw(`ON DUPLICATE KEY UPDATE ${columns.map((c) => `${c} = VALUES(${c})`).join(', ')}`),
  rowLocks: true,
  notifications: false,
  // MySQL 8 refuses a LIMIT parameter sent as a double (mysql2's type for every number) in a
  // server-side prepared statement; as text it is taken.
  limit: (count, offset = 0) => sql`LIMIT ${String(count)} OFFSET ${String(offset)}`,
  // 1213: deadlock; 1205: lock wait timeout (the transaction is rolled back only partially: retry
  // whole); 1020: MariaDB's "record has changed since last read" under innodb_snapshot_isolation.
  isRetryableConflict: (error) => [1213, 1205, 1020].includes(Number(driverError(error).errno)),
  isTransactionAbort: (error) => [1213, 1020].includes(Number(driverError(error).errno)),
  isUniqueViolation: (error) => Number(driverError(error).errno) === 1062,
};

const SQLITE_INSTANT = "strftime('%Y-%m-%d %H:%M:%f', 'now')";

const sqlite: Dialect = {
  name: 'sqlite',
  placeholders: 'question',
  // The same UTC text form TypeORM writes for datetime columns, so text comparison is time order.
  now: raw(SQLITE_INSTANT),
  // '+-600.000 seconds' is no modifier (NULL): a negative amount carries its own sign.
  nowPlus: (seconds) => sql`strftime('%Y-%m-%d %H:%M:%f', 'now', ${`${seconds < 0 ? '' : '+'}${seconds.toFixed(3)} seconds`})`,
  instant: (column) => raw(column),
  parseInstant: (value) => {
    if (value === null || value === undefined) return null;
    const text = String(value);
    return new Date(/Z|[+-]\d\d:?\d\d$/.test(text) ? text : `${text.replace(' ', 'T')}Z`);
  },
  insertIfAbsent: (keys) => raw(`ON CONFLICT (${keys.join(', ')}) DO NOTHING`),
  upsert: (keys, columns) =>
    raw(`ON CONFLICT (${keys.join(', ')}) DO UPDATE SET ${columns.map((c) => `${c} = excluded.${c}`).join(', ')}`),
  rowLocks: false,
  notifications: false,
  limit: (count, offset = 0) => sql`LIMIT ${count} OFFSET ${offset}`,
  isRetryableConflict: (error) => {
    const { code, message } = driverError(error);
    // Another connection holds the write lock past busy_timeout, or (same connection, another
    // QueryRunner) the application has a transaction open: both end by themselves, so wait.
    return (
      /^SQLITE_(BUSY|LOCKED)/.test(String(code)) ||
      /SQLITE_BUSY|database is locked|cannot start a transaction within a transaction/i.test(String(message))
    );
  },
  // SQLite transactions are serializable by construction; busy errors are retried, never aborts.
  isTransactionAbort: () => false,
  isUniqueViolation: (error) => /^SQLITE_CONSTRAINT/.test(String(driverError(error).code)),
};

/** The dialect of a DataSource, from its `type` option. */
export function dialectOf(dataSource: DataSource): Dialect {
  const type = String(dataSource.options.type);
  switch (type) {
    case 'postgres':
      return postgres;
    case 'mysql':
    case 'mariadb':
      return mysql;
    case 'sqlite':
    case 'better-sqlite3':
      return sqlite;
    default:
      throw new UnsupportedDatabaseError(type);
  }
}

/** Truthiness as each driver returns it (PG booleans, MySQL/SQLite 0/1, sometimes strings). */
export function sqlBool(value: unknown): boolean {
  return value === true || value === 1 || value === '1' || value === 't' || value === 'true';
}
