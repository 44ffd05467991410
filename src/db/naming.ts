import type { DataSource } from 'typeorm';
import { UnsupportedConfigurationError } from '../errors';
import { GemstoneDB } from './registry';

/** The longest table name every supported database keeps intact (PostgreSQL's limit). */
const MAX_TABLE_NAME_BYTES = 63;

/**
 * Refuses a DataSource whose naming strategy renames the columns of the library's tables: its
 * statements name the columns as the tables are created (`leader_id`, `lease_expires_at`, …).
 * Renamed tables are fine: every statement takes the table name from the entity metadata.
 */
export function checkNaming(dataSource: DataSource): void {
  for (const entity of GemstoneDB.entities) {
    if (!dataSource.hasMetadata(entity)) continue;
    const metadata = dataSource.getMetadata(entity);
    // PostgreSQL would silently truncate a longer name (two tables could become one), MySQL refuses it.
    if (Buffer.byteLength(metadata.tableName) > MAX_TABLE_NAME_BYTES) {
      const option = dataSource.options.entityPrefix ? 'entityPrefix' : 'namingStrategy';
      throw new UnsupportedConfigurationError(
        option,
        `it makes the table name ${metadata.tableName} longer than ${MAX_TABLE_NAME_BYTES} bytes; use a shorter ${option === 'entityPrefix' ? 'prefix' : 'table name'}.`,
      );
    }
    for (const column of metadata.columns) {
      if (column.givenDatabaseName !== undefined && column.databaseName !== column.givenDatabaseName) {
        throw new UnsupportedConfigurationError(
          'namingStrategy',
          `it renames column ${column.givenDatabaseName} of table ${metadata.tableName} to ${column.databaseName}; ` +
            "the library's tables keep their column names. Use a naming strategy whose columnName() returns the " +
            'given custom name when there is one (as TypeORM\'s DefaultNamingStrategy and SnakeNamingStrategy do).',
        );
      }
    }
  }
}
