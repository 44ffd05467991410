import type { DataSource } from 'typeorm';
import type { DbContext } from '../db/context';
import { sqlBool } from '../db/dialect';
import { compile, CompiledStatement, isBetterSqlite, runProgram, runSyncStep, Slot, SyncStep } from '../db/sqlite-atomic';
import { raw, sql, SqlFragment } from '../db/sql';
import { createHistoryStatements } from './history';
import { CANDIDATE_TABLE, HISTORY_TABLE, LEADER_TABLE } from './schema';
import { decide, type ElectDecision, type ElectionStore, type LeaderRow, type Standing } from './store';
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
  const { closeTerm, openTerm } = createHistoryStatements(context);
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


  const syncWrite = (wait: number | undefined) => ({ transaction: true, waitMs: wait });
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

  /** A standing as read by the columns `my_priority`, `my_eligible`, `rival_priority`. */
  function toStanding(raw: Record<string, unknown>): Standing {
    const present = (value: unknown) => value !== null && value !== undefined;
    return {
      registered: present(raw.my_priority),
      storedPriority: present(raw.my_priority) ? Number(raw.my_priority) : null,
      storedEligible: present(raw.my_eligible) ? sqlBool(raw.my_eligible) : null,
      rivalPriority: present(raw.rival_priority) ? Number(raw.rival_priority) : null,
    };
  }

  // better-sqlite3: the statements of every elect, rendered once (see `compile`); the inputs
  // that change from call to call are slots. Typed as the values they stand for.
  const NS = new Slot('ns') as unknown as string;
  const ID = new Slot('id') as unknown as string;
  const METADATA = new Slot('metadata') as unknown as string;
  const PRIORITY = new Slot('priority') as unknown as number;
  const compiled = new Map<string, CompiledStatement>();
  const compiledAs = (key: string, build: () => SqlFragment): CompiledStatement => {
    let statement = compiled.get(key);
    if (!statement) {
      // One entry per lease length and set of options used; bounded for callers that vary them freely.
      if (compiled.size >= 64) compiled.clear();
      compiled.set(key, (statement = compile(build())));
    }
    return statement;
  };
  /** The leader row (none for a new namespace), the database clock and the caller's standing. */
  const readStatement = compile(sql`SELECT l.leader_id AS leader_id, l.term AS term,
  CASE WHEN l.leader_id IS NOT NULL AND l.lease_expires_at > ${d.now} THEN 1 ELSE 0 END AS live, ${d.now} AS db_now,
  ${mine(NS, ID, 'priority')} AS my_priority, ${mine(NS, ID, 'eligible')} AS my_eligible, ${rivalPriority(NS, ID)} AS rival_priority
FROM ${leaders} l WHERE l.ns = ${NS}`);
  const createStatement = compile(sql`INSERT INTO ${leaders} (ns, leader_id, lease_expires_at, updated_at, term) VALUES (${NS}, NULL, NULL, ${d.now}, 0)
${d.insertIfAbsent(['ns'])}`);
  /** The renewal: the caller's lease, read live under the write lock, extended (the term stays). */
  const extendStatement = (expire: number) =>
    compiledAs(`extend:${expire}`, () => sql`UPDATE ${leaders} SET lease_expires_at = ${d.nowPlus(expire)}, updated_at = ${d.now} WHERE ns = ${NS}`);
  /** The candidate upsert, by which options were given (eligibility is rendered as its value). */
  const touchStatement = (expire: number, fields: CandidateFields) =>
    compiledAs(
      `touch:${expire}:${fields.metadataJson !== undefined}:${fields.priority !== undefined}:${String(fields.eligible)}`,
      () =>
        store.candidateUpsert(NS, ID, expire, {
          ...(fields.metadataJson !== undefined ? { metadataJson: METADATA } : {}),
          ...(fields.priority !== undefined ? { priority: PRIORITY } : {}),
          ...(fields.eligible !== undefined ? { eligible: fields.eligible } : {}),
        }),
    );

  /**
   * elect on better-sqlite3: the protocol of the general path (`service.ts`), run synchronously
   * inside BEGIN IMMEDIATE … COMMIT (see `runSyncStep`): the write lock is held from the first
   * statement, so what one statement read is still current when the decision made from it is
   * written — decisions are made here, in JavaScript, as on the other databases.
   * - One SELECT reads the leader row, the database clock and the caller's standing; `decide`
   *   applies the rule. A follower's call writes nothing else but its candidate row.
   * - A renewal is one UPDATE of the lease's end: the term stays, no history is written.
   * - A takeover (of a vacant lease, or an expired one — the caller's own included) closes the
   *   lapsed term ('expired', at its lease's end), raises the term and opens the new term's
   *   history row; a new namespace gets its leader row first (term 0, vacant).
   * - Then the caller's candidate upsert (heartbeat and options).
   */
  function electSync(step: SyncStep, ns: string, id: string, expire: number, fields: CandidateFields): ElectDecision {
    const input = { ns, id, metadata: fields.metadataJson, priority: fields.priority };
    let [seen] = step.runCompiled(readStatement, input);
    if (!seen) {
      step.runCompiled(createStatement, input);
      [seen] = step.runCompiled(readStatement, input);
      if (!seen) throw new Error(`gemstone-utils: leader row of ${JSON.stringify(ns)} vanished inside its transaction`);
    }
    const standing = toStanding(seen);
    const leaderId = (seen.leader_id as string | null) ?? null;
    const live = leaderId !== null && sqlBool(seen.live);
    const term = Number(seen.term);
    const databaseNow = d.parseInstant(seen.db_now) as Date;
    const { renewing, takes, handOver } = decide({ leaderId, live }, id, standing, fields);
    let decision: ElectDecision;
    if (!takes) {
      decision = { leaderId: live ? leaderId : null, term, isLeader: false, acquired: false, handOver: false, wasRegistered: standing.registered, databaseNow };
    } else if (renewing) {
      step.runCompiled(extendStatement(expire), input);
      decision = { leaderId: id, term, isLeader: true, acquired: false, handOver, wasRegistered: standing.registered, databaseNow };
    } else {
      // The lapsed term ends at its lease's end, read before the row changes.
      if (leaderId !== null) step.run('elect:close', closeTerm(ns, 'expired', true));
      step.run(
        'elect:grant',
        sql`UPDATE ${leaders} SET leader_id = ${id}, term = ${term + 1}, lease_expires_at = ${d.nowPlus(expire)}, updated_at = ${d.now} WHERE ns = ${ns}`,
      );
      step.run('elect:open', openTerm(ns));
      decision = { leaderId: id, term: term + 1, isLeader: true, acquired: true, handOver, wasRegistered: standing.registered, databaseNow };
    }
    step.runCompiled(touchStatement(expire, fields), input);
    return decision;
  }

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
      if (isBetterSqlite(dataSource)) {
        const decision = await runSyncStep(dataSource, (step) => electSync(step, ns, id, expire, fields), syncWrite(waitMs()));
        return { ns, ...decision };
      }
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
