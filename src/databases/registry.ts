import type { DataSource } from 'typeorm';
import { UnsupportedDatabaseError } from '../errors';
import type { Dialect } from './dialect';

/**
 * The dialect of each TypeORM `type`, filled by the database folders when `src/databases` is
 * imported (every entry point of the package does). The shared code finds its database here and
 * never imports a database folder: the folders import the shared code, not the other way round.
 */
const dialects = new Map<string, Dialect>();

/** Makes `dialect` the one of DataSources whose `type` is one of `types`. */
export function registerDialect(types: readonly string[], dialect: Dialect): void {
  for (const type of types) dialects.set(type, dialect);
}

/** The dialect of a DataSource, from its `type` option. */
export function dialectOf(dataSource: DataSource): Dialect {
  const type = String(dataSource.options.type);
  const dialect = dialects.get(type);
  if (!dialect) throw new UnsupportedDatabaseError(type);
  return dialect;
}

/**
 * What a database does to the connections of each initialized DataSource the library is given
 * (its own or the application's), by TypeORM `type`; absent where nothing is needed. Called at
 * every use of the DataSource: an adopter does its work once per set of connections (a DataSource
 * initialized again has new ones) and is a look-up otherwise.
 */
const connectionAdopters = new Map<string, (dataSource: DataSource) => void>();

/** Makes `adopt` run for each initialized DataSource whose `type` is one of `types` (see {@link adoptConnections}). */
export function registerConnectionAdopter(types: readonly string[], adopt: (dataSource: DataSource) => void): void {
  for (const type of types) connectionAdopters.set(type, adopt);
}

/** Runs the adopter of the DataSource's database (PostgreSQL: `postgres/pool-errors.ts`), if any. */
export function adoptConnections(dataSource: DataSource): void {
  connectionAdopters.get(String(dataSource.options.type))?.(dataSource);
}

/** The dialect of a TypeORM `type` (a DataSourceOptions' `type`), if one is registered. */
export function dialectOfType(type: unknown): Dialect | undefined {
  return dialects.get(String(type));
}
