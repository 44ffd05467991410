import type { DataSource, EntityManager, EntitySubscriberInterface, QueryRunner, TransactionCommitEvent, TransactionRollbackEvent } from 'typeorm';
import type { DbContext } from '../../db/context';
import { execute } from '../../db/session';
import { raw, sql } from '../../db/sql';
import { LEADER_TABLE, PROOF_TABLE } from '../../election/tables';
import { ValidationError } from '../../errors';
import { LeaderTableMissing, type FenceProof, type GuardParts, type GuardTarget } from '../contract/guards';
import { driverError } from '../dialect';
import { DETAIL, guardTriggerName, installationMark, markComment, markedGuards, refusalDetail, subscribeOnce } from '../trigger-guards';

/*
 * Guarded tables on SQLite (both drivers). SQLite has no session variable and no transaction-local
 * setting, and the sqlite3 driver cannot register SQL functions, so the proof is a row: the
 * fence's transaction writes `(ns, holder, term)` into the installation's proof table, and three
 * row triggers per guarded table (BEFORE INSERT, UPDATE, DELETE: SQLite has no statement trigger)
 * refuse the write unless a proof row of the namespace matches the live leader row, by the clock
 * of the writing statement.
 *
 * Why a row is enough: SQLite has one writer at a time. The fence takes the database's write lock
 * (`elect.ts`, `lockLeader`) before its proof row exists, and holds it until its transaction ends:
 * no other connection can write (a takeover waits for this transaction, as behind PostgreSQL's
 * row lock), and no other connection ever sees the uncommitted proof row. What must not happen is
 * a proof row committed: it would prove for every connection afterwards. Two things stop it:
 * - the library deletes the transaction's proof rows just before TypeORM commits it (a DataSource
 *   subscriber, `beforeTransactionCommit`, on the proving QueryRunner: `dataSource.transaction`,
 *   `withTransaction`, `run.transaction`, `queryRunner.commitTransaction` all end there);
 * - a proof row violates a deferred foreign key of its own table (it names a parent that cannot
 *   exist), so a COMMIT that would keep one fails ("FOREIGN KEY constraint failed") and the
 *   transaction stays open: a COMMIT sent as raw SQL after a proof is refused, not leaked. This
 *   holds where the connection has `PRAGMA foreign_keys = ON`, which both of TypeORM's SQLite
 *   drivers set on connecting (docs/fencing.md).
 * A fence outside a transaction proves nothing (its statement would commit the row at once).
 *
 * SQLite before 3.47 takes only a literal as RAISE's message, and a database file must stay
 * readable by the older library another program may open it with: the refusal's message is a
 * literal naming the table and the namespace; it cannot name the leader of the moment.
 */

/** The text that opens every refusal's message (and tells a refusal from other constraint errors). */
const REFUSAL = 'gemstone-utils: ';

/** The events a guard refuses, each by a trigger of its own. */
const EVENTS = [
  ['INSERT', 'i'],
  ['UPDATE', 'u'],
  ['DELETE', 'd'],
] as const;

/** An identifier in double quotes (doubled inside): names cannot be parameters of DDL. */
function id(name: string): string {
  return `"${name.split('"').join('""')}"`;
}

/** A string literal (SQLite reads no escape but the doubled quote). */
function text(value: string): string {
  return `'${value.split("'").join("''")}'`;
}

/** The proof table of the installation, and whether it was seen to exist on a DataSource (it is never dropped by the library). */
const proofTableSeen = new WeakMap<DataSource, true>();

/** The proof table's DDL: one row per proved namespace; the deferred key that no parent satisfies refuses a COMMIT that keeps one. */
function proofTableDdl(proofs: string): string {
  return `CREATE TABLE IF NOT EXISTS ${id(proofs)} (
  ns varchar(255) NOT NULL PRIMARY KEY,
  holder varchar(36) NOT NULL,
  term bigint NOT NULL,
  never_committed varchar(1) NOT NULL DEFAULT '' REFERENCES ${id(proofs)} (ns) DEFERRABLE INITIALLY DEFERRED
)`;
}

async function proofTableExists(context: DbContext, m: EntityManager): Promise<boolean> {
  if (proofTableSeen.has(context.dataSource)) return true;
  const [row] = await execute(context, m, sql`SELECT 1 AS found FROM sqlite_master WHERE type = 'table' AND name = ${context.tableName(PROOF_TABLE)}`);
  if (row) proofTableSeen.set(context.dataSource, true);
  return row !== undefined;
}

/** QueryRunners whose open transaction holds proof rows, and their DataSource's context (whose proof table's rows are deleted before they commit). */
const provedRunners = new WeakMap<QueryRunner, DbContext>();

/** TypeORM's nesting depth of a runner's transaction (1: the outermost; more: a savepoint's commit or rollback). */
const depthOf = (runner: QueryRunner) => Number((runner as unknown as { transactionDepth?: number }).transactionDepth ?? 1);

/** The DataSource subscriber that deletes a transaction's proof rows before it commits (added at the first proof). */
class ProofEnds implements EntitySubscriberInterface {
  async beforeTransactionCommit(event: TransactionCommitEvent): Promise<void> {
    const runner = event.queryRunner;
    const context = provedRunners.get(runner);
    if (context === undefined || depthOf(runner) > 1) return;
    await execute(context, runner.manager, sql`DELETE FROM ${context.table(PROOF_TABLE)}`);
  }
  afterTransactionCommit(event: TransactionCommitEvent): void {
    if (!event.queryRunner.isTransactionActive) provedRunners.delete(event.queryRunner);
  }
  afterTransactionRollback(event: TransactionRollbackEvent): void {
    if (!event.queryRunner.isTransactionActive) provedRunners.delete(event.queryRunner);
  }
}


/** The leader table's name, which must exist (the triggers read it). */
async function leaderTableOf(context: DbContext, m: EntityManager): Promise<string> {
  const table = context.tableName(LEADER_TABLE);
  const [row] = await execute(context, m, sql`SELECT 1 AS found FROM sqlite_master WHERE type = 'table' AND name = ${table}`);
  if (!row) throw new LeaderTableMissing(table);
  return table;
}

/** The guarded table as SQLite names it, or undefined. */
async function resolve(context: DbContext, m: EntityManager, target: GuardTarget): Promise<string | undefined> {
  const [row] = await execute<{ name: string }>(context, m, sql`SELECT name FROM sqlite_master WHERE type = 'table' AND name = ${target.table}`);
  return row?.name;
}

/** This installation's guard triggers on `table` (every event), by name. */
async function triggersOn(context: DbContext, m: EntityManager, mark: string, table: string): Promise<string[]> {
  const rows = await execute<{ name: string }>(
    context,
    m,
    sql`SELECT name FROM sqlite_master WHERE type = 'trigger' AND tbl_name = ${table} AND instr(sql, ${mark}) > 0`,
  );
  return rows.map((r) => r.name);
}

/**
 * One guard trigger: it refuses the row's write unless a proof row of `ns` names the holder and
 * the term of the leader row, whose lease is live by the writing statement's clock ('now' is
 * fixed within one statement). The refusal: `RAISE(ABORT)` with a message that names the table
 * and the namespace and ends with ` Detail: <JSON>`.
 */
function triggerDdl(name: string, event: string, table: string, leaders: string, proofs: string, ns: string, mark: string): string {
  const detail = JSON.stringify({ ns, table, leaderId: null, term: null, provedBy: null });
  const message = `${REFUSAL}${event} on guarded table ${table} refused: this transaction has not proved the live leadership of namespace ${JSON.stringify(ns)}.${DETAIL}${detail}`;
  return `CREATE TRIGGER ${id(name)} BEFORE ${event} ON ${id(table)} FOR EACH ROW
BEGIN
  ${markComment(mark, ns)}
  SELECT RAISE(ABORT, ${text(message)}) WHERE NOT EXISTS (
    SELECT 1 FROM ${id(proofs)} p JOIN ${id(leaders)} l ON l.ns = p.ns AND l.leader_id = p.holder AND l.term = p.term
    WHERE p.ns = ${text(ns)} AND l.lease_expires_at > strftime('%Y-%m-%d %H:%M:%f', 'now'));
END`;
}

export const sqliteGuards: GuardParts = {
  // The proof is a write of its own (afterProof): the fence's read carries nothing.
  proofColumns: () => sql``,

  /**
   * The proof row, written under the write lock the fence's read took, when the fence's rule holds
   * by this statement's clock (the caller holds an unexpired lease, under `term` when given): the
   * rule of `judgeFence` in SQL, as `proofColumns` on the other databases. A fence that fails
   * leaves the rows as they were.
   */
  async afterProof(context, m, fence: FenceProof) {
    const runner = m.queryRunner;
    // Outside a TypeORM transaction a proof would commit with its own statement: it proves nothing.
    if (!runner?.isTransactionActive) return;
    if (!(await proofTableExists(context, m))) return; // nothing is guarded: no table could check a proof
    const leaders = context.table(LEADER_TABLE);
    const termMatches = fence.term === undefined ? raw('') : sql` AND l.term = ${fence.term}`;
    try {
      await execute(
        context,
        m,
        sql`INSERT OR REPLACE INTO ${context.table(PROOF_TABLE)} (ns, holder, term) SELECT l.ns, l.leader_id, l.term FROM ${leaders} l
WHERE l.ns = ${fence.ns} AND l.leader_id = ${fence.candidateId} AND l.lease_expires_at > ${context.dialect.now}${termMatches}`,
      );
    } catch (error) {
      proofTableSeen.delete(context.dataSource); // dropped behind the library's back: looked up again next time
      throw error;
    }
    provedRunners.set(runner, context);
    subscribeOnce(context.dataSource, ProofEnds);
  },

  async guard(context, m, target, ns) {
    const table = await resolve(context, m, target);
    if (table === undefined) throw new ValidationError('table', `names no table the connection can see (${JSON.stringify(target.table)}): create it first`);
    const leaders = await leaderTableOf(context, m);
    const proofs = context.tableName(PROOF_TABLE);
    await execute(context, m, sql`${raw(proofTableDdl(proofs))}`);
    const mark = installationMark(leaders);
    const old = await triggersOn(context, m, mark, table);
    // The new guard first, then the old one dropped (one transaction: nobody sees between).
    for (const [event, letter] of EVENTS) {
      await execute(context, m, sql`${raw(triggerDdl(guardTriggerName(leaders, table, letter), event, table, leaders, proofs, ns, mark))}`);
    }
    for (const name of old) await execute(context, m, sql`${raw(`DROP TRIGGER IF EXISTS ${id(name)}`)}`);
  },

  async unguard(context, m, target) {
    const table = await resolve(context, m, target);
    if (table === undefined) return false;
    const names = await triggersOn(context, m, installationMark(await leaderTableOf(context, m)), table);
    for (const name of names) await execute(context, m, sql`${raw(`DROP TRIGGER IF EXISTS ${id(name)}`)}`);
    return names.length > 0;
  },

  async list(context, m) {
    const mark = installationMark(await leaderTableOf(context, m));
    const rows = await execute<{ tbl: string; body: string }>(
      context,
      m,
      sql`SELECT tbl_name AS tbl, sql AS body FROM sqlite_master
WHERE type = 'trigger' AND substr(name, -2) = '_i' AND instr(sql, ${mark}) > 0 ORDER BY tbl_name`,
    );
    return markedGuards(rows, mark);
  },

  refusal(error) {
    const e = driverError(error);
    if (!/^SQLITE_CONSTRAINT/.test(String(e['code']))) return undefined;
    const message = String(e['message'] ?? '');
    const d = message.includes(REFUSAL) ? refusalDetail(message) : undefined;
    return d && { ns: String(d['ns']), table: String(d['table']), leaderId: undefined, term: undefined, provedBy: null };
  },
};
