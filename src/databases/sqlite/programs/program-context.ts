import type { DataSource } from 'typeorm';
import type { DbContext } from '../../../db/context';
import { Bound, raw, sql, SqlFragment } from '../../../db/sql';
import { createHistoryStatements, HistoryStatements } from '../../../election/observe/history';
import type { LeaderRow } from '../../../election/rows';
import { ElectionTables, electionTables } from '../../../election/tables';
import type { SharedStore } from '../../contract/store';
import { runProgram } from '../run-program';

/*
 * What every election program of one DataSource is built from (its tables, the shared store, the
 * history statements) and the pieces of SQL several of them read: the leader row as a program
 * reads it back, the caller's own candidate row, the best rival, whether a lease is over.
 */

/** One DataSource's election programs: their tables and how they run. */
export interface ProgramContext {
  readonly t: ElectionTables;
  readonly store: SharedStore;
  readonly dataSource: DataSource;
  /** How long a call waits for a transaction someone else holds open on the shared connection (read at each call). */
  readonly waitMs: () => number | undefined;
  /** The history statements; the term a resign/unregister ends is decided by the clock of that one statement (stable within it on SQLite). */
  readonly history: Pick<HistoryStatements, 'closeTerm' | 'openTerm'>;
}

export function programContext(context: DbContext, dataSource: DataSource, waitMs: () => number | undefined, store: SharedStore): ProgramContext {
  return { t: electionTables(context), store, dataSource, waitMs, history: createHistoryStatements(context) };
}

/** Runs `statements` as one program: one transaction that commits whole or changes nothing. */
export function write(pc: ProgramContext, statements: SqlFragment[]): Promise<Record<string, unknown>[][]> {
  return runProgram(pc.dataSource, statements, { transaction: true, waitMs: pc.waitMs() });
}

/** Runs one read-only statement outside any transaction on the shared connection. */
export function read(pc: ProgramContext, statement: SqlFragment): Promise<Record<string, unknown>[]> {
  return runProgram(pc.dataSource, [statement], { transaction: false, waitMs: pc.waitMs() }).then((r) => r[0] ?? []);
}

/** The leader row of `ns` as the programs read it (its raw lease end; `toRow` reads it back). */
export function readLeader({ t: { d, candidates, leaders } }: ProgramContext, ns: string): SqlFragment {
  const selectLeader = sql`SELECT l.ns, l.leader_id, l.term, CASE WHEN l.leader_id IS NOT NULL AND l.lease_expires_at > ${d.now} THEN 1 ELSE 0 END AS live,
  l.lease_expires_at, l.updated_at, ${d.now} AS db_now, (SELECT c.metadata FROM ${candidates} c WHERE c.ns = l.ns AND c.candidate_id = l.leader_id) AS metadata
FROM ${leaders} l WHERE l.ns = `;
  return sql`${selectLeader}${ns}`;
}

/** The leader row {@link readLeader} read, if any. */
export function toRow(pc: ProgramContext, rows: Record<string, unknown>[] | undefined): LeaderRow | undefined {
  const row = rows?.[0];
  return row ? pc.store.toRow(row) : undefined;
}

/** Vacates the lease of `ns` if `id` holds it (lapsed or not). */
export function vacateIfHeld({ t: { d, leaders } }: ProgramContext, ns: string, id: string): SqlFragment {
  return sql`UPDATE ${leaders} SET leader_id = NULL, lease_expires_at = NULL, updated_at = ${d.now} WHERE ns = ${ns} AND leader_id = ${id}`;
}

/** The caller's own candidate row, read inside the program. */
export function mine({ t: { candidates } }: ProgramContext, ns: Bound<string>, id: Bound<string>, column: 'priority' | 'eligible'): SqlFragment {
  return sql`(SELECT c.${raw(column)} FROM ${candidates} c WHERE c.ns = ${ns} AND c.candidate_id = ${id})`;
}

/** The highest priority of the other live eligible candidates (NULL when there is none). */
export function rivalPriority({ t: { d, candidates } }: ProgramContext, ns: Bound<string>, id: Bound<string>): SqlFragment {
  return sql`(SELECT MAX(c.priority) FROM ${candidates} c WHERE c.ns = ${ns} AND c.candidate_id <> ${id} AND c.eligible AND c.expires_at > ${d.now})`;
}
