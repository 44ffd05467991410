import { sql, SqlFragment } from '../../../db/sql';
import { decide } from '../../../election/decision';
import type { ElectDecision } from '../../../election/rows';
import { toStanding } from '../../../election/statements/standing';
import { CandidateFields, DEFAULT_ELIGIBLE, DEFAULT_PRIORITY } from '../../../election/validate';
import { mine, ProgramContext, readLeader, rivalPriority, toRow, write } from './program-context';

/*
 * elect on sqlite3, as ONE program sent as one `exec`: no decision can be made in JavaScript
 * between its statements, so every decision is made by the SQL (conditional UPDATEs), and the rows
 * read back tell the caller what happened. Create the leader row if missing, read it and the
 * caller's standing; then, each judged by the database clock of the statement that writes:
 * - renew the caller's lease if it is still unexpired (the term stays, no history written);
 * - if the caller may take a lease that is over (eligible, and no live eligible candidate has a
 *   strictly higher priority — the rule of `decide` in election/decision.ts), close the term of a
 *   lapsed one `expired` at its lease's end, then take it (term + 1; SET expressions see the row
 *   before the UPDATE: vacant, or lapsed with its term closed just before) and open the new
 *   term's history row, dated by the acquiring statement;
 * - heartbeat, and read the row again. Acquired = the caller leads under another term than the
 *   one it found.
 */

/**
 * Whether the lease of the leader row is over (it may be taken): vacant, or expired AND its
 * term's history row is no longer open. The statement before the takeover closes the term of a
 * lease that has run out by ITS clock, and a lease that runs out between the two (the clock moves
 * between statements) is not taken with its history row left open.
 */
function over({ t: { d, leaders, history } }: ProgramContext): SqlFragment {
  return sql`(${leaders}.leader_id IS NULL OR ${leaders}.lease_expires_at IS NULL OR (${leaders}.lease_expires_at <= ${d.now}
  AND NOT EXISTS (SELECT 1 FROM ${history} h WHERE h.ns = ${leaders}.ns AND h.term = ${leaders}.term AND h.ended_at IS NULL)))`;
}

/** The statements of the program, in order (see the file's comment); the rows of 1, 2 and 8 are read back. */
function electStatements(pc: ProgramContext, ns: string, id: string, expire: number, fields: CandidateFields): SqlFragment[] {
  const { d, leaders, history } = pc.t;
  const eligible = sql`COALESCE(${fields.eligible === undefined ? null : fields.eligible ? 1 : 0}, ${mine(pc, ns, id, 'eligible')}, ${DEFAULT_ELIGIBLE ? 1 : 0})`;
  const priority = sql`COALESCE(${fields.priority ?? null}, ${mine(pc, ns, id, 'priority')}, ${DEFAULT_PRIORITY})`;
  const mayTake = sql`${eligible} <> 0 AND COALESCE(${rivalPriority(pc, ns, id)} > ${priority}, 0) = 0`;
  return [
    sql`INSERT INTO ${leaders} (ns, leader_id, lease_expires_at, updated_at, term) VALUES (${ns}, NULL, NULL, ${d.now}, 0)
${d.insertIfAbsent(['ns'])}`,
    readLeader(pc, ns),
    sql`SELECT ${mine(pc, ns, id, 'priority')} AS my_priority, ${mine(pc, ns, id, 'eligible')} AS my_eligible, ${rivalPriority(pc, ns, id)} AS rival_priority`,
    sql`UPDATE ${leaders} SET lease_expires_at = ${d.nowPlus(expire)}, updated_at = ${d.now}
WHERE ns = ${ns} AND leader_id = ${id} AND lease_expires_at > ${d.now}`,
    sql`UPDATE ${history} SET ended_at = (SELECT l.lease_expires_at FROM ${leaders} l WHERE l.ns = ${ns}), end_reason = ${'expired'}
WHERE ns = ${ns} AND ended_at IS NULL AND ${mayTake}
  AND term = (SELECT l.term FROM ${leaders} l WHERE l.ns = ${ns} AND l.leader_id IS NOT NULL AND l.lease_expires_at <= ${d.now})`,
    sql`UPDATE ${leaders} SET term = term + 1, leader_id = ${id}, lease_expires_at = ${d.nowPlus(expire)}, updated_at = ${d.now}
WHERE ns = ${ns} AND ${over(pc)} AND ${mayTake}`,
    // Only right after a takeover (changes() counts the rows of the UPDATE just before).
    sql`INSERT INTO ${history} (ns, term, leader_id, acquired_at, ended_at, end_reason)
SELECT l.ns, l.term, l.leader_id, l.updated_at, NULL, NULL FROM ${leaders} l WHERE l.ns = ${ns} AND changes() > 0
${d.upsert(['ns', 'term'], ['leader_id', 'acquired_at', 'ended_at', 'end_reason'])}`,
    pc.store.candidateUpsert(ns, id, expire, fields),
    readLeader(pc, ns),
  ];
}

/** Runs the program and reads its answer from the rows read before and after the writes. */
export async function electProgram(pc: ProgramContext, ns: string, id: string, expire: number, fields: CandidateFields): Promise<ElectDecision> {
  const [, before, standingRows, , , , , , after] = await write(pc, electStatements(pc, ns, id, expire, fields));
  const found = toRow(pc, before);
  const row = toRow(pc, after);
  if (!row) throw new Error(`gemstone-utils: leader row of ${JSON.stringify(ns)} vanished inside its transaction`);
  const standing = toStanding(standingRows?.[0] ?? {});
  const isLeader = row.live && row.leaderId === id;
  const acquired = isLeader && row.term !== found?.term;
  return {
    leaderId: row.live ? row.leaderId : null,
    term: row.term,
    isLeader,
    acquired,
    // A renewing leader hands over when it is not eligible or outranked (the rule of `decide`).
    handOver: isLeader && !acquired && decide({ leaderId: id, live: true }, id, standing, fields).handOver,
    wasRegistered: standing.registered,
    // The clock of the read before the writes: the lease was judged after it. The read after
    // them comes later than the decision, and a history checker dating the call by it would
    // place the renewal before the call's own clock (the chaos test's lin check did).
    databaseNow: found?.now ?? row.now,
  };
}
