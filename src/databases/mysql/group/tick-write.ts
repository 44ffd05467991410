import type { EntityManager } from 'typeorm';
import { raw, sql } from '../../../db/sql';
import { GROUP_BATCH_SIZE, GroupElectInput } from '../../../election/group-tick';
import { padded } from '../session';
import { GroupContext, run } from './group-context';
import { chunks, commaList, list } from './lists';
import type { TickDecision } from './tick-decide';

/*
 * Step 4 of the group tick: the writes, batch by batch. The leases taken: their lapsed terms
 * closed `expired` at their lease's end, the rows granted (term + 1), the new terms opened; the
 * leases renewed (the term stays); then the caller's heartbeat in every namespace of the tick.
 */

export async function writeTick(gc: GroupContext, m: EntityManager, input: GroupElectInput, batches: readonly string[][], { take, renew }: TickDecision): Promise<void> {
  const { d, leaders, history } = gc.t;
  const me = input.candidateId;
  const until = d.nowPlus(input.expireSeconds);
  for (const batch of chunks(take, GROUP_BATCH_SIZE)) {
    const lapsed = batch.filter((r) => r.leaderId !== null).map((r) => r.ns);
    if (lapsed.length > 0) {
      await run(
        gc,
        m,
        sql`UPDATE ${history} h JOIN ${leaders} l ON l.ns = h.ns AND l.term = h.term
SET h.ended_at = l.lease_expires_at, h.end_reason = ${'expired'}
WHERE h.ns IN ${list(lapsed)} AND h.ended_at IS NULL AND l.leader_id IS NOT NULL`,
      );
    }
    const names = batch.map((r) => r.ns);
    await run(gc, m, sql`UPDATE ${leaders} SET leader_id = ${me}, term = term + 1, lease_expires_at = ${until}, updated_at = ${d.now} WHERE ns IN ${list(names)}`);
    await run(
      gc,
      m,
      sql`INSERT INTO ${history} (ns, term, leader_id, acquired_at, ended_at, end_reason)
SELECT l.ns, l.term, l.leader_id, l.updated_at, NULL, NULL FROM ${leaders} l WHERE l.ns IN ${list(names)}
${d.upsert(['ns', 'term'], ['leader_id', 'acquired_at', 'ended_at', 'end_reason'])}`,
    );
  }
  for (const batch of chunks(renew, GROUP_BATCH_SIZE)) {
    await run(gc, m, sql`UPDATE ${leaders} SET lease_expires_at = ${until}, updated_at = ${d.now} WHERE ns IN ${list(batch)} AND leader_id = ${me}`);
  }
  await heartbeat(gc, m, input, batches);
}

/** The caller's candidate rows in every namespace of the tick, upserted (heartbeat and options). */
async function heartbeat(gc: GroupContext, m: EntityManager, input: GroupElectInput, batches: readonly string[][]): Promise<void> {
  const { d, candidates } = gc.t;
  const me = input.candidateId;
  const until = d.nowPlus(input.expireSeconds);
  const metaColumn = raw(input.metadataJson === undefined ? '' : ', metadata');
  const updated = ['last_heartbeat_at', 'expires_at', 'priority', 'eligible', ...(input.metadataJson === undefined ? [] : ['metadata'])];
  for (const batch of batches) {
    const row = (ns: string) =>
      input.metadataJson === undefined
        ? sql`(${ns}, ${me}, ${d.now}, ${until}, ${input.priority}, ${d.bool(input.eligible)})`
        : sql`(${ns}, ${me}, ${d.now}, ${until}, ${input.priority}, ${d.bool(input.eligible)}, ${input.metadataJson})`;
    const values = commaList(padded(batch).map(row));
    await run(
      gc,
      m,
      sql`INSERT INTO ${candidates} (ns, candidate_id, last_heartbeat_at, expires_at, priority, eligible${metaColumn}) VALUES ${values}
${d.upsert(['ns', 'candidate_id'], updated)}`,
    );
  }
}
