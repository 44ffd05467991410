import type { DbContext } from '../../db/context';
import { raw, sql, SqlFragment } from '../../db/sql';
import type { GroupElectInput, GroupElectOutcome, GroupNsOutcome, VacateReason } from '../../election/group-tick';
import { CANDIDATE_TABLE, HISTORY_TABLE, LEADER_TABLE } from '../../election/schema';
import type { GroupParts, GroupStatements } from '../contract/group';
import { isBetterSqlite } from './driver';
import { runProgram } from './run-program';
import { runSyncStep } from './sync-step';

/**
 * The group tick on SQLite: one program (see `run-program.ts`) that commits whole or changes nothing,
 * its later statements skipped by `changes()` rather than by JavaScript between them. SQLite has
 * no row locks: the program waits for the database's write lock (its `waitMs`), so
 * `lockWaitMs` does not apply and a tick is never rerun; the leases given up are vacated by a
 * program of their own, not folded into the tick's.
 */
export const sqliteGroup: GroupParts = {
  foldsVacates: false,
  boundedLockWaits: false,
  isLockTimeout: () => false,
  statements: sqliteGroupStatements,
};

function sqliteGroupStatements(context: DbContext): GroupStatements {
  const { dialect: d } = context;
  const candidates = context.table(CANDIDATE_TABLE);
  const leaders = context.table(LEADER_TABLE);
  const history = context.table(HISTORY_TABLE);
  const dataSource = context.dataSource;

  // The namespaces are ONE parameter, a JSON array read by json_each: no table to fill row by row.
  const inInput = (nsJson: string) => sql`IN (SELECT value FROM json_each(${nsJson}))`;
  // The clock once per statement (an uncorrelated subquery is evaluated once), not once per row.
  const nowOnce = sql`(SELECT ${d.now})`;
  const nowOnceText = `(SELECT ${d.now.text})`;

  /**
   * Runs a group program as one transaction that commits whole or changes nothing: on
   * better-sqlite3 as one synchronous step (prepared statements kept per connection under `key`,
   * another connection's lock briefly waited for, as the single elect does), on sqlite3 as one
   * `exec` by `runProgram`.
   */
  function runGroupProgram(key: string, statements: readonly SqlFragment[]): Promise<Record<string, unknown>[][]> {
    if (isBetterSqlite(dataSource)) {
      return runSyncStep(dataSource, (step) => statements.map((statement, i) => step.run(`${key}:${i}`, statement)), { transaction: true });
    }
    return runProgram(dataSource, statements, { transaction: true });
  }

  async function electSqlite(input: GroupElectInput): Promise<GroupElectOutcome> {
    const me = input.candidateId;
    const nsJson = JSON.stringify(input.namespaces);
    const inNs = inInput(nsJson);
    const now = nowOnce;
    const until = sql`(SELECT ${d.nowPlus(input.expireSeconds)})`;
    const eligible = input.eligible ? 1 : 0;
    const over = (l: string) =>
      raw(`(${l}.leader_id IS NULL OR ${l}.lease_expires_at IS NULL OR (${l}.lease_expires_at <= ${nowOnceText}
  AND NOT EXISTS (SELECT 1 FROM ${history.text} h WHERE h.ns = ${l}.ns AND h.term = ${l}.term AND h.ended_at IS NULL)))`);
    const rivalOf = (l: string) =>
      sql`(SELECT MAX(c.priority) FROM ${candidates} c WHERE c.ns = ${raw(l)}.ns AND c.candidate_id <> ${me} AND c.eligible AND c.expires_at > ${now})`;
    const members = sql`WITH others AS (
  SELECT candidate_id, MAX(priority) AS p FROM ${candidates} WHERE ns ${inNs} AND candidate_id <> ${me} AND eligible AND expires_at > ${now}
  GROUP BY candidate_id
), top AS (
  SELECT MAX(p) AS p FROM (SELECT p FROM others UNION ALL SELECT ${input.priority} WHERE ${eligible} = 1)
), members AS (
  SELECT candidate_id FROM others WHERE p = (SELECT p FROM top)
  UNION ALL SELECT ${me} WHERE ${eligible} = 1 AND ${input.priority} = (SELECT p FROM top)
)`;
    const n = sql`CAST(${input.namespaces.length} AS INTEGER)`;
    // fairShare (election/group-tick.ts) of the top-priority members, less what the caller holds.
    const limit = input.balance
      ? sql`(${members} SELECT CASE WHEN NOT EXISTS (SELECT 1 FROM members WHERE candidate_id = ${me}) THEN 0
  ELSE MAX(0, ${n} / k + CASE WHEN rank < ${n} % k THEN 1 ELSE 0 END
    - (SELECT COUNT(*) FROM ${leaders} l WHERE l.ns ${inNs} AND l.leader_id = ${me} AND l.lease_expires_at > ${now})) END
  FROM (SELECT COUNT(*) AS k, COALESCE(SUM(candidate_id < ${me}), 0) AS rank FROM members))`
      : raw('-1');
    const metaColumn = raw(input.metadataJson === undefined ? '' : ', metadata');
    const metaValue = input.metadataJson === undefined ? sql`` : sql`, ${input.metadataJson}`;
    const metaSet = input.metadataJson === undefined ? sql`` : sql`, metadata = ${input.metadataJson}`;
    // Statements skipped by changes(): the statements of the program run together or not at all.
    const unless = (condition: SqlFragment) => sql`SELECT value FROM json_each(${nsJson}) WHERE ${condition}`;
    const statements = [
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
      // Heartbeat of the caller's candidate rows, then the missing ones (none when the heartbeat
      // changed every namespace's row); the changes() of that INSERT counts them.
      sql`UPDATE ${candidates} SET last_heartbeat_at = ${now}, expires_at = ${until}, priority = ${input.priority}, eligible = ${eligible}${metaSet}
WHERE ns ${inNs} AND candidate_id = ${me}`,
      sql`INSERT INTO ${candidates} (ns, candidate_id, last_heartbeat_at, expires_at, priority, eligible${metaColumn})
SELECT i.value, ${me}, ${now}, ${until}, ${input.priority}, ${eligible}${metaValue} FROM (${unless(sql`changes() < ${n}`)}) i
WHERE NOT EXISTS (SELECT 1 FROM ${candidates} c WHERE c.ns = i.value AND c.candidate_id = ${me})
${d.insertIfAbsent(['ns', 'candidate_id'])}`,
      // after, in one row: the rows as JSON, how many candidate rows the INSERT above created, the
      // namespaces where a live eligible candidate outranks the caller (looked for only when one
      // does somewhere), the members, the clock.
      sql`${members} SELECT changes() AS unregistered,
  (SELECT json_group_array(json_array(l.ns, l.leader_id, l.term, CASE WHEN l.leader_id IS NOT NULL AND l.lease_expires_at > ${now} THEN 1 ELSE 0 END))
    FROM ${leaders} l WHERE l.ns ${inNs}) AS rows,
  (SELECT json_group_array(DISTINCT c.ns) FROM ${candidates} c
    WHERE c.ns IN (SELECT value FROM json_each(${nsJson}) WHERE (SELECT MAX(p) FROM others) > ${input.priority})
      AND c.candidate_id <> ${me} AND c.eligible AND c.expires_at > ${now} AND c.priority > ${input.priority}) AS outranked,
  (SELECT json_group_array(candidate_id) FROM members) AS members,
  ${d.now} AS db_now`,
    ];
    const variant = `${input.balance ? 'b' : ''}${input.metadataJson === undefined ? '' : 'm'}`;
    const results = await runGroupProgram(`group:elect:${variant}`, statements);
    const held = JSON.parse(String(results[0]?.[0]?.held ?? '{}')) as Record<string, number>;
    const last = results[statements.length - 1]?.[0] ?? {};
    const unregistered = Number(last.unregistered ?? 0);
    const after = new Map<string, [string, string | null, number, number]>();
    for (const r of JSON.parse(String(last.rows ?? '[]')) as Array<[string, string | null, number, number]>) after.set(r[0], r);
    const outranked = new Set(JSON.parse(String(last.outranked ?? '[]')) as string[]);
    const memberIds = (JSON.parse(String(last.members ?? '[]')) as unknown[]).map(String).sort();
    const databaseNow = d.parseInstant(last.db_now) as Date;
    const outcomes = input.namespaces.map((ns): GroupNsOutcome => {
      const r = after.get(ns);
      if (!r) return { ns, leaderId: null, term: null, isLeader: false, acquired: false, handOver: false };
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

  async function vacateSqlite(namespaces: readonly string[], me: string, reason: VacateReason, unregister: boolean): Promise<string[]> {
    const inNs = inInput(JSON.stringify(namespaces));
    const statements = [
      sql`SELECT ns FROM ${leaders} WHERE ns ${inNs} AND leader_id = ${me} AND lease_expires_at > ${nowOnce}`,
      sql`UPDATE ${history} SET
  end_reason = (SELECT CASE WHEN l.lease_expires_at > ${nowOnce} THEN ${reason} ELSE ${'expired'} END FROM ${leaders} l WHERE l.ns = ${history}.ns),
  ended_at = (SELECT CASE WHEN l.lease_expires_at > ${nowOnce} THEN ${nowOnce} ELSE l.lease_expires_at END FROM ${leaders} l WHERE l.ns = ${history}.ns)
WHERE ended_at IS NULL AND (ns, term) IN (SELECT l.ns, l.term FROM ${leaders} l WHERE l.ns ${inNs} AND l.leader_id = ${me})`,
      sql`UPDATE ${leaders} SET leader_id = NULL, lease_expires_at = NULL, updated_at = ${nowOnce} WHERE ns ${inNs} AND leader_id = ${me}`,
      ...(unregister ? [sql`DELETE FROM ${candidates} WHERE ns ${inNs} AND candidate_id = ${me}`] : []),
    ];
    const results = await runGroupProgram(`group:vacate:${unregister ? 'u' : ''}`, statements);
    return (results[0] ?? []).map((r) => String(r.ns));
  }

  return {
    elect: (input) => electSqlite(input),
    vacate: vacateSqlite,
    read: async (statement) => (await runProgram(dataSource, [statement], { transaction: false }))[0] ?? [],
  };
}
