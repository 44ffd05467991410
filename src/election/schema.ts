import type { DataSource, EntityManager, QueryRunner } from 'typeorm';
import { contextOf, DbContext } from '../db/context';
import type { DialectName } from '../databases/dialect';
import { mysqlFlavorOf, type MysqlFlavor, type SchemaParts } from '../databases/contract/schema';
import { partsNamed, partsOf } from '../databases/parts';
import type { TableInstaller } from '../db/registry';
import { execute, inTransaction } from '../db/session';
import { raw, RawSql, sql, SqlFragment } from '../db/sql';
import { ElectionCandidate } from '../../entities/ElectionCandidate';
import { ElectionHistory } from '../../entities/ElectionHistory';
import { ElectionLeader } from '../../entities/ElectionLeader';
import { ElectionRun } from '../../entities/ElectionRun';
import { withDdlLockRetries } from './ddl-lock';
import { CANDIDATE_TABLE, HISTORY_TABLE, IDENTITY_COLUMNS, IdentityColumn, LEADER_TABLE, RUN_TABLE, TableNames } from './tables';

export {
  CANDIDATE_TABLE,
  LEADER_TABLE,
  HISTORY_TABLE,
  RUN_TABLE,
  CANDIDATE_INDEX,
  HISTORY_INDEX,
  RUN_INDEX,
  RUN_NS_INDEX,
  objectName,
  candidateIndexName,
  historyIndexName,
  runIndexName,
  runNsIndexName,
  IDENTITY_COLUMNS,
} from './tables';
export type { TableNames, IdentityColumn } from './tables';
export type { MysqlFlavor } from '../databases/contract/schema';
export { DDL_LOCK_TIMEOUT_MS, DDL_LOCK_ATTEMPTS } from './ddl-lock';

/*
 * The schema is built in steps, each the DDL of one migration, and `initDb` runs the same steps
 * in order: so the migrations produce exactly what `initDb` creates, and a database created by
 * an older version is brought forward by the steps it lacks.
 *   1. `schemaStatements`: the 0.1.0 tables (first migration);
 *   2. `identityStatements`: candidate metadata, priority and eligibility, the history table
 *      (second migration);
 *   3. the runs table of schedules (third migration): each folder's `runStatements`, which
 *      `initDb` and that migration run through the database's schema part;
 *   4. heartbeats that touch no index (fourth migration): step 1's candidate index on
 *      `(ns, expires_at)` dropped, and on PostgreSQL room left on the candidate and leader
 *      tables' pages (`fillfactor`) for HOT updates: each folder's `leanHeartbeatStatements`.
 * Each database's DDL is in its folder (`src/databases/<db>/schema.ts`); this file composes it.
 */

/**
 * Step 1, the CREATE statements of the 0.1.0 tables (candidate and leader), exactly as 0.1.0
 * shipped them: the first migration runs these, and changing them would change its schema.
 * `flavor` matters on MySQL/MariaDB only (default MariaDB).
 */
export function schemaStatements(dialect: DialectName, names: TableNames, flavor?: MysqlFlavor): SqlFragment[] {
  return partsNamed(dialect).schema.tableStatements(names, flavor);
}

/** The DROP statements of the first migration's `down`. */
export function dropStatements(table: (name: string) => RawSql): SqlFragment[] {
  return [sql`DROP TABLE IF EXISTS ${table(LEADER_TABLE)}`, sql`DROP TABLE IF EXISTS ${table(CANDIDATE_TABLE)}`];
}

/**
 * Step 2: adds the candidate columns in `missing` (the caller looked them up: `ALTER TABLE`
 * takes a table lock even when it adds nothing, so it runs only when something is missing) and
 * creates the history table and its index if absent. One ALTER for all columns where the
 * database allows it (PostgreSQL, MySQL: all or none); SQLite adds one column per statement,
 * inside the caller's transaction.
 *
 * Metadata is JSON *text* on every database: the same bytes come back on all three (PostgreSQL
 * `jsonb` would reorder keys, MySQL's `JSON` is a binary type and MariaDB's a LONGTEXT alias),
 * and TypeORM's `text` maps alike on both of its lines. `NOT NULL DEFAULT` on priority and
 * eligibility fills the rows of older versions, whose INSERTs name neither column, and is an
 * instant (metadata-only) ADD COLUMN on PostgreSQL 11+ and InnoDB.
 */
export function identityStatements(dialect: DialectName, names: TableNames, missing: readonly IdentityColumn[], flavor?: MysqlFlavor): SqlFragment[] {
  return identityStatementsOf(partsNamed(dialect).schema, names, missing, flavor);
}

/** {@link identityStatements} of the database whose schema parts are `schema` (for the database folders). */
export function identityStatementsOf(schema: SchemaParts, names: TableNames, missing: readonly IdentityColumn[], flavor?: MysqlFlavor): SqlFragment[] {
  const candidate = names.table(CANDIDATE_TABLE);
  const types = schema.identityColumnTypes;
  const columns = IDENTITY_COLUMNS.filter((column) => missing.includes(column));
  const statements: SqlFragment[] = [];
  if (columns.length > 0) {
    if (schema.alterOneColumnAtATime) {
      for (const column of columns) statements.push(sql`ALTER TABLE ${candidate} ADD COLUMN ${raw(`${column} ${types[column]}`)}`);
    } else {
      statements.push(sql`ALTER TABLE ${candidate} ${raw(columns.map((column) => `ADD COLUMN ${column} ${types[column]}`).join(', '))}`);
    }
  }
  statements.push(...schema.historyStatements(names, flavor));
  return statements;
}

/** The second migration's `down`: the history table and the candidate columns go. */
export function identityDropStatements(dialect: DialectName, names: TableNames, present: readonly IdentityColumn[]): SqlFragment[] {
  const candidate = names.table(CANDIDATE_TABLE);
  const columns = IDENTITY_COLUMNS.filter((column) => present.includes(column));
  const drops =
    columns.length === 0
      ? []
      : partsNamed(dialect).schema.alterOneColumnAtATime
        ? columns.map((column) => sql`ALTER TABLE ${candidate} DROP COLUMN ${raw(column)}`)
        : [sql`ALTER TABLE ${candidate} ${raw(columns.map((column) => `DROP COLUMN ${column}`).join(', '))}`];
  return [sql`DROP TABLE IF EXISTS ${names.table(HISTORY_TABLE)}`, ...drops];
}

/** The statements of step 4 that the tables still lack (see `SchemaParts.leanHeartbeatStatements`). */
export function leanHeartbeatStatements(context: DbContext, session: EntityManager | QueryRunner): Promise<SqlFragment[]> {
  const manager = 'startTransaction' in session ? session.manager : session;
  return partsOf(context).schema.leanHeartbeatStatements(context, manager);
}

/** The fourth migration's `down`: step 1's candidate index back. */
export function leanHeartbeatUndoStatements(context: DbContext, session: EntityManager | QueryRunner): Promise<SqlFragment[]> {
  const manager = 'startTransaction' in session ? session.manager : session;
  return partsOf(context).schema.leanHeartbeatUndoStatements(context, manager);
}

/** The third migration's `down`: the runs table goes (its index with it). */
export function runDropStatements(names: TableNames): SqlFragment[] {
  return [sql`DROP TABLE IF EXISTS ${names.table(RUN_TABLE)}`];
}

/** Which of the step-2 candidate columns the candidate table has (none when it is missing). */
export async function identityColumnsPresent(context: DbContext, session: EntityManager | QueryRunner): Promise<IdentityColumn[]> {
  const manager = 'startTransaction' in session ? session.manager : session;
  const rows = await execute(context, manager, partsOf(context).schema.candidateColumns(context));
  const names = new Set(rows.map((row) => String(row.name ?? row.NAME ?? row.COLUMN_NAME)));
  return IDENTITY_COLUMNS.filter((column) => names.has(column));
}

/** The step-2 candidate columns the candidate table lacks. */
export async function identityColumnsMissing(context: DbContext, session: EntityManager | QueryRunner): Promise<IdentityColumn[]> {
  const present = await identityColumnsPresent(context, session);
  return IDENTITY_COLUMNS.filter((column) => !present.includes(column));
}

/** MariaDB or MySQL, for the collation name. */
export async function mysqlFlavor(manager: Pick<EntityManager, 'query'>): Promise<MysqlFlavor> {
  const rows: Array<Record<string, unknown>> = await manager.query('SELECT VERSION() AS version');
  return mysqlFlavorOf(rows[0]?.version);
}

/**
 * Whether every table, index and column of every step exists: then `initDb` runs no DDL at all
 * (so roles without DDL rights can call it once the schema is in place).
 */
async function schemaPresent(context: DbContext, manager: EntityManager): Promise<boolean> {
  const relations = await partsOf(context).schema.relationsPresent(context, manager);
  return (
    relations &&
    (await identityColumnsMissing(context, manager)).length === 0 &&
    (await partsOf(context).schema.leanHeartbeatStatements(context, manager)).length === 0
  );
}

/**
 * Every step in one transaction, for the databases whose DDL is transactional (PostgreSQL,
 * SQLite): every step or none. `prepare` runs first in that transaction (PostgreSQL serializes
 * installers there and bounds its lock waits; SQLite's write lock serializes installers by
 * itself). Missing columns are looked up inside it, under that lock. Retried while a DDL lock
 * wait runs out.
 */
export async function installInOneTransaction(
  dataSource: DataSource,
  context: DbContext,
  prepare: (manager: EntityManager) => Promise<void>,
): Promise<void> {
  const { ddl, schema } = partsOf(context);
  await withDdlLockRetries(
    (error) => ddl.isLockTimeout(error),
    () =>
      inTransaction(dataSource, undefined, async (manager) => {
        await prepare(manager);
        // Step 1 only on a database without its tables: run again, its CREATE INDEX IF NOT EXISTS
        // would build the candidate index that step 4 dropped, only for step 4 to drop it again.
        if (!(await schema.firstStepPresent(context, manager))) {
          for (const statement of schema.tableStatements(context)) await execute(context, manager, statement);
        }
        const missing = await identityColumnsMissing(context, manager);
        for (const statement of identityStatementsOf(schema, context, missing)) await execute(context, manager, statement);
        for (const statement of schema.runStatements(context)) await execute(context, manager, statement);
        for (const statement of await schema.leanHeartbeatStatements(context, manager)) await execute(context, manager, statement);
      }),
  );
}

async function install(dataSource: DataSource): Promise<void> {
  const context = contextOf(dataSource);
  const { ddl, schema } = partsOf(context);
  const present = await ddl.isolated(dataSource, () => schemaPresent(context, dataSource.manager));
  if (present) return; // no DDL at all: works for roles without DDL rights once the tables exist
  await schema.install(dataSource, context);
}

/** Registered on GemstoneDB: what `initDb({ createTables: true })` runs for the election tables. */
export const electionTables: TableInstaller = Object.freeze({
  name: 'gemstone-utils/election',
  entities: [ElectionCandidate, ElectionLeader, ElectionHistory, ElectionRun],
  install,
});
