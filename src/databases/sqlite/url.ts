import type { DataSourceOptions } from 'typeorm';
import { DEFAULT_SQLITE_BUSY_TIMEOUT_MS } from '../../db/defaults';
import { ValidationError } from '../../errors';
import { driverErrorFields } from '../contract/missing-table';
import type { DatabaseTarget } from '../contract/target';

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
 * SQLite as a URL target: `sqlite:<path>`, `sqlite://<path>` or `sqlite::memory:`, optionally
 * ending in `?driver=sqlite3` or `?driver=better-sqlite3` (default: see {@link defaultSqliteDriver}).
 */
export const sqliteTarget: DatabaseTarget = {
  schemes: ['sqlite'],
  types: ['better-sqlite3', 'sqlite'],
  shownAs: ['sqlite:'],
  example: 'sqlite:/path/to/app.sqlite',
  // One file on one machine: processes elsewhere cannot open it (see db/sqlite-warning.ts).
  singleMachine: true,
  optionsFromUrl(url, _scheme, parameter) {
    const [pathPart, query = ''] = url.slice('sqlite:'.length).split('?', 2) as [string, string?];
    const path = pathPart.startsWith('//') ? pathPart.slice(2) : pathPart;
    if (path === '') throw new ValidationError(parameter, `has no file path: use sqlite:<path> or sqlite::memory: (got ${JSON.stringify(url)})`);
    const driver = new URLSearchParams(query).get('driver') ?? defaultSqliteDriver();
    if (driver !== 'sqlite3' && driver !== 'better-sqlite3') {
      throw new ValidationError(parameter, `names an unknown SQLite driver ${JSON.stringify(driver)} (use sqlite3 or better-sqlite3)`);
    }
    return sqliteOptions(path, driver);
  },
  // A file opens at once or not at all: nothing to time out.
  withConnectTimeout: (options) => options,
  file(options) {
    const database = String(options.database);
    return database === ':memory:' ? undefined : database;
  },
  isMissingTable: (error) => /no such table/i.test(String(driverErrorFields(error)?.message)),
};
