import type { DataSource } from 'typeorm';
import type { DbContext } from '../db/context';
import { sqlBool } from '../db/dialect';
import { runProgram } from '../db/sqlite-atomic';
import { raw, sql, SqlFragment } from '../db/sql';
import { createHistoryStatements } from './history';
import { CANDIDATE_TABLE, HISTORY_TABLE, LEADER_TABLE } from './schema';
import { decide, type ElectionStore, type LeaderRow, type Standing } from './store';
import { CandidateFields, DEFAULT_ELIGIBLE, DEFAULT_PRIORITY } from './validate';

/**
 * The election's calls without `session` on SQLite, each ONE program run by `runProgram` (see
 * `db/sqlite-atomic.ts`): queued at once on the sqlite3 driver, so every decision is made by the
 * SQL (a conditional UPDATE), and the rows read back tell the caller what happened. Each
 * statement is correct on its own too. Same protocol as the general path in `service.ts`.
 */
export function createSqlitePrograms(context: DbContext, dataSource: DataSource, waitMs: () => number | undefined, store: ElectionStore) {
  const { dialect: d } = context;
  const candidates = context.table(CANDIDATE_TABLE);
  const leaders = context.table(LEADER_TABLE);
  const history = context.table(HISTORY_TABLE);
  // The term a resign/unregister ends, decided by the clock of that one statement (stable within it on SQLite).
  const { closeTerm } = createHistoryStatements(context);
  const selectLeader = sql`SELECT l.ns, l.leader_id, l.term, CASE WHEN l.leader_id IS NOT NULL AND l.lease_expires_at > ${d.now} THEN 1 ELSE 0 END AS live,
  l.lease_expires_at, l.updated_at, ${d.now} AS db_now, (SELECT c.metadata FROM ${candidates} c WHERE c.ns = l.ns AND c.candidate_id = l.leader_id) AS metadata
FROM ${leaders} l WHERE l.ns = `;

  const readLeader = (ns: string) => sql`${selectLeader}${ns}`;
  const vacateIfHeld = (ns: string, id: string) =>
    sql`UPDATE ${leaders} SET leader_id = NULL, lease_expires_at = NULL, updated_at = ${d.now} WHERE ns = ${ns} AND leader_id = ${id}`;

  function toRow(rows: Record<string, unknown>[] | undefined): LeaderRow | undefined {
    const row = rows?.[0];
    return row ? store.toRow(row) : undefined;
  }


  const write = (statements: SqlFragment[]) => runProgram(dataSource, statements, { transaction: true, waitMs: waitMs() });
  const read = (statement: SqlFragment) => runProgram(dataSource, [statement], { transaction: false, waitMs: waitMs() }).then((r) => r[0] ?? []);

  /** The caller's own candidate row, read inside the program. */
  const mine = (ns: string, id: string, column: 'priority' | 'eligible') =>
    sql`(SELECT c.${raw(column)} FROM ${candidates} c WHERE c.ns = ${ns} AND c.candidate_id = ${id})`;
  /** The highest priority of the other live eligible candidates (NULL when there is none). */
  const rivalPriority = (ns: string, id: string) =>
    sql`(SELECT MAX(c.priority) FROM ${candidates} c WHERE c.ns = ${ns} AND c.candidate_id <> ${id} AND c.eligible AND c.expires_at > ${d.now})`;

  // A lease is over (it may be taken) when vacant, or expired AND its term's history row is no
  // longer open. The program's first statements close an expired term, so a lease that expires
  // between two of its statements (the clock moves between statements) stays the holder's until
  // the next elect instead of changing hands with its history row left open.
  const over = sql`(${leaders}.leader_id IS NULL OR ${leaders}.lease_expires_at IS NULL OR (${leaders}.lease_expires_at <= ${d.now}
  AND NOT EXISTS (SELECT 1 FROM ${history} h WHERE h.ns = ${leaders}.ns AND h.term = ${leaders}.term AND h.ended_at IS NULL)))`;

  return {
    /**
     * elect: create the leader row if missing, read it and the caller's standing, close its
     * term in the history if its lease expired, then ONE conditional UPDATE applies the rule of
     * `decide` (store.ts): the caller keeps its own lease while it is not over (see `over`; the
     * term stays), or takes one that is over (term + 1: SET expressions see the row before the
     * UPDATE) only if the caller is eligible and no live eligible candidate has a strictly
     * higher priority; open the new term's history row if the caller acquired, heartbeat, read
     * the row again. Acquired = the caller leads under another term than the one it found. A
     * renewal writes no history: the open row of its term exists.
     */
    async elect(ns: string, id: string, expire: number, fields: CandidateFields = {}) {
      const eligible = sql`COALESCE(${fields.eligible === undefined ? null : fields.eligible ? 1 : 0}, ${mine(ns, id, 'eligible')}, ${DEFAULT_ELIGIBLE ? 1 : 0})`;
      const priority = sql`COALESCE(${fields.priority ?? null}, ${mine(ns, id, 'priority')}, ${DEFAULT_PRIORITY})`;
      const [, before, standingRows, , , , , after] = await write([
        sql`INSERT INTO ${leaders} (ns, leader_id, lease_expires_at, updated_at, term) VALUES (${ns}, NULL, NULL, ${d.now}, 0)
${d.insertIfAbsent(['ns'])}`,
        readLeader(ns),
        sql`SELECT ${mine(ns, id, 'priority')} AS my_priority, ${mine(ns, id, 'eligible')} AS my_eligible, ${rivalPriority(ns, id)} AS rival_priority`,
        sql`UPDATE ${history} SET ended_at = (SELECT l.lease_expires_at FROM ${leaders} l WHERE l.ns = ${ns}), end_reason = ${'expired'}
WHERE ns = ${ns} AND ended_at IS NULL
  AND term = (SELECT l.term FROM ${leaders} l WHERE l.ns = ${ns} AND l.leader_id IS NOT NULL AND l.lease_expires_at <= ${d.now})`,
        sql`UPDATE ${leaders} SET
  term = CASE WHEN ${over} THEN term + 1 ELSE term END,
  leader_id = ${id}, lease_expires_at = ${d.nowPlus(expire)}, updated_at = ${d.now}
WHERE ns = ${ns} AND ((leader_id = ${id} AND NOT ${over})
  OR (${over} AND ${eligible} <> 0 AND COALESCE(${rivalPriority(ns, id)} > ${priority}, 0) = 0))`,
        // Only for a lease the caller holds now: one it did not take (its own lapsed lease, deferred) stays closed.
        sql`INSERT INTO ${history} (ns, term, leader_id, acquired_at, ended_at, end_reason)
SELECT l.ns, l.term, l.leader_id, ${d.now}, NULL, NULL FROM ${leaders} l
WHERE l.ns = ${ns} AND l.leader_id = ${id} AND l.lease_expires_at > ${d.now}
  AND NOT EXISTS (SELECT 1 FROM ${history} h WHERE h.ns = l.ns AND h.term = l.term AND h.ended_at IS NULL)
${d.upsert(['ns', 'term'], ['leader_id', 'acquired_at', 'ended_at', 'end_reason'])}`,
        store.candidateUpsert(ns, id, expire, fields),
        readLeader(ns),
      ]);
      const found = toRow(before);
      const row = toRow(after);
      if (!row) throw new Error(`gemstone-utils: leader row of ${JSON.stringify(ns)} vanished inside its transaction`);
      const raw = standingRows?.[0] ?? {};
      const standing: Standing = {
        registered: raw.my_priority !== null && raw.my_priority !== undefined,
        storedPriority: raw.my_priority === null || raw.my_priority === undefined ? null : Number(raw.my_priority),
        storedEligible: raw.my_eligible === null || raw.my_eligible === undefined ? null : sqlBool(raw.my_eligible),
        rivalPriority: raw.rival_priority === null || raw.rival_priority === undefined ? null : Number(raw.rival_priority),
      };
      // The UPDATE decided; `decide` on the same values (read in the same transaction) says whether to hand over.
      const { handOver } = decide(found ?? { leaderId: null, live: false }, id, standing, fields);
      const isLeader = row.live && row.leaderId === id;
      return {
        ns,
        leaderId: row.live ? row.leaderId : null,
        term: row.term,
        isLeader,
        acquired: isLeader && row.term !== found?.term,
        handOver: isLeader && handOver,
        wasRegistered: standing.registered,
        databaseNow: row.now,
      };
    },

    async touch(ns: string, id: string, expire: number, fields: CandidateFields = {}): Promise<void> {
      await write([store.candidateUpsert(ns, id, expire, fields)]);
    },

    /** resign (or hand-over): true only if the caller held an unexpired lease; a lapsed one naming it is vacated too. */
    async resign(ns: string, id: string, reason: 'resigned' | 'handed-over'): Promise<boolean> {
      const [before] = await write([readLeader(ns), closeTerm(ns, reason, undefined, id), vacateIfHeld(ns, id)]);
      const row = toRow(before);
      return row?.leaderId === id && row.live;
    },

    async unregister(ns: string, id: string): Promise<void> {
      await write([
        closeTerm(ns, 'unregistered', undefined, id),
        vacateIfHeld(ns, id),
        sql`DELETE FROM ${candidates} WHERE ns = ${ns} AND candidate_id = ${id}`,
      ]);
    },

    /** One read-only statement outside any transaction on the shared connection. */
    readRows(statement: SqlFragment): Promise<Record<string, unknown>[]> {
      return read(statement);
    },

    async readLeader(ns: string): Promise<LeaderRow | undefined> {
      return toRow(await read(readLeader(ns)));
    },

    async isLeader(ns: string, id: string): Promise<boolean> {
      const rows = await read(sql`SELECT 1 AS yes FROM ${leaders} WHERE ns = ${ns} AND leader_id = ${id} AND lease_expires_at > ${d.now}`);
      return rows.length > 0;
    },

    async activeCandidates(ns: string): Promise<string[]> {
      const rows = await read(sql`SELECT candidate_id FROM ${candidates} WHERE ns = ${ns} AND expires_at > ${d.now}`);
      // Sorted here, not by ORDER BY: collations differ between databases.
      return rows.map((row) => String(row.candidate_id)).sort();
    },

    async candidateRows(ns: string) {
      return store.toCandidateRows(await read(store.candidateRowsStatement(ns)));
    },
  };
}

export type SqlitePrograms = ReturnType<typeof createSqlitePrograms>;
