import type { DataSourceOptions } from 'typeorm';
import { ValidationError } from '../errors';

/** The embedded default when neither a target nor `GEMSTONE_DB_URL` is given. */
export const DEFAULT_DB_URL = 'sqlite:gemstone.sqlite';

/** How long a SQLite connection waits for another process's write lock before SQLITE_BUSY. */
export const DEFAULT_SQLITE_BUSY_TIMEOUT_MS = 5000;

type SqliteDriver = 'better-sqlite3' | 'sqlite3';

function installed(name: string): boolean {
  try {
    require.resolve(name);
    return true;
  } catch {
    return false;
  }
}

/** better-sqlite3 where installed (the only SQLite driver of TypeORM 1.x), else sqlite3 (TypeORM 0.3). */
function defaultSqliteDriver(): SqliteDriver {
  return installed('better-sqlite3') || !installed('sqlite3') ? 'better-sqlite3' : 'sqlite3';
}

function sqliteOptions(database: string, driver: SqliteDriver): DataSourceOptions {
  const memory = database === ':memory:';
  // WAL lets readers run beside the writer: the advice for several processes on one file.
  const common = { database, enableWAL: !memory } as const;
  return driver === 'sqlite3'
    ? ({ type: 'sqlite', ...common, busyTimeout: DEFAULT_SQLITE_BUSY_TIMEOUT_MS } as unknown as DataSourceOptions)
    : ({ type: 'better-sqlite3', ...common, timeout: DEFAULT_SQLITE_BUSY_TIMEOUT_MS } as DataSourceOptions);
}

/**
 * DataSourceOptions for a database URL:
 * `postgres://…`, `postgresql://…`, `mysql://…`, `mariadb://…`, `sqlite:<path>`, `sqlite::memory:`.
 * A SQLite URL may end in `?driver=sqlite3` or `?driver=better-sqlite3`.
 */
export function optionsFromUrl(url: string, parameter = 'target'): DataSourceOptions {
  if (typeof url !== 'string' || url.trim() === '') throw new ValidationError(parameter, 'must be a non-empty database URL');
  const scheme = /^([a-z][a-z0-9+.-]*):/i.exec(url)?.[1]?.toLowerCase();
  switch (scheme) {
    case 'postgres':
    case 'postgresql':
      return { type: 'postgres', url };
    case 'mysql':
    case 'mariadb':
      // timezone 'Z': entities read through TypeORM show the UTC instants the library stores.
      return { type: scheme, url: url.replace(/^mariadb:/i, 'mysql:'), timezone: 'Z' } as DataSourceOptions;
    case 'sqlite': {
      const [pathPart, query = ''] = url.slice('sqlite:'.length).split('?', 2) as [string, string?];
      const path = pathPart.startsWith('//') ? pathPart.slice(2) : pathPart;
      if (path === '') throw new ValidationError(parameter, `has no file path: use sqlite:<path> or sqlite::memory: (got ${JSON.stringify(url)})`);
      const driver = new URLSearchParams(query).get('driver') ?? defaultSqliteDriver();
      if (driver !== 'sqlite3' && driver !== 'better-sqlite3') {
        throw new ValidationError(parameter, `names an unknown SQLite driver ${JSON.stringify(driver)} (use sqlite3 or better-sqlite3)`);
      }
      return sqliteOptions(path, driver);
    }
    default:
      throw new ValidationError(
        parameter,
        `must be a postgres://, postgresql://, mysql://, mariadb:// or sqlite: URL (got ${JSON.stringify(redactUrl(url))})`,
      );
  }
}

/** What {@link redactUrl} puts in place of a password. */
export const REDACTED_PASSWORD = '***';

/**
 * The URL with its password replaced by {@link REDACTED_PASSWORD}, for messages: the user name
 * stays (it tells the operator which account was used), and so does everything else. Covers
 * `scheme://user:password@host` and a `password=` query parameter.
 */
export function redactUrl(url: string, placeholder = REDACTED_PASSWORD): string {
  return url
    .replace(/^([a-z][a-z0-9+.-]*:\/\/[^:@/?#]*):[^@/?#]*@/i, (_match, head: string) => `${head}:${placeholder}@`)
    .replace(/([?&]password=)[^&#]*/gi, (_match, head: string) => `${head}${placeholder}`);
}

/** True when the URL carries a password (in the user info or as a `password=` query parameter). */
export function urlHasPassword(url: string): boolean {
  return redactUrl(url, '\u0000') !== url;
}
