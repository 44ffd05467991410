import type { DataSourceOptions } from 'typeorm';
import type { TestDatabase } from '../../support/databases';

/**
 * DataSourceOptions of a new, empty database of the same kind: a sibling database (dropped after
 * the file) where separate DataSources share data, a new `:memory:` database otherwise.
 */
export async function freshOptions(db: TestDatabase, extra: Partial<DataSourceOptions> = {}): Promise<DataSourceOptions> {
  return db.shared ? (await db.sibling()).options(extra) : db.options(extra);
}
