/**
 * `gemstone-utils/db` — the shared base that plugin modules register their tables on.
 * @packageDocumentation
 * @module gemstone-utils/db
 */
// The database folders register their dialects (see src/databases/registry.ts).
import '../databases';
export { GemstoneDB } from './registry';
export type { EntityClass, MigrationClass, RegisteredEntity, Registration, TableInstaller } from './registry';
export { initDb, DEFAULT_CREATE_TABLES } from './init-db';
export type { InitDbOptions, InitDbTarget } from './init-db';
export { getDataSource } from './default-data-source';
export { DEFAULT_DB_URL, DEFAULT_SQLITE_BUSY_TIMEOUT_MS } from './url';
export type { Session } from './session';
export { DEFAULT_CONFLICT_RETRIES } from './session';
export { withTransaction } from './transaction';
export type { WithTransactionOptions } from './transaction';
export {
  GemstoneError,
  ValidationError,
  NotInitializedError,
  EntitiesNotRegisteredError,
  UnsupportedDatabaseError,
  SerializationFailureError,
  UnsupportedConfigurationError,
  SqliteTransactionOpenError,
  SessionRequiredError,
  DatabaseNotFoundError,
  DatabaseSetupError,
  DatabaseUnreachableError,
  DatabaseAuthenticationError,
  TablesMissingError,
  DataSourceNotInitializedError,
} from '../errors';
export { DATABASE_URL_VARIABLES } from './env-url';
export { DEFAULT_REPLACED_WARNING } from './default-data-source';
export { SQLITE_LOCAL_ELECTION_WARNING } from './sqlite-warning';
export { DEFAULT_SQLITE_WAIT_MS } from './defaults';
