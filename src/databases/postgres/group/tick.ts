import type { EntityManager } from 'typeorm';
import { execute } from '../../../db/session';
import { sql } from '../../../db/sql';
import type { GroupElectInput, GroupElectOutcome } from '../../../election/group-tick';
import type { GroupContext } from './group-context';
import { decideCtes } from './tick-decide';
import { lockCtes } from './tick-lock';
import { releaseCtes } from './tick-release';
import { resultSelect, toTickOutcome } from './tick-result';
import { tickSql } from './tick-sql';
import { writeCtes } from './tick-write';

/*
 * The group tick on PostgreSQL: ONE statement, its CTEs in five steps, each in a file of its own:
 * give up the leases released (tick-release.ts), lock (tick-lock.ts), decide (tick-decide.ts),
 * write, open and close the terms and announce (tick-write.ts), answer (tick-result.ts). It runs
 * after the leader rows of the tick's namespaces exist (see create-rows.ts).
 */

/** Runs one tick's statement and reads its outcome. */
export async function electPostgres(gc: GroupContext, m: EntityManager, input: GroupElectInput): Promise<GroupElectOutcome> {
  const x = tickSql(gc, input);
  const [row] = await execute(gc.context, m, sql`WITH ${releaseCtes(x)}, ${lockCtes(x)}, ${decideCtes(x)}, ${writeCtes(x)}, ${resultSelect(x)}`);
  if (!row) throw new Error('gemstone-utils: the group election statement returned no row');
  return toTickOutcome(x, row);
}
