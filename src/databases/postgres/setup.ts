import type { SetupParts } from '../contract/setup';

/** The TypeORM type of PostgreSQL. */
export const POSTGRES_TYPES: readonly string[] = ['postgres'];

/** PostgreSQL: connecting needs nothing beyond TypeORM's. */
export const postgresSetup: SetupParts = {
  types: POSTGRES_TYPES,
  missingDriverHint: () => '',
  busyOnInitialize: () => false,
  afterInitialize: async () => undefined,
};
