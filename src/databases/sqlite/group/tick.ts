import type { GroupElectInput, GroupElectOutcome } from '../../../election/group-tick';
import { GroupContext, runGroupProgram } from './group-context';
import { heartbeatStatements } from './tick-heartbeat';
import { leaseStatements } from './tick-leases';
import { answerStatement, toTickOutcome } from './tick-result';
import { tickSql } from './tick-sql';

/*
 * The group tick on SQLite: ONE program that commits whole or changes nothing, its later
 * statements skipped by changes() rather than by JavaScript between them: the leases
 * (tick-leases.ts), the heartbeat (tick-heartbeat.ts), the answer (tick-result.ts), built from
 * the tick's shared pieces (tick-sql.ts).
 */

export async function electSqlite(gc: GroupContext, input: GroupElectInput): Promise<GroupElectOutcome> {
  const x = tickSql(gc, input);
  const statements = [...leaseStatements(x), ...heartbeatStatements(x), answerStatement(x)];
  const variant = `${input.balance ? 'b' : ''}${input.metadataJson === undefined ? '' : 'm'}`;
  const results = await runGroupProgram(gc, `group:elect:${variant}`, statements);
  return toTickOutcome(x, results[0]?.[0], results[statements.length - 1]?.[0] ?? {});
}
