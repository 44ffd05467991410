import type { DataSource } from 'typeorm';
import { NotInitializedError } from '../errors';

let shared: DataSource | undefined;

/** The shared default DataSource: the one the latest `initDb` call returned. */
export function getDataSource(): DataSource {
  if (!shared) throw new NotInitializedError();
  return shared;
}

/** @internal Set by `initDb`. */
export function setDataSource(dataSource: DataSource): void {
  shared = dataSource;
}
