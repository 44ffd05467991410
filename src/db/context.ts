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
   * own SQLite work runs one at a time through this lock.
   */
  readonly sqliteLock: Mutex | undefined;
  /** A table name, escaped and qualified with the DataSource's `schema` (PostgreSQL). */
  table(name: string): RawSql;
}

const contexts = new WeakMap<DataSource, DbContext>();

export function contextOf(dataSource: DataSource): DbContext {
  let context = contexts.get(dataSource);
  if (!context) {
    const dialect = dialectOf(dataSource);
    const schema = dialect.name === 'postgres' ? (dataSource.options as { schema?: string }).schema : undefined;
    const escape = (identifier: string) => dataSource.driver.escape(identifier);
    context = Object.freeze({
      dataSource,
      dialect,
      sqliteLock: dialect.name === 'sqlite' ? new Mutex() : undefined,
      table: (name: string) => raw(schema ? `${escape(schema)}.${escape(name)}` : escape(name)),
    });
    contexts.set(dataSource, context);
  }
  return context;
}
