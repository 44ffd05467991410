import type { DataSource } from 'typeorm';
import { DatabaseNotFoundError } from '../errors';

/** A driver error's fields, as pg and mysql2 set them. */
interface DriverError {
  readonly code?: unknown;
  readonly errno?: unknown;
  readonly message?: unknown;
}

/** The database named by the options: `database`, else the path of `url`. */
function configuredName(dataSource: DataSource): string | undefined {
  const options = dataSource.options as { database?: unknown; url?: unknown };
  if (typeof options.database === 'string' && options.database !== '') return options.database;
  if (typeof options.url !== 'string') return undefined;
  try {
    const name = decodeURIComponent(new URL(options.url).pathname.replace(/^\//, ''));
    return name === '' ? undefined : name;
  } catch {
    return undefined;
  }
}

/**
 * `error` as a {@link DatabaseNotFoundError} when it says the configured database does not exist
 * (PostgreSQL 3D000 `database "x" does not exist`, MySQL/MariaDB 1049 `Unknown database 'x'`);
 * otherwise `error` itself. SQLite creates a missing file, so it never says so.
 */
export function explainMissingDatabase(dataSource: DataSource, error: unknown): unknown {
  const failure = (error ?? {}) as DriverError;
  const message = typeof failure.message === 'string' ? failure.message : '';
  if (failure.code === '3D000') {
    const name = /database "(.*)" does not exist/.exec(message)?.[1] ?? configuredName(dataSource) ?? '';
    return new DatabaseNotFoundError(name, `CREATE DATABASE "${name.replace(/"/g, '""')}"`, { cause: error });
  }
  if (failure.errno === 1049 || failure.code === 'ER_BAD_DB_ERROR') {
    const name = /Unknown database '(.*)'/.exec(message)?.[1] ?? configuredName(dataSource) ?? '';
    return new DatabaseNotFoundError(name, `CREATE DATABASE \`${name.replace(/`/g, '``')}\``, { cause: error });
  }
  return error;
}
