import type { SetupParts } from '../contract/setup';

/** The TypeORM types of MySQL and MariaDB (one dialect serves both). */
export const MYSQL_TYPES: readonly string[] = ['mysql', 'mariadb'];

/** MySQL/MariaDB: connecting needs nothing beyond TypeORM's. */
export const mysqlSetup: SetupParts = {
  types: MYSQL_TYPES,
  missingDriverHint: () => '',
  busyOnInitialize: () => false,
  afterInitialize: async () => undefined,
};
