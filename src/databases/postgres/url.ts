import type { DataSourceOptions } from 'typeorm';
import { driverErrorFields } from '../contract/missing-table';
import type { DatabaseTarget } from '../contract/target';

/** PostgreSQL as a URL target: `postgres://…` or `postgresql://…`, passed to pg as it is. */
export const postgresTarget: DatabaseTarget = {
  schemes: ['postgres', 'postgresql'],
  types: ['postgres'],
  shownAs: ['postgres://', 'postgresql://'],
  example: 'postgres://user:<password>@host:5432/app',
  optionsFromUrl: (url) => ({ type: 'postgres', url }),
  // `extra` is pg's Pool config: four connections are plenty for a CLI.
  withConnectTimeout: (options, timeoutMs) => ({ ...options, connectTimeoutMS: timeoutMs, extra: { max: 4 } }) as DataSourceOptions,
  file: () => undefined,
  /** 42P01: undefined_table. */
  isMissingTable: (error) => driverErrorFields(error)?.code === '42P01',
};
