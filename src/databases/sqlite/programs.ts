import type { DataSource } from 'typeorm';
import type { DbContext } from '../../db/context';
import { sqlBool } from '../dialect';
import { compile, CompiledStatement } from './compile';
import { isBetterSqlite } from './driver';
import { runProgram } from './run-program';
import { runSyncStep, SyncStep } from './sync-step';
import { Bound, raw, slot, sql, SqlFragment } from '../../db/sql';
import { createHistoryStatements } from '../../election/observe/history';
import { CANDIDATE_TABLE, HISTORY_TABLE, LEADER_TABLE } from '../../election/schema';
import { decide } from '../../election/decision';
import type { ElectDecision, LeaderRow, Standing } from '../../election/rows';
import { CandidateFields, DEFAULT_ELIGIBLE, DEFAULT_PRIORITY } from '../../election/validate';
import type { ElectionPrograms, ProgramsPart } from '../contract/programs';
import type { SharedStore } from '../contract/store';

/**
 * The election's calls without `session` on SQLite, each ONE program run by `runProgram` (see
 * `run-program.ts`) as one transaction that commits whole or changes nothing. On the sqlite3
 * driver it runs as one `exec`, so every decision is made by the SQL (conditional UPDATEs), and the
 * rows read back tell the caller what happened. Same protocol as the general path in `service.ts`.
 */
export function createSqlitePrograms(context: DbContext, dataSource: DataSource, waitMs: () => number | undefined, store: SharedStore): ElectionPrograms {
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
  const mine = (ns: Bound<string>, id: Bound<string>, column: 'priority' | 'eligible') =>
    sql`(SELECT c.${raw(column)} FROM ${candidates} c WHERE c.ns = ${ns} AND c.candidate_id = ${id})`;
  /** The highest priority of the other live eligible candidates (NULL when there is none). */
  const rivalPriority = (ns: Bound<string>, id: Bound<string>) =>
    sql`(SELECT MAX(c.priority) FROM ${candidates} c WHERE c.ns = ${ns} AND c.candidate_id <> ${id} AND c.eligible AND c.expires_at > ${d.now})`;

  // A lease is over (it may be taken) when vacant, or expired AND its term's history row is no
  // longer open: the statement before the takeover closes the term of a lease that has run out by
  // ITS clock, and a lease that runs out between the two (the clock moves between statements) is
  // not taken with its history row left open.
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
  // that change from call to call are slots.
  const NS = slot('ns');
  const ID = slot('id');
  const METADATA = slot('metadata');
  const PRIORITY = slot('priority');
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
  /**
   * The renewal: the caller's lease extended (the term stays) if it is still unexpired by the
   * clock of this statement; returns the row it renewed (none: the lease ran out since it was read).
   */
  const extendStatement = (expire: number) =>
    compiledAs(
      `extend:${expire}`,
      () => sql`UPDATE ${leaders} SET lease_expires_at = ${d.nowPlus(expire)}, updated_at = ${d.now}
WHERE ns = ${NS} AND leader_id = ${ID} AND lease_expires_at > ${d.now} RETURNING term`,
    );
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
   * - A renewal is one UPDATE of the lease's end: the term stays, no history is written. It is
   *   decided again by the clock of that UPDATE: a lease that ran out since the read is taken
   *   over like any lapsed lease, never extended under its old term.
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
    let live = leaderId !== null && sqlBool(seen.live);
    const term = Number(seen.term);
    const databaseNow = d.parseInstant(seen.db_now) as Date;
    let { renewing, takes, handOver } = decide({ leaderId, live }, id, standing, fields);
    if (renewing && step.runCompiled(extendStatement(expire), input).length === 0) {
      live = false;
      ({ renewing, takes, handOver } = decide({ leaderId, live }, id, standing, fields));
    }
    let decision: ElectDecision;
    if (!takes) {
      decision = { leaderId: live ? leaderId : null, term, isLeader: false, acquired: false, handOver: false, wasRegistered: standing.registered, databaseNow };
    } else if (renewing) {
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
     * elect (sqlite3: decided by the SQL, see `electSync` for better-sqlite3): create the leader
     * row if missing, read it and the caller's standing; then, each judged by the database clock
     * of the statement that writes:
     * - renew the caller's lease if it is still unexpired (the term stays, no history written);
     * - if the caller may take a lease that is over (eligible, and no live eligible candidate has
     *   a strictly higher priority — the rule of `decide` in store.ts), close the term of a lapsed
     *   one `expired` at its lease's end, then take it (term + 1; SET expressions see the row
     *   before the UPDATE: vacant, or lapsed with its term closed just before) and open the new
     *   term's history row, dated by the acquiring statement;
     * - heartbeat, and read the row again. Acquired = the caller leads under another term than the
     *   one it found.
     */
    async elect(ns: string, id: string, expire: number, fields: CandidateFields = {}) {
      if (isBetterSqlite(dataSource)) {
        const decision = await runSyncStep(dataSource, (step) => electSync(step, ns, id, expire, fields), syncWrite(waitMs()));
        return { ns, ...decision };
      }
      const eligible = sql`COALESCE(${fields.eligible === undefined ? null : fields.eligible ? 1 : 0}, ${mine(ns, id, 'eligible')}, ${DEFAULT_ELIGIBLE ? 1 : 0})`;
      const priority = sql`COALESCE(${fields.priority ?? null}, ${mine(ns, id, 'priority')}, ${DEFAULT_PRIORITY})`;
      const mayTake = sql`${eligible} <> 0 AND COALESCE(${rivalPriority(ns, id)} > ${priority}, 0) = 0`;
      const [, before, standingRows, , , , , , after] = await write([
        sql`INSERT INTO ${leaders} (ns, leader_id, lease_expires_at, updated_at, term) VALUES (${ns}, NULL, NULL, ${d.now}, 0)
${d.insertIfAbsent(['ns'])}`,
        readLeader(ns),
        sql`SELECT ${mine(ns, id, 'priority')} AS my_priority, ${mine(ns, id, 'eligible')} AS my_eligible, ${rivalPriority(ns, id)} AS rival_priority`,
        sql`UPDATE ${leaders} SET lease_expires_at = ${d.nowPlus(expire)}, updated_at = ${d.now}
WHERE ns = ${ns} AND leader_id = ${id} AND lease_expires_at > ${d.now}`,
        sql`UPDATE ${history} SET ended_at = (SELECT l.lease_expires_at FROM ${leaders} l WHERE l.ns = ${ns}), end_reason = ${'expired'}
WHERE ns = ${ns} AND ended_at IS NULL AND ${mayTake}
  AND term = (SELECT l.term FROM ${leaders} l WHERE l.ns = ${ns} AND l.leader_id IS NOT NULL AND l.lease_expires_at <= ${d.now})`,
        sql`UPDATE ${leaders} SET term = term + 1, leader_id = ${id}, lease_expires_at = ${d.nowPlus(expire)}, updated_at = ${d.now}
WHERE ns = ${ns} AND ${over} AND ${mayTake}`,
        // Only right after a takeover (changes() counts the rows of the UPDATE just before).
        sql`INSERT INTO ${history} (ns, term, leader_id, acquired_at, ended_at, end_reason)
SELECT l.ns, l.term, l.leader_id, l.updated_at, NULL, NULL FROM ${leaders} l WHERE l.ns = ${ns} AND changes() > 0
${d.upsert(['ns', 'term'], ['leader_id', 'acquired_at', 'ended_at', 'end_reason'])}`,
        store.candidateUpsert(ns, id, expire, fields),
        readLeader(ns),
      ]);
      const found = toRow(before);
      const row = toRow(after);
      if (!row) throw new Error(`gemstone-utils: leader row of ${JSON.stringify(ns)} vanished inside its transaction`);
      const standing = toStanding(standingRows?.[0] ?? {});
      const isLeader = row.live && row.leaderId === id;
      const acquired = isLeader && row.term !== found?.term;
      return {
        ns,
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
    },

    async touch(ns: string, id: string, expire: number, fields: CandidateFields = {}): Promise<void> {
      await write([store.candidateUpsert(ns, id, expire, fields)]);
    },

    /**
     * resign (or hand-over): true only if the caller held an unexpired lease; a lapsed one naming
     * it is vacated too. Whether it was unexpired is what closing its term decided (`expired` or
     * not, by the clock of that statement); a lease without a history row is judged by the read.
     */
    async resign(ns: string, id: string, reason: 'resigned' | 'handed-over'): Promise<boolean> {
      const [before, , closed] = await write([
        readLeader(ns),
        closeTerm(ns, reason, undefined, id),
        sql`SELECT h.end_reason FROM ${history} h JOIN ${leaders} l ON l.ns = h.ns AND l.term = h.term WHERE l.ns = ${ns} AND l.leader_id = ${id}`,
        vacateIfHeld(ns, id),
      ]);
      const row = toRow(before);
      if (row?.leaderId !== id) return false;
      const ended = closed?.[0];
      return ended ? ended.end_reason === reason : row.live;
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

/**
 * The `programs` part: every call without a transaction of the caller's runs as one program on
 * the shared connection, never nested in another transaction nor hosting one.
 */
export const sqlitePrograms: ProgramsPart = { create: createSqlitePrograms };
