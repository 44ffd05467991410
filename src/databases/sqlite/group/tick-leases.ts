import { sql, SqlFragment } from '../../../db/sql';
import type { TickSql } from './tick-sql';

/*
 * The group tick's statements on the leader rows and the history, in program order, each
 * decided by the SQL (the program runs as one step: no JavaScript between its statements):
 * what the caller held before, its renewals, the rows not created yet, the lapsed terms closed,
 * the acquisitions (capped by the fair share), the new terms opened, and the lapsed terms closed
 * above but not taken over opened again.
 */

export function leaseStatements(x: TickSql): SqlFragment[] {
  const { t: { d, leaders, history }, me, inNs, now, until, eligible, n, input, over, rivalOf, limit, unless } = x;
  return [
    // before: the leases the caller holds (the others cannot have been renewed), as ONE JSON
    // value: one row to hand to JavaScript instead of one per namespace.
    sql`SELECT json_group_object(l.ns, l.term) AS held FROM ${leaders} l WHERE l.ns ${inNs} AND l.leader_id = ${me} AND l.lease_expires_at > ${now}`,
    // Renewals first (the fair share counts what is held), each decided by the clock of this
    // statement: a lease that has run out is not renewed but taken over below, as a new term.
    sql`UPDATE ${leaders} SET lease_expires_at = ${until}, updated_at = ${now}
WHERE ns ${inNs} AND leader_id = ${me} AND lease_expires_at > ${now}`,
    // The leader rows the group has not created yet (vacant), unless the renewal just above
    // renewed every namespace (changes()): no row can be missing then.
    sql`INSERT INTO ${leaders} (ns, leader_id, lease_expires_at, updated_at, term)
SELECT i.value, NULL, NULL, ${now}, 0 FROM (${unless(sql`changes() < ${n}`)}) i
WHERE NOT EXISTS (SELECT 1 FROM ${leaders} l WHERE l.ns = i.value)
${d.insertIfAbsent(['ns'])}`,
    // Lapsed terms end at their lease's end (before anything changes hands).
    sql`UPDATE ${history} SET ended_at = (SELECT l.lease_expires_at FROM ${leaders} l WHERE l.ns = ${history}.ns), end_reason = ${'expired'}
WHERE ended_at IS NULL AND (ns, term) IN (SELECT l.ns, l.term FROM ${leaders} l
  WHERE l.ns ${inNs} AND l.leader_id IS NOT NULL AND l.lease_expires_at <= ${now})`,
    sql`UPDATE ${leaders} SET term = term + 1, leader_id = ${me}, lease_expires_at = ${until}, updated_at = ${now}
WHERE ns IN (SELECT l.ns FROM ${leaders} l WHERE l.ns ${inNs} AND ${over('l')} AND ${eligible} = 1
  AND COALESCE(${rivalOf('l')} > ${input.priority}, 0) = 0 ORDER BY l.ns LIMIT ${limit})`,
    // Only after acquisitions: changes() is the count of the UPDATE just before (a renewal opens no
    // term). Dated by that UPDATE's write (updated_at), not this statement's later clock.
    sql`INSERT INTO ${history} (ns, term, leader_id, acquired_at, ended_at, end_reason)
SELECT l.ns, l.term, l.leader_id, l.updated_at, NULL, NULL FROM ${leaders} l
WHERE l.ns IN (${unless(sql`changes() > 0`)}) AND l.leader_id = ${me} AND l.lease_expires_at > ${now}
  AND NOT EXISTS (SELECT 1 FROM ${history} h WHERE h.ns = l.ns AND h.term = l.term AND h.ended_at IS NULL)
${d.upsert(['ns', 'term'], ['leader_id', 'acquired_at', 'ended_at', 'end_reason'])}`,
    // The lapsed terms closed above that were not taken over are open again: D1 (ineligible), D2
    // (outranked) and a share cap leave a lapsed term open until someone takes the lease (T2
    // closes it then), as every other path does. Its leader row still names its holder and term.
    // The IN list is not correlated, so its (ns, term) pairs are looked up by the history
    // table's key; correlated (naming the history row), it was evaluated for every closed term
    // of every namespace in the table: a tick's cost grew with the whole history.
    sql`UPDATE ${history} SET ended_at = NULL, end_reason = NULL
WHERE (ns, term) IN (SELECT l.ns, l.term FROM ${leaders} l WHERE l.ns ${inNs} AND l.leader_id IS NOT NULL AND l.lease_expires_at <= ${now})
  AND ended_at IS NOT NULL AND end_reason = ${'expired'}
  AND leader_id = (SELECT l.leader_id FROM ${leaders} l WHERE l.ns = ${history}.ns)
  AND ended_at = (SELECT l.lease_expires_at FROM ${leaders} l WHERE l.ns = ${history}.ns)`,
  ];
}
