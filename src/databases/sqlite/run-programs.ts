import type { DataSource } from 'typeorm';
import type { DbContext } from '../../db/context';
import { raw, render, sql, SqlFragment } from '../../db/sql';
import { judgeFence, notLeaderError } from '../../election/fence';
import type { LeaderRow } from '../../election/rows';
import { LEADER_TABLE, RUN_TABLE } from '../../election/tables';
import type { CheckedSlot, Claimant, ClaimResult, RunState } from '../../schedules/runs-store';
import { sqlBool } from '../dialect';
import type { SharedStore } from '../contract/store';
import type { RunPrograms, RunProgramsPart } from '../contract/run-programs';
import { runProgram } from './run-program';

/** A run row as read before and after a claim. */
interface Seen {
  readonly state: RunState;
  readonly attempt: number;
  readonly term: number;
}

/**
 * The runs store's calls without a caller's transaction on SQLite, each ONE program (see
 * `run-program.ts`): one transaction under the database write lock that commits whole, sent as
 * one step on either driver. On sqlite3 that step is one `exec`, so no decision can be made
 * between its statements: each write carries a guard in SQL — the caller's lease under its term
 * still unexpired by the clock of that write (and, for a claim, the slot due by it) — and the
 * rows read with it tell the caller what happened. The leader row is read by the store's select
 * (`SharedStore.selectLeader`) and judged by `judgeFence` (`election/fence.ts`), the decision and
 * the NotLeaderError of the general path in `schedules/store.ts`; the write lock keeps the leader
 * row as read until the program ends, so only the clock moves between its statements.
 */
export function createSqliteRunPrograms(context: DbContext, dataSource: DataSource, waitMs: () => number | undefined, store: SharedStore): RunPrograms {
  const { dialect: d } = context;
  const runs = context.table(RUN_TABLE);
  const leaders = context.table(LEADER_TABLE);
  const columns = raw('ns, name, slot, state, attempt, term, candidate_id, started_at, finished_at, error');
  const where = (key: CheckedSlot) => sql`ns = ${key.ns} AND name = ${key.name} AND slot = ${d.instantOf(key.slotMs)}`;

  /** The guard of a write: the caller's lease under its term, live by this statement's clock. */
  const fenced = (ns: string, who: Claimant) =>
    sql`EXISTS (SELECT 1 FROM ${leaders} l WHERE l.ns = ${ns} AND l.leader_id = ${who.candidateId} AND l.term = ${who.term} AND l.lease_expires_at > ${d.now})`;

  /**
   * The leader row of `ns` as the store selects it (always one row: without a leader row its
   * columns are NULL and the clock, `db_now`, is still read), with `extra` columns.
   */
  const leaderRead = (ns: string, extra: SqlFragment = sql``) =>
    sql`SELECT ${raw(store.selectLeader('l'))}${extra} FROM (SELECT 1 AS one) clock LEFT JOIN ${leaders} l ON l.ns = ${ns}`;

  /** What {@link leaderRead} selected: the leader row (undefined when there is none) and the clock. */
  function leaderOf(rows: Record<string, unknown>[] | undefined): { row: LeaderRow | undefined; now: Date; raw: Record<string, unknown> } {
    const read = rows?.[0];
    if (!read) throw new Error('gemstone-utils: the read of the leader row and the clock returned no row');
    const row = read.ns === null || read.ns === undefined ? undefined : store.toRow(read);
    return { row, now: d.parseInstant(read.db_now) as Date, raw: read };
  }

  const readRun = (key: CheckedSlot) => sql`SELECT state, attempt, term, ${d.now} AS db_now FROM ${runs} WHERE ${where(key)}`;

  const write = (statements: SqlFragment[]) => runProgram(dataSource, statements, { transaction: true, waitMs: waitMs() });

  function seen(rows: Record<string, unknown>[] | undefined): Seen | undefined {
    const row = rows?.[0];
    return row ? { state: String(row.state) as RunState, attempt: Number(row.attempt), term: Number(row.term) } : undefined;
  }

  const slotText = (key: CheckedSlot) => `${JSON.stringify(key.name)} slot ${new Date(key.slotMs).toISOString()}`;

  return {
    /**
     * claim: read the leader row (and whether the slot is due) and the run row, then — each
     * write guarded by the fence and the slot's being due by its own clock — insert the run as
     * attempt 1; or abandon a run of an older term that used its attempts; or run it again under
     * this term (attempt + 1); then read the run row again. What changed between the two reads is
     * the answer; when nothing did, the first reads say why. `retake`: a run of this very term
     * counts as one to run again (see `RunsStore.claim`).
     */
    async claim(key, who, maxAttempts, retake): Promise<ClaimResult> {
      const slot = d.instantOf(key.slotMs);
      const lost = retake ? sql`term <= ${who.term}` : sql`term < ${who.term}`;
      // Due by the database clock: the one condition the read reports and every write carries.
      const due = sql`${slot} <= ${d.now}`;
      const allowed = sql`${fenced(key.ns, who)} AND ${due}`;
      const [leaderRows, beforeRows, , , , afterRows] = await write([
        leaderRead(key.ns, sql`, CASE WHEN ${due} THEN 1 ELSE 0 END AS due`),
        readRun(key),
        sql`INSERT INTO ${runs} (${columns})
SELECT ${key.ns}, ${key.name}, ${slot}, ${'running'}, 1, ${who.term}, ${who.candidateId}, ${d.now}, NULL, NULL
WHERE ${allowed}
${d.insertIfAbsent(['ns', 'name', 'slot'])}`,
        sql`UPDATE ${runs} SET state = ${'abandoned'}, finished_at = ${d.now}
WHERE ${where(key)} AND state = ${'running'} AND ${lost} AND attempt >= ${maxAttempts} AND ${allowed}`,
        sql`UPDATE ${runs} SET attempt = attempt + 1, term = ${who.term}, candidate_id = ${who.candidateId}, started_at = ${d.now},
  finished_at = NULL, error = NULL
WHERE ${where(key)} AND state = ${'running'} AND ${lost} AND attempt < ${maxAttempts} AND ${allowed}`,
        readRun(key),
      ]);
      const leader = leaderOf(leaderRows);
      const before = seen(beforeRows);
      const after = seen(afterRows);
      const readNow = leader.now;
      const databaseNow = d.parseInstant(afterRows?.[0]?.db_now) ?? readNow;
      if (after && (!before || before.state !== after.state || before.term !== after.term || before.attempt !== after.attempt)) {
        if (after.state === 'abandoned') return { claimed: false, why: 'abandoned', state: 'abandoned', databaseNow };
        return { claimed: true, attempt: after.attempt, databaseNow };
      }
      if (!judgeFence(leader.row, who.candidateId, who.term).pass) return { claimed: false, why: 'not-leader', databaseNow: readNow };
      if (!sqlBool(leader.raw.due)) return { claimed: false, why: 'not-due', databaseNow: readNow };
      if (before && before.state !== 'running') return { claimed: false, why: 'final', state: before.state, databaseNow };
      if (before && (retake ? before.term > who.term : before.term >= who.term)) return { claimed: false, why: 'running', state: before.state, databaseNow };
      // The lease ran out between the leader row's read and the writes: nothing was written.
      return { claimed: false, why: 'not-leader', databaseNow };
    },

    /**
     * finish: the guarded UPDATE of a row still running under the caller's term, counted by
     * `changes()`; then the run row and the leader row, read after it. Nothing changed: the fence
     * as read after the write says why, else the run row does.
     */
    async finish(key, who, state, error) {
      const [, changed, rowRows, leaderRows] = await write([
        sql`UPDATE ${runs} SET state = ${state}, finished_at = ${d.now}, error = ${error}
WHERE ${where(key)} AND state = ${'running'} AND term = ${who.term} AND ${fenced(key.ns, who)}`,
        sql`SELECT changes() AS n`,
        readRun(key),
        leaderRead(key.ns),
      ]);
      if (Number(changed?.[0]?.n) > 0) return;
      const verdict = judgeFence(leaderOf(leaderRows).row, who.candidateId, who.term);
      if (!verdict.pass) throw notLeaderError(key.ns, who.candidateId, verdict, who.term);
      const row = seen(rowRows);
      throw notLeaderError(
        key.ns,
        who.candidateId,
        verdict,
        who.term,
        row
          ? `the run of schedule ${slotText(key)} is ${row.state} under term ${row.term}, not running under term ${who.term}`
          : `schedule ${slotText(key)} was never claimed`,
      );
    },

    /**
     * record: ONE guarded INSERT of every final row (the keys as one JSON parameter, so no
     * variable limit splits it), skipping existing rows: by one statement's clock it writes all
     * or nothing. Then `changes()` and the leader row. Rows written: the fence held when they
     * were. None: the fence read after the write decides — when it fails, nothing was written.
     */
    async record(keys, who, state) {
      const ns = keys[0]!.ns;
      const values = JSON.stringify(keys.map((key) => [key.name, render(d.instantOf(key.slotMs), 'question').values[0]]));
      const [, changed, leaderRows] = await write([
        sql`INSERT INTO ${runs} (${columns})
SELECT ${ns}, json_extract(k.value, '$[0]'), json_extract(k.value, '$[1]'), ${state}, 0, ${who.term}, ${who.candidateId}, NULL, ${d.now}, NULL
FROM json_each(${values}) k
WHERE ${fenced(ns, who)}
${d.insertIfAbsent(['ns', 'name', 'slot'])}`,
        sql`SELECT changes() AS n`,
        leaderRead(ns),
      ]);
      if (Number(changed?.[0]?.n) > 0) return;
      const verdict = judgeFence(leaderOf(leaderRows).row, who.candidateId, who.term);
      if (!verdict.pass) throw notLeaderError(ns, who.candidateId, verdict, who.term);
    },

    read: (statements) => runProgram(dataSource, statements, { transaction: false, waitMs: waitMs() }),
  };
}

/** SQLite's `runPrograms` part. */
export const sqliteRunPrograms: RunProgramsPart = { create: createSqliteRunPrograms };
