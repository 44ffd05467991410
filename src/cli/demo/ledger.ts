import type { DataSource, EntityManager } from 'typeorm';
import type { DbContext } from '../../db/context';
import type { DemoTableTypes } from '../../databases/contract/demo-ledger';
import { partsOf } from '../../databases/parts';
import { contextOf } from '../../db/context';
import { execute, withManager } from '../../db/session';
import { raw, RawSql, sql, SqlFragment } from '../../db/sql';
import { LEADER_TABLE } from '../../election/tables';

/**
 * The demo's own tables (created by the demo, never by `initDb`):
 * - the ledger: one row per leader-only job, written in the same transaction as `assertLeader`;
 * - the term history: which candidate acquired which term, and when (the leader row's
 *   `updated_at` at acquisition), recorded by the new leader under fencing.
 * Together they prove after the fact that no write committed under a stale term.
 */
export const LEDGER_TABLE = 'gemstone_demo_ledger';
export const TERM_TABLE = 'gemstone_demo_term';

/** The CREATE statements of both tables, with the database's key and instant types and table options. */
function ddl(types: DemoTableTypes, table: (name: string) => RawSql): SqlFragment[] {
  const ledger = table(LEDGER_TABLE);
  const terms = table(TERM_TABLE);
  return [
    sql`CREATE TABLE IF NOT EXISTS ${ledger} (
  id ${raw(types.id)},
  run_id varchar(36) NOT NULL,
  ns varchar(255) NOT NULL,
  term bigint NOT NULL,
  worker_id varchar(36) NOT NULL,
  written_at ${raw(types.instant)} NOT NULL
)${raw(types.tableOptions)}`,
    sql`CREATE TABLE IF NOT EXISTS ${terms} (
  run_id varchar(36) NOT NULL,
  ns varchar(255) NOT NULL,
  term bigint NOT NULL,
  leader_id varchar(36) NOT NULL,
  started_at ${raw(types.instant)} NOT NULL,
  PRIMARY KEY (run_id, ns, term)
)${raw(types.tableOptions)}`,
  ];
}

/** Creates the ledger and term history tables if missing. */
export async function createDemoTables(dataSource: DataSource): Promise<void> {
  const context = contextOf(dataSource);
  const { demoLedger } = partsOf(context);
  await demoLedger.createTables(dataSource, context, ddl(demoLedger.types, context.table));
}

export interface TermKey {
  runId: string;
  ns: string;
  term: number;
  leaderId: string;
}

/**
 * Records a term in the history, copying the acquisition instant from the leader row. Call it
 * inside a fenced transaction (after `assertLeader` with this term), right after acquisition:
 * a renewal in between would make `started_at` later, which only weakens the stale check (so
 * does, on MySQL/MariaDB, `assertLeader`'s own write of `updated_at` in this transaction).
 * Returns false when the leader row no longer shows this term and leader.
 */
export async function recordTerm(m: EntityManager, context: DbContext, key: TermKey): Promise<boolean> {
  const terms = context.table(TERM_TABLE);
  const leaders = context.table(LEADER_TABLE);
  await execute(
    context,
    m,
    sql`INSERT INTO ${terms} (run_id, ns, term, leader_id, started_at)
SELECT ${key.runId}, l.ns, l.term, l.leader_id, l.updated_at FROM ${leaders} l
WHERE l.ns = ${key.ns} AND l.term = ${key.term} AND l.leader_id = ${key.leaderId}`,
  );
  const rows = await execute(
    context,
    m,
    sql`SELECT 1 AS yes FROM ${terms} WHERE run_id = ${key.runId} AND ns = ${key.ns} AND term = ${key.term}`,
  );
  return rows.length > 0;
}

/** Appends one ledger entry, stamped with the database clock. Returns its id. */
export async function appendEntry(m: EntityManager, context: DbContext, key: TermKey): Promise<number> {
  const ledger = context.table(LEDGER_TABLE);
  const values = sql`(${key.runId}, ${key.ns}, ${key.term}, ${key.leaderId}, ${context.dialect.now})`;
  const columns = raw('(run_id, ns, term, worker_id, written_at)');
  return partsOf(context).demoLedger.insertReturningId(context, m, sql`INSERT INTO ${ledger} ${columns} VALUES ${values}`);
}

/** A committed ledger entry that a newer term had already superseded, or whose term it did not hold. */
export interface StaleWrite {
  id: number;
  term: number;
  workerId: string;
  reason: 'written after a newer term started' | 'term not held by this worker';
}

export interface LedgerVerdict {
  /** Ledger rows of this run. */
  writes: number;
  /** Terms in the history of this run, ascending. */
  terms: Array<{ term: number; leaderId: string }>;
  /** Consecutive terms of this run held by different candidates. */
  failovers: number;
  /** Ledger rows written by a stale term: must be empty. */
  stale: StaleWrite[];
}

/**
 * Checks the ledger of one run against its term history, in SQL so instants are compared in the
 * database's own type and precision. A row is stale when its worker did not hold its term, or
 * when it was written after a newer term had started (by the database clock).
 */
export async function verifyLedger(dataSource: DataSource, runId: string, ns: string): Promise<LedgerVerdict> {
  return withManager(dataSource, undefined, async (m, context) => {
    const ledger = context.table(LEDGER_TABLE);
    const terms = context.table(TERM_TABLE);
    const [count] = await execute(context, m, sql`SELECT COUNT(*) AS n FROM ${ledger} WHERE run_id = ${runId} AND ns = ${ns}`);
    const termRows = await execute(context, m, sql`SELECT term, leader_id FROM ${terms} WHERE run_id = ${runId} AND ns = ${ns}`);
    const history = termRows.map((r) => ({ term: Number(r.term), leaderId: String(r.leader_id) })).sort((a, b) => a.term - b.term);
    const staleRows = await execute(
      context,
      m,
      sql`SELECT w.id, w.term, w.worker_id,
  CASE WHEN EXISTS (SELECT 1 FROM ${terms} t WHERE t.run_id = w.run_id AND t.ns = w.ns AND t.term = w.term AND t.leader_id = w.worker_id)
       THEN 1 ELSE 0 END AS held
FROM ${ledger} w
WHERE w.run_id = ${runId} AND w.ns = ${ns} AND (
  NOT EXISTS (SELECT 1 FROM ${terms} t WHERE t.run_id = w.run_id AND t.ns = w.ns AND t.term = w.term AND t.leader_id = w.worker_id)
  OR EXISTS (SELECT 1 FROM ${terms} t WHERE t.run_id = w.run_id AND t.ns = w.ns AND t.term > w.term AND t.started_at < w.written_at))`,
    );
    let failovers = 0;
    for (let i = 1; i < history.length; i++) if (history[i]!.leaderId !== history[i - 1]!.leaderId) failovers++;
    return {
      writes: Number(count?.n ?? 0),
      terms: history,
      failovers,
      stale: staleRows
        .map(
          (r): StaleWrite => ({
            id: Number(r.id),
            term: Number(r.term),
            workerId: String(r.worker_id),
            reason: Number(r.held) === 1 ? 'written after a newer term started' : 'term not held by this worker',
          }),
        )
        .sort((a, b) => a.id - b.id),
    };
  });
}

/** What {@link removeDemoTables} did. */
export type DemoTablesOutcome = 'dropped' | 'kept: they hold rows of other runs';

/**
 * Deletes this run's rows, then drops both demo tables if no other run's rows are left. Rows of
 * another run (one with `--keep`, or a demo running beside this one) keep the tables: dropping
 * them would take that run's ledger with them.
 */
export async function removeDemoTables(dataSource: DataSource, runId: string): Promise<DemoTablesOutcome> {
  const context = contextOf(dataSource);
  const m = dataSource.manager;
  const tables = [context.table(LEDGER_TABLE), context.table(TERM_TABLE)];
  let others = 0;
  for (const table of tables) {
    await execute(context, m, sql`DELETE FROM ${table} WHERE run_id = ${runId}`);
    const [row] = await execute(context, m, sql`SELECT COUNT(*) AS n FROM ${table}`);
    others += Number(row?.n ?? 0);
  }
  if (others > 0) return 'kept: they hold rows of other runs';
  for (const table of tables) await execute(context, m, sql`DROP TABLE IF EXISTS ${table}`);
  return 'dropped';
}
