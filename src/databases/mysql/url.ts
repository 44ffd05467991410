import type { DataSourceOptions } from 'typeorm';
import { driverErrorFields } from '../contract/missing-table';
import type { DatabaseTarget } from '../contract/target';

/** MySQL/MariaDB as a URL target: `mysql://…` or `mariadb://…` (both reach mysql2 as `mysql://`). */
export const mysqlTarget: DatabaseTarget = {
  schemes: ['mysql', 'mariadb'],
  types: ['mysql', 'mariadb'],
  shownAs: ['mysql://', 'mariadb://'],
  example: 'mysql://user:<password>@host:3306/app',
  optionsFromUrl: (url, scheme) =>
    // timezone 'Z': entities read through TypeORM show the UTC instants the library stores.
    ({ type: scheme, url: url.replace(/^mariadb:/i, 'mysql:'), timezone: 'Z' }) as DataSourceOptions,
  // `extra` is mysql2's pool config: four connections are plenty for a CLI.
  withConnectTimeout: (options, timeoutMs) => ({ ...options, connectTimeout: timeoutMs, extra: { connectionLimit: 4 } }) as DataSourceOptions,
  file: () => undefined,
  /** ER_NO_SUCH_TABLE. */
  isMissingTable: (error) => Number(driverErrorFields(error)?.errno) === 1146,
};
