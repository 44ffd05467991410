import type { DataSource } from 'typeorm';
import { ElectionCandidate } from '../../entities/ElectionCandidate';
import { ElectionHistory } from '../../entities/ElectionHistory';
import { ElectionLeader } from '../../entities/ElectionLeader';
import { ElectionRun } from '../../entities/ElectionRun';
import { EntitiesNotRegisteredError } from '../errors';

/** What an election needs: an application that lists these by hand keeps electing after an upgrade that added a table. */
const ELECTION_ENTITIES = [ElectionCandidate, ElectionLeader, ElectionHistory] as const;
/** What schedules need besides (their runs): checked only where runs are read or written. */
const RUN_ENTITIES = [...ELECTION_ENTITIES, ElectionRun] as const;

/**
 * Metadata lists known to hold both entities. Keyed by `dataSource.entityMetadatas`, which
 * `initialize()` replaces: a DataSource destroyed and initialized again with other entities is
 * checked again, while every other call costs one WeakSet lookup (a list that lacks one is
 * looked at again on each call: a few metadata lookups).
 */
const registered = { election: new WeakSet<object>(), runs: new WeakSet<object>() };

/**
 * The names of the entities `needs` lacks on an initialized DataSource; none when it is not
 * initialized (the call's own error says so then). For a caller that answers without them
 * instead of failing (the dashboard's schedules card without `ElectionRun`).
 */
export function missingEntities(dataSource: DataSource, needs: 'election' | 'runs' = 'election'): string[] {
  if (!dataSource.isInitialized) return [];
  const metadatas = dataSource.entityMetadatas;
  if (registered[needs].has(metadatas)) return [];
  const missing = (needs === 'runs' ? RUN_ENTITIES : ELECTION_ENTITIES).filter((entity) => !dataSource.hasMetadata(entity)).map((entity) => entity.name);
  if (missing.length === 0) registered[needs].add(metadatas);
  return missing;
}

/**
 * Throws {@link EntitiesNotRegisteredError} when an initialized DataSource lacks the election
 * entities. Without them TypeORM fails deep inside a query with a TypeError that says nothing
 * about the fix. An uninitialized DataSource is left to the call's own error.
 */
export function assertEntitiesRegistered(dataSource: DataSource, needs: 'election' | 'runs' = 'election'): void {
  const missing = missingEntities(dataSource, needs);
  if (missing.length > 0) throw new EntitiesNotRegisteredError(missing);
}
