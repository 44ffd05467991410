import { createHash } from 'crypto';
import type { EntityManager, EntitySubscriberInterface, QueryRunner, TransactionCommitEvent, TransactionRollbackEvent } from 'typeorm';
import type { DbContext } from '../../db/context';
import { execute } from '../../db/session';
import { raw, sql, SqlFragment } from '../../db/sql';
import { LEADER_TABLE } from '../../election/tables';
import { ValidationError } from '../../errors';
import { LeaderTableMissing, type GuardParts, type GuardTarget } from '../contract/guards';
import { driverError } from '../dialect';
import { guardTriggerName, installationMark as markOf, markComment, markedGuards, refusalDetail, subscribeOnce } from '../trigger-guards';

/*
 * Guarded tables on MySQL/MariaDB. Three row triggers per table (BEFORE INSERT, UPDATE, DELETE:
 * MySQL has neither statement triggers nor a TRUNCATE trigger) check the transaction's proof
 * against the live leader row, as PostgreSQL's statement trigger does.
 *
 * The proof is a user variable, `@gemstone_proof`: a JSON object from each proved namespace to
 * `[term, candidateId]`. MySQL has no transaction-local setting, and a user variable outlives
 * its transaction on its connection (a pooled one, too). So the library ends it with the
 * transaction itself: a fence that proves inside a TypeORM transaction marks its QueryRunner, and
 * a subscriber of the DataSource clears the variable after that QueryRunner's COMMIT or ROLLBACK
 * (`dataSource.transaction`, `withTransaction`, `run.transaction`, `queryRunner.commitTransaction`
 * all end there), before the connection goes back to the pool; a fence outside a TypeORM
 * transaction clears it at once (it could prove nothing that lasts). A COMMIT sent as raw SQL
 * is the one end TypeORM does not see: see docs/fencing.md.
 */

/** The user variable that carries the connection's proofs until its transaction ends. */
const PROOF = '@gemstone_proof';

/** The error number of a refused write (SQLSTATE 45000, "unhandled user-defined exception"). */
const REFUSED_ERRNO = 45001;

/** The events a guard refuses, each by a trigger of its own. */
const EVENTS = [
  ['INSERT', 'i'],
  ['UPDATE', 'u'],
  ['DELETE', 'd'],
] as const;

/**
 * The `sql_mode` the guard DDL is parsed in (and its triggers run in: a trigger keeps the mode of
 * its creation). The body uses only backticks, hex literals and plain single-quoted words, but
 * MariaDB's `ORACLE` mode would parse it as PL/SQL.
 */
const DDL_SQL_MODE = 'STRICT_ALL_TABLES,NO_ENGINE_SUBSTITUTION';

/** An identifier quoted with backticks (doubled inside): names cannot be parameters of DDL. */
function id(name: string): string {
  return `\`${name.split('`').join('``')}\``;
}

/** A string as a literal no `sql_mode` reads differently: its UTF-8 bytes in hex. */
function text(value: string): string {
  return `CONVERT(X'${Buffer.from(value, 'utf8').toString('hex')}' USING utf8mb4)`;
}

/**
 * The proof, appended to the fence's locking read of the leader row (`election/fence.ts`): the
 * variable gains `ns → [term, candidateId]` when the row names the caller under an unexpired lease
 * by the clock of that statement (which starts after the lock: see `elect.ts` `lockLeader`) and
 * under `term` when given — the fence's own rule, so the proof exists exactly when `assertLeader`
 * passes; a fence that fails leaves the variable as it was (as on PostgreSQL).
 */
function proofColumns(alias: string, candidateId: string, term: number | undefined): SqlFragment {
  const a = raw(alias);
  const p = raw(PROOF);
  const termMatches = term === undefined ? raw('') : sql` AND ${a}.term = ${term}`;
  return sql`, (${p} := CASE WHEN ${a}.leader_id = ${candidateId} AND ${a}.lease_expires_at > UTC_TIMESTAMP(6)${termMatches}
  THEN JSON_MERGE_PATCH(COALESCE(${p}, '{}'), JSON_OBJECT(${a}.ns, JSON_ARRAY(${a}.term, ${a}.leader_id))) ELSE ${p} END) AS proved`;
}

/** QueryRunners whose open transaction holds a proof (cleared when it ends). */
const provedRunners = new WeakSet<QueryRunner>();

/**
 * Clears the proof of a QueryRunner whose transaction ended (not a savepoint's: the transaction
 * goes on). The statement is queued on the driver's connection at once, without waiting for its
 * answer: the connection runs its commands in order, so it runs before anything of whoever takes
 * the connection from the pool next, and the commit's caller waits for no extra round trip.
 */
function endProof(runner: QueryRunner): void {
  if (runner.isTransactionActive || !provedRunners.has(runner)) return;
  provedRunners.delete(runner);
  const connection = (runner as QueryRunner & { databaseConnection?: { query?: (sql: string, callback: (error: unknown) => void) => unknown } }).databaseConnection;
  // An error means the transaction has ended already on a broken connection, which leaves the
  // pool with its variables; failing the commit that succeeded would be a lie.
  if (typeof connection?.query === 'function') connection.query('SET @gemstone_proof = NULL', () => undefined);
  else void runner.query('SET @gemstone_proof = NULL').catch(() => undefined);
}

/** The DataSource subscriber that ends proofs with their transactions (added at the first proof). */
class ProofEnds implements EntitySubscriberInterface {
  afterTransactionCommit(event: TransactionCommitEvent): void {
    endProof(event.queryRunner);
  }
  afterTransactionRollback(event: TransactionRollbackEvent): void {
    endProof(event.queryRunner);
  }
}


/** The leader table's database and name, resolved by the server (it is named in the triggers, which run in the guarded table's database). */
async function leaderTableOf(context: DbContext, m: EntityManager): Promise<{ db: string; table: string }> {
  const table = context.tableName(LEADER_TABLE);
  const [row] = await execute<{ db: string | null }>(
    context,
    m,
    sql`SELECT TABLE_SCHEMA AS db FROM information_schema.TABLES WHERE TABLE_SCHEMA = COALESCE(${context.schemaName(LEADER_TABLE) ?? null}, DATABASE()) AND TABLE_NAME = ${table}`,
  );
  if (!row?.db) throw new LeaderTableMissing(table);
  return { db: row.db, table };
}

/** The mark of this installation's guards (the leader table they check). */
function installationMark(leaders: { db: string; table: string }): string {
  return markOf(`${leaders.db}.${leaders.table}`);
}

/** The guarded table in the connection's database, as the server names it, or undefined. */
async function resolve(context: DbContext, m: EntityManager, target: GuardTarget): Promise<{ db: string; table: string } | undefined> {
  const [row] = await execute<{ db: string; tbl: string }>(
    context,
    m,
    sql`SELECT TABLE_SCHEMA AS db, TABLE_NAME AS tbl FROM information_schema.TABLES WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = ${target.table} AND TABLE_TYPE = 'BASE TABLE'`,
  );
  return row ? { db: row.db, table: row.tbl } : undefined;
}

/** This installation's guard triggers on `table` (every event), by name. */
async function triggersOn(context: DbContext, m: EntityManager, mark: string, table: { db: string; table: string }): Promise<string[]> {
  const rows = await execute<{ name: string }>(
    context,
    m,
    sql`SELECT TRIGGER_NAME AS name FROM information_schema.TRIGGERS
WHERE EVENT_OBJECT_SCHEMA = ${table.db} AND EVENT_OBJECT_TABLE = ${table.table} AND LOCATE(${mark}, ACTION_STATEMENT) > 0`,
  );
  return rows.map((r) => r.name);
}

/**
 * One guard trigger. It refuses the row's write unless the connection's proof holds `[term,
 * holder]` of the leader row for `ns` (checked at the statement's first row), read with a shared lock (held already by the proving
 * transaction, whose fence locked the row for update: a takeover waits for this transaction) and
 * live by the clock of the writing statement. A write without a proof of `ns` is refused without
 * waiting for that lock. The refusal: SQLSTATE 45000, error 45001, a message that names the table
 * and the namespace and ends with ` Detail: <JSON>` (at most 512 characters, MySQL's bound: the
 * sentence is shortened first).
 */
function triggerDdl(name: string, event: string, table: { db: string; table: string }, leaders: { db: string; table: string }, ns: string, mark: string): string {
  const target = text(ns);
  const path = `CONCAT('$.', JSON_QUOTE(${target}))`;
  // The statement's rows after its first share its check: the clock is the statement's, and the
  // proof's fence holds the leader row locked until the transaction ends (so neither the holder
  // nor the term can change in between). Keyed by the statement's clock and the proof, per
  // installation and namespace; a later statement has a later clock and checks again.
  const passed = `@gemstone_passed_${createHash('sha256').update(`${leaders.db}.${leaders.table}\u0000${ns}`).digest('hex').slice(0, 16)}`;
  const leaderRow = `${id(leaders.db)}.${id(leaders.table)} l WHERE l.ns = ${target} AND l.leader_id IS NOT NULL AND l.lease_expires_at > UTC_TIMESTAMP(6)`;
  return `CREATE TRIGGER ${id(table.db)}.${id(name)} BEFORE ${event} ON ${id(table.db)}.${id(table.table)} FOR EACH ROW
BEGIN
  ${markComment(mark, ns)}
  DECLARE holder VARCHAR(36) CHARACTER SET ascii DEFAULT NULL;
  DECLARE held BIGINT DEFAULT NULL;
  DECLARE proved INT DEFAULT 0;
  DECLARE message VARCHAR(2048) CHARACTER SET utf8mb4;
  DECLARE detail TEXT CHARACTER SET utf8mb4;
  DECLARE CONTINUE HANDLER FOR NOT FOUND SET holder = NULL, held = NULL;
  IF ${passed} IS NOT NULL AND ${passed} = CONCAT(UTC_TIMESTAMP(6), ' ', ${PROOF}) THEN
    SET proved = 1;
  ELSEIF ${PROOF} IS NOT NULL AND JSON_CONTAINS_PATH(${PROOF}, 'one', ${path}) THEN
    SELECT l.leader_id, l.term INTO holder, held FROM ${leaderRow} LOCK IN SHARE MODE;
    SET proved = COALESCE(holder IS NOT NULL AND JSON_CONTAINS(${PROOF}, JSON_OBJECT(${target}, JSON_ARRAY(held + 0, holder))), 0);
    IF proved = 1 THEN
      SET ${passed} = CONCAT(UTC_TIMESTAMP(6), ' ', ${PROOF});
    END IF;
  ELSE
    SELECT l.leader_id, l.term INTO holder, held FROM ${leaderRow};
  END IF;
  IF COALESCE(proved, 0) <> 1 THEN
    SET detail = JSON_OBJECT('ns', ${target}, 'table', ${text(table.table)}, 'leaderId', holder, 'term', held + 0,
      'provedBy', JSON_UNQUOTE(JSON_EXTRACT(${PROOF}, CONCAT(${path}, '[1]'))));
    SET message = CONCAT('gemstone-utils: ${event} on guarded table ', ${text(table.table)},
      ' refused: this transaction has not proved the live leadership of namespace ', JSON_QUOTE(${target}), '.');
    SET message = LEFT(CONCAT(LEFT(message, GREATEST(0, 502 - CHAR_LENGTH(detail))), ' Detail: ', detail), 512);
    SIGNAL SQLSTATE '45000' SET MESSAGE_TEXT = message, MYSQL_ERRNO = ${REFUSED_ERRNO};
  END IF;
END`;
}

/** Runs `statements` in the DDL's `sql_mode`, and gives the session its own back (on failure too). */
async function inDdlMode(context: DbContext, m: EntityManager, statements: string[]): Promise<void> {
  const [saved] = await execute<{ mode: string }>(context, m, sql`SELECT @@SESSION.sql_mode AS mode`);
  await execute(context, m, sql`SET SESSION sql_mode = ${DDL_SQL_MODE}`);
  try {
    for (const statement of statements) await execute(context, m, sql`${raw(statement)}`);
  } finally {
    await execute(context, m, sql`SET SESSION sql_mode = ${saved!.mode}`);
  }
}

/** A trigger name unique to this guard (see `guardTriggerName`). */
function triggerName(leaders: { db: string; table: string }, table: { db: string; table: string }, letter: string): string {
  return guardTriggerName(`${leaders.db}.${leaders.table}`, `${table.db}.${table.table}`, letter);
}

export const mysqlGuards: GuardParts = {
  proofColumns,

  async afterProof(context, m) {
    const runner = m.queryRunner;
    if (runner?.isTransactionActive) {
      provedRunners.add(runner);
      subscribeOnce(context.dataSource, ProofEnds);
      return;
    }
    // Outside a TypeORM transaction nothing would end it: a proof there proves nothing.
    await execute(context, m, sql`SET ${raw(PROOF)} = NULL`);
  },

  async guard(context, m, target, ns) {
    const table = await resolve(context, m, target);
    if (table === undefined) throw new ValidationError('table', `names no table the connection can see (${JSON.stringify(target.table)} in the connection's database): create it first`);
    const leaders = await leaderTableOf(context, m);
    const mark = installationMark(leaders);
    const old = await triggersOn(context, m, mark, table);
    const created: string[] = [];
    // The new guard first, then the old one dropped: the table is never unguarded in between.
    try {
      for (const [event, letter] of EVENTS) {
        const name = triggerName(leaders, table, letter);
        await inDdlMode(context, m, [triggerDdl(name, event, table, leaders, ns, mark)]);
        created.push(name);
      }
    } catch (error) {
      for (const name of created) await execute(context, m, sql`${raw(`DROP TRIGGER IF EXISTS ${id(table.db)}.${id(name)}`)}`).catch(() => undefined);
      throw error;
    }
    for (const name of old) await execute(context, m, sql`${raw(`DROP TRIGGER IF EXISTS ${id(table.db)}.${id(name)}`)}`);
  },

  async unguard(context, m, target) {
    const table = await resolve(context, m, target);
    if (table === undefined) return false;
    const names = await triggersOn(context, m, installationMark(await leaderTableOf(context, m)), table);
    for (const name of names) await execute(context, m, sql`${raw(`DROP TRIGGER IF EXISTS ${id(table.db)}.${id(name)}`)}`);
    return names.length > 0;
  },

  async list(context, m) {
    const mark = installationMark(await leaderTableOf(context, m));
    const rows = await execute<{ tbl: string; body: string }>(
      context,
      m,
      sql`SELECT EVENT_OBJECT_TABLE AS tbl, ACTION_STATEMENT AS body FROM information_schema.TRIGGERS
WHERE EVENT_OBJECT_SCHEMA = DATABASE() AND EVENT_MANIPULATION = 'INSERT' AND LOCATE(${mark}, ACTION_STATEMENT) > 0
ORDER BY EVENT_OBJECT_TABLE`,
    );
    return markedGuards(rows, mark);
  },

  refusal(error) {
    const e = driverError(error);
    if (Number(e['errno']) !== REFUSED_ERRNO || e['sqlState'] !== '45000') return undefined;
    const d = refusalDetail(String(e['sqlMessage'] ?? e['message'] ?? ''));
    if (!d) return undefined;
    const text = (value: unknown) => (value === null || value === undefined ? null : String(value));
    return { ns: String(d['ns']), table: String(d['table']), leaderId: text(d['leaderId']), term: d['term'] === null || d['term'] === undefined ? null : Number(d['term']), provedBy: text(d['provedBy']) };
  },
};
