import type { PlaceholderStyle, RawSql, SqlFragment } from '../db/sql';

/*
 * The contract between the shared code and one database's folder (`postgres/`, `mysql/`,
 * `sqlite/`). Code outside `src/databases/` never names a database: it asks the DataSource's
 * dialect (`contextOf(dataSource).dialect`) and the dialect answers for its database.
 */

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
  /**
   * An instant the application gives (whole epoch milliseconds, bound as a parameter) in the
   * stored form, exactly: so it compares with stored instants and keys a row (a schedule slot)
   * as the database would write it, whatever the driver's date conversion or the session's time zone.
   */
  instantOf(epochMs: number): SqlFragment;
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
  /** A boolean as a statement parameter: pg takes it as it is, mysql2 and the SQLite drivers want 1/0. */
  bool(value: boolean): boolean | number;
  /**
   * Whether tables live in a named schema the DataSource or entity may choose (PostgreSQL); the
   * others have one namespace per database (MySQL's "schema" is the database itself).
   */
  readonly schemas: boolean;
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
export function driverError(error: unknown): Record<string, unknown> {
  if (typeof error !== 'object' || error === null) return {};
  const wrapped = (error as { driverError?: unknown }).driverError;
  return (typeof wrapped === 'object' && wrapped !== null ? wrapped : error) as Record<string, unknown>;
}

export function toDate(ms: number): Date {
  return new Date(Math.round(ms));
}

/** Truthiness as each driver returns it (PG booleans, MySQL/SQLite 0/1, sometimes strings). */
export function sqlBool(value: unknown): boolean {
  return value === true || value === 1 || value === '1' || value === 't' || value === 'true';
}
