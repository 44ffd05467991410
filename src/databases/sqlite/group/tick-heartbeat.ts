import { sql, SqlFragment } from '../../../db/sql';
import type { TickSql } from './tick-sql';

/*
 * The group tick's heartbeat: the caller's candidate row in every namespace of the tick updated,
 * then the missing ones inserted (the answer counts those by changes(): the namespaces where the
 * caller was not registered).
 */

export function heartbeatStatements(x: TickSql): SqlFragment[] {
  const { t: { d, candidates }, me, inNs, now, until, eligible, n, input, metaColumn, metaValue, metaSet, unless } = x;
  return [
    // Heartbeat of the caller's candidate rows, then the missing ones (none when the heartbeat
    // changed every namespace's row); the changes() of that INSERT counts them.
    sql`UPDATE ${candidates} SET last_heartbeat_at = ${now}, expires_at = ${until}, priority = ${input.priority}, eligible = ${eligible}${metaSet}
WHERE ns ${inNs} AND candidate_id = ${me}`,
    sql`INSERT INTO ${candidates} (ns, candidate_id, last_heartbeat_at, expires_at, priority, eligible${metaColumn})
SELECT i.value, ${me}, ${now}, ${until}, ${input.priority}, ${eligible}${metaValue} FROM (${unless(sql`changes() < ${n}`)}) i
WHERE NOT EXISTS (SELECT 1 FROM ${candidates} c WHERE c.ns = i.value AND c.candidate_id = ${me})
${d.insertIfAbsent(['ns', 'candidate_id'])}`,
  ];
}
