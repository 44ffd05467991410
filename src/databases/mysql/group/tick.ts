import type { EntityManager } from 'typeorm';
import { sql } from '../../../db/sql';
import { GROUP_BATCH_SIZE, GroupElectInput, GroupElectOutcome } from '../../../election/group-tick';
import { GroupContext, run } from './group-context';
import { chunks } from './lists';
import { readCandidates } from './tick-candidates';
import { decideTick } from './tick-decide';
import { createRows, lockRows } from './tick-lock';
import { releaseLeases } from './tick-release';
import { writeTick } from './tick-write';

/*
 * The group tick on MySQL/MariaDB, in one transaction: a constant number of statements per batch
 * of GROUP_BATCH_SIZE namespaces, in five steps, each in a file of its own: give up the leases
 * released (tick-release.ts), create and lock the leader rows (tick-lock.ts), read the candidates
 * (tick-candidates.ts), decide in JavaScript (tick-decide.ts), write (tick-write.ts).
 */

export async function electMysql(gc: GroupContext, m: EntityManager, input: GroupElectInput, known: Set<string>): Promise<GroupElectOutcome> {
  const { d } = gc.t;
  const batches = chunks(input.namespaces, GROUP_BATCH_SIZE);
  const { released, releaseSkipped } = await releaseLeases(gc, m, input);
  await createRows(gc, m, batches, known);
  const rows = await lockRows(gc, m, input, batches, known);
  const candidates = await readCandidates(gc, m, input, batches);
  const decision = decideTick(input, rows, candidates, known);
  await writeTick(gc, m, input, batches, decision);
  let databaseNow = rows.databaseNow;
  if (!databaseNow) {
    const [clock] = await run(gc, m, sql`SELECT ${d.instant(d.now.text)} AS db_now`);
    databaseNow = d.parseInstant(clock?.db_now) as Date;
  }
  return { outcomes: decision.outcomes, members: candidates.members, unregistered: input.namespaces.length - candidates.registered.size, databaseNow, released, releaseSkipped };
}
