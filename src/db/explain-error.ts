import type { DataSource } from 'typeorm';
import { allTargets, targetOfType } from '../databases/targets';
import {
  DatabaseAuthenticationError,
  DatabaseUnreachableError,
  DataSourceNotInitializedError,
  GemstoneError,
  TablesMissingError,
} from '../errors';
import { LeaderTableMissing } from '../databases/contract/guards';
import { driverErrorFields } from '../databases/contract/missing-table';
import { explainMissingDatabase } from './missing-database';
import { GemstoneDB } from './registry';
import { setExplainer } from './explain-hook';
import { redactUrl } from './url';

/**
 * The database a DataSource opens, for messages: its `url` with the password redacted, else
 * `type://user@host:port/database` (a SQLite file as `sqlite:<path>`). Never the password.
 */
export function describeTarget(dataSource: DataSource): string {
  const options = dataSource.options as {
    type: string;
    url?: unknown;
    host?: unknown;
    port?: unknown;
    username?: unknown;
    database?: unknown;
  };
  if (typeof options.url === 'string' && options.url !== '') return redactUrl(options.url);
  const target = targetOfType(options.type);
  // An embedded database is named by its URL form, `<scheme>:<path>` (e.g. `sqlite::memory:`).
  if (target?.singleMachine) return `${target.schemes[0]}:${target.file(dataSource.options) ?? String(options.database ?? '')}`;
  const user = typeof options.username === 'string' && options.username !== '' ? `${options.username}@` : '';
  const host = typeof options.host === 'string' && options.host !== '' ? options.host : 'localhost';
  const port = options.port !== undefined && options.port !== null ? `:${String(options.port)}` : '';
  const database = typeof options.database === 'string' ? options.database : '';
  return `${options.type}://${user}${host}${port}/${database}`;
}

/** Node's socket error codes that mean "no server answered there". */
const UNREACHABLE_CODES = new Set(['ECONNREFUSED', 'ENOTFOUND', 'EAI_AGAIN', 'ETIMEDOUT', 'EHOSTUNREACH', 'ENETUNREACH']);

/** PostgreSQL 28P01 invalid_password, 28000 invalid_authorization_specification (no such role, pg_hba). */
const PG_AUTH_CODES = new Set(['28P01', '28000']);
/** MySQL/MariaDB 1045 access denied (user or password), 1044 access denied to the database, 1698 (auth plugin). */
const MYSQL_AUTH_ERRNOS = new Set([1045, 1044, 1698]);

/** The socket code of a connect failure; Node reports a host with several addresses as an AggregateError. */
function socketCode(error: unknown): string | undefined {
  const fields = error as { code?: unknown; errors?: unknown };
  if (typeof fields?.code === 'string' && UNREACHABLE_CODES.has(fields.code)) return fields.code;
  if (Array.isArray(fields?.errors)) return fields.errors.map(socketCode).find((code) => code !== undefined);
  return undefined;
}

function firstLine(error: unknown): string {
  const message = String((driverErrorFields(error)?.message as unknown) ?? (error as Error)?.message ?? error);
  return message.split('\n')[0]!.trim();
}

/**
 * Whether a missing-table message is about a registered table (the election's or a plugin's): an
 * application table missing in the caller's own work (`withTransaction`) is the application's.
 */
function namesRegisteredTable(dataSource: DataSource, message: string): boolean {
  return GemstoneDB.entities.some((entity) => dataSource.hasMetadata(entity) && message.includes(dataSource.getMetadata(entity).tableName));
}

/**
 * Whether `error` says a table is missing, by the DataSource's own database (PostgreSQL 42P01,
 * MySQL/MariaDB ER_NO_SUCH_TABLE 1146, SQLite "no such table"): as the driver threw it, or as
 * {@link explainDatabaseError} explained it ({@link TablesMissingError}, the driver's error its
 * cause). Which table is the caller's to know: it sent the statement.
 */
export function isMissingTableError(dataSource: DataSource, error: unknown): boolean {
  const cause = error instanceof TablesMissingError ? error.cause : error;
  return targetOfType(dataSource.options.type)?.isMissingTable(cause) === true;
}

/** TypeORM's own "not connected" errors (PostgreSQL "Driver not Connected", ConnectionIsNotSetError…). */
function isNotConnected(error: unknown): boolean {
  const name = (error as { name?: unknown })?.name;
  return name === 'ConnectionIsNotSetError' || name === 'CannotExecuteNotConnectedError' || /Driver not Connected/i.test(String((error as Error)?.message));
}

/**
 * `error` as the {@link GemstoneError} that says what to do, when it is one of the failures a new
 * setup meets: the server unreachable, the login refused, the tables missing, the DataSource not
 * initialized, the database missing (see `missing-database.ts`). Any other error (and a
 * GemstoneError) is returned as it is. The one rule for the library's entry points and the CLI.
 */
export function explainDatabaseError(dataSource: DataSource, error: unknown): unknown {
  if (error instanceof GemstoneError) return error;
  const target = () => describeTarget(dataSource);
  const cause = { cause: error };
  const code = socketCode(error) ?? socketCode(driverErrorFields(error));
  if (code !== undefined) return new DatabaseUnreachableError(target(), `${code}: ${firstLine(error)}`, cause);
  const fields = driverErrorFields(error);
  if (PG_AUTH_CODES.has(String(fields?.code)) || MYSQL_AUTH_ERRNOS.has(Number(fields?.errno))) {
    return new DatabaseAuthenticationError(target(), firstLine(error), cause);
  }
  if (allTargets().some((t) => t.isMissingTable(error)) && namesRegisteredTable(dataSource, firstLine(error))) {
    return new TablesMissingError(target(), firstLine(error), cause);
  }
  if (error instanceof LeaderTableMissing) return new TablesMissingError(target(), error.message, cause);
  if (!dataSource.isInitialized && isNotConnected(error)) return new DataSourceNotInitializedError(target(), cause);
  return explainMissingDatabase(dataSource, error);
}

/** Runs `work`; a failure leaves as {@link explainDatabaseError} explains it. */
export async function explained<T>(dataSource: DataSource, work: () => Promise<T>): Promise<T> {
  try {
    return await work();
  } catch (error) {
    throw explainDatabaseError(dataSource, error);
  }
}

/** Throws {@link DataSourceNotInitializedError} unless `dataSource` is initialized (before any statement). */
export function assertInitialized(dataSource: DataSource): void {
  if (!dataSource.isInitialized) throw new DataSourceNotInitializedError(describeTarget(dataSource));
}

/**
 * `methods` (an object of async functions, such as a database's election programs) with every
 * call's failure explained by {@link explainDatabaseError}: the paths that bypass the session
 * helpers (`session.ts`) say the same as those that use them. Each method is wrapped once, here:
 * a call costs one `.catch` more (these are the SQLite hot path's programs, run on every tick).
 */
export function withExplainedFailures<T extends object>(dataSource: DataSource, methods: T): T {
  const wrapped: Record<string, unknown> = {};
  for (const [name, value] of Object.entries(methods)) {
    wrapped[name] =
      typeof value === 'function'
        ? (...args: unknown[]) =>
            Promise.resolve(value.apply(methods, args)).catch((error: unknown) => {
              throw explainDatabaseError(dataSource, error);
            })
        : value;
  }
  return wrapped as T;
}

// The session helpers explain their failures by this rule (see explain-hook.ts).
setExplainer(explainDatabaseError, assertInitialized);
