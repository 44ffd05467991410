import * as path from 'path';
import type { DataSource } from 'typeorm';
import { Dialect, dialectOf } from './dialect';
import { Mutex } from './mutex';
import { raw, RawSql } from './sql';

/** What the library derives once per DataSource. */
export interface DbContext {
  readonly dataSource: DataSource;
  readonly dialect: Dialect;
  /**
   * Present on SQLite only. Every QueryRunner of a TypeORM SQLite DataSource shares one
   * connection, so two transactions started concurrently would interleave on it: the library's
   * own SQLite work runs one at a time through this lock. DataSources of one database file in
   * one process share it: better-sqlite3 waits for another connection's write lock
   * synchronously, blocking the event loop, so the holder could never finish.
   */
  readonly sqliteLock: Mutex | undefined;
  /** A table name, escaped and qualified with the DataSource's `schema` (PostgreSQL). */
  table(name: string): RawSql;
}

const contexts = new WeakMap<DataSource, DbContext>();
const fileLocks = new Map<string, Mutex>();

function sqliteLockOf(dataSource: DataSource): Mutex {
  const database = String((dataSource.options as { database?: unknown }).database ?? '');
  if (database === '' || database === ':memory:') return new Mutex(); // private to this DataSource
  const file = path.resolve(database);
  let lock = fileLocks.get(file);
  if (!lock) fileLocks.set(file, (lock = new Mutex()));
  return lock;
}

export function contextOf(dataSource: DataSource): DbContext {
  let context = contexts.get(dataSource);
  if (!context) {
    const dialect = dialectOf(dataSource);
    const schema = dialect.name === 'postgres' ? (dataSource.options as { schema?: string }).schema : undefined;
    const escape = (identifier: string) => dataSource.driver.escape(identifier);
    context = Object.freeze({
      dataSource,
      dialect,
      sqliteLock: dialect.name === 'sqlite' ? sqliteLockOf(dataSource) : undefined,
      table: (name: string) => raw(schema ? `${escape(schema)}.${escape(name)}` : escape(name)),
    });
    contexts.set(dataSource, context);
  }
  return context;
}
