import type { DataSource } from 'typeorm';
import { ElectionCandidate } from '../../entities/ElectionCandidate';
import { ElectionHistory } from '../../entities/ElectionHistory';
import { ElectionLeader } from '../../entities/ElectionLeader';
import { EntitiesNotRegisteredError } from '../errors';

const ELECTION_ENTITIES = [ElectionCandidate, ElectionLeader, ElectionHistory] as const;

/**
 * Metadata lists known to hold both entities. Keyed by `dataSource.entityMetadatas`, which
 * `initialize()` replaces: a DataSource destroyed and initialized again with other entities is
 * checked again, while every other call costs one WeakSet lookup.
 */
const registered = new WeakSet<object>();

/**
 * Throws {@link EntitiesNotRegisteredError} when an initialized DataSource lacks the election
 * entities. Without them TypeORM fails deep inside a query with a TypeError that says nothing
 * about the fix. An uninitialized DataSource is left to the call's own error.
 */
export function assertEntitiesRegistered(dataSource: DataSource): void {
  if (!dataSource.isInitialized) return;
  const metadatas = dataSource.entityMetadatas;
  if (registered.has(metadatas)) return;
  const missing = ELECTION_ENTITIES.filter((entity) => !dataSource.hasMetadata(entity));
  if (missing.length > 0) throw new EntitiesNotRegisteredError(missing.map((entity) => entity.name));
  registered.add(metadatas);
}
