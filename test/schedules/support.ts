/**
 * What the schedule storage tests share: the runs store of a DataSource (an internal module, from
 * dist like the other internal tests), the database clock, and a leader made by electing.
 */
import type { DataSource } from 'typeorm';
import { ElectionService } from 'gemstone-utils';
import type { RunsStore } from '../../dist/src/schedules/runs-store';
import { runsStoreOf } from '../../dist/src/schedules/store';
import { uuid } from '../support/databases';

export { runsStoreOf };
export type { RunsStore };

/** The database clock, as the store reads it (epoch ms). */
export async function databaseNow(ds: DataSource): Promise<Date> {
  return (await runsStoreOf(ds).lookBack('clock', 'clock')).databaseNow;
}

/** A new leader of `ns`: its candidate id and term. */
export async function leaderOf(service: ElectionService, ns: string): Promise<{ ns: string; candidateId: string; term: number }> {
  const candidateId = uuid();
  const outcome = await service.electOutcome(candidateId, { ns });
  if (!outcome.isLeader) throw new Error(`precondition: ${candidateId} did not become leader of ${ns}`);
  return { ns, candidateId, term: outcome.term };
}

/** A past slot by the database clock: `back` ms before its now, whole milliseconds. */
export async function pastSlot(ds: DataSource, back = 60_000): Promise<Date> {
  return new Date((await databaseNow(ds)).getTime() - back);
}
