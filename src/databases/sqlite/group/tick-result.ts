import { sql, SqlFragment } from '../../../db/sql';
import { GroupElectOutcome, GroupNsOutcome, unknownOutcome } from '../../../election/group-tick';
import type { TickSql } from './tick-sql';

/*
 * The group tick's answer: the program's last statement reads, in one row, the rows as JSON, how
 * many candidate rows the heartbeat's INSERT created, the namespaces where a live eligible
 * candidate outranks the caller (looked for only when one does somewhere), the members and the
 * clock; with what the first statement read (the leases held before), that is the outcome.
 */

export function answerStatement(x: TickSql): SqlFragment {
  const { t: { d, leaders, candidates }, me, inNs, now, nsJson, input, members } = x;
  return sql`${members} SELECT changes() AS unregistered,
  (SELECT json_group_array(json_array(l.ns, l.leader_id, l.term, CASE WHEN l.leader_id IS NOT NULL AND l.lease_expires_at > ${now} THEN 1 ELSE 0 END))
    FROM ${leaders} l WHERE l.ns ${inNs}) AS rows,
  (SELECT json_group_array(DISTINCT c.ns) FROM ${candidates} c
    WHERE c.ns IN (SELECT value FROM json_each(${nsJson}) WHERE (SELECT MAX(p) FROM others) > ${input.priority})
      AND c.candidate_id <> ${me} AND c.eligible AND c.expires_at > ${now} AND c.priority > ${input.priority}) AS outranked,
  (SELECT json_group_array(candidate_id) FROM members) AS members,
  ${d.now} AS db_now`;
}

/** The tick's outcome from the rows of the first statement (`held`) and of {@link answerStatement} (`last`). */
export function toTickOutcome(x: TickSql, first: Record<string, unknown> | undefined, last: Record<string, unknown>): GroupElectOutcome {
  const { t: { d }, input, me } = x;
  const held = JSON.parse(String(first?.held ?? '{}')) as Record<string, number>;
  const unregistered = Number(last.unregistered ?? 0);
  const after = new Map<string, [string, string | null, number, number]>();
  for (const r of JSON.parse(String(last.rows ?? '[]')) as Array<[string, string | null, number, number]>) after.set(r[0], r);
  const outranked = new Set(JSON.parse(String(last.outranked ?? '[]')) as string[]);
  const memberIds = (JSON.parse(String(last.members ?? '[]')) as unknown[]).map(String).sort();
  const databaseNow = d.parseInstant(last.db_now) as Date;
  const outcomes = input.namespaces.map((ns): GroupNsOutcome => {
    const r = after.get(ns);
    if (!r) return unknownOutcome(ns);
    const [, leaderId, term, liveFlag] = r;
    const live = leaderId !== null && liveFlag === 1;
    const isLeader = live && leaderId === me;
    return {
      ns,
      leaderId: live ? leaderId : null,
      term: Number(term),
      isLeader,
      acquired: isLeader && (Object.prototype.hasOwnProperty.call(held, ns) ? Number(held[ns]) !== Number(term) : true),
      handOver: isLeader && (!input.eligible || outranked.has(ns)),
    };
  });
  return { outcomes, members: memberIds, unregistered, databaseNow };
}
