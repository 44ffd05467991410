import type { EntityManager } from 'typeorm';
import type { DbContext } from '../../db/context';
import { execute } from '../../db/session';
import { raw, sql, SqlFragment } from '../../db/sql';
import { installInOneTransaction } from '../../election/schema';
import { CANDIDATE_TABLE, candidateIndexName, HISTORY_TABLE, historyIndexName, LEADER_TABLE, objectName, quotedName, RUN_TABLE, runIndexName, runNsIndexName, TableNames } from '../../election/tables';
import type { SchemaParts } from '../contract/schema';

/**
 * A constraint or index name: quoted when it is no bare identifier (a prefix like `my-app_`).
 * SQLite keeps the DDL text as written, and earlier versions wrote these names bare: a bare name
 * stays bare, so a database they created and a fresh one have the same schema text.
 */
const named = (name: string) => (/^[A-Za-z_][A-Za-z0-9_]*$/.test(name) ? raw(name) : quotedName(name, '"'));

/** Whether step 1's candidate index is still there (step 4 drops it). */
async function sqliteIndexPresent(context: DbContext, manager: EntityManager): Promise<boolean> {
  const rows = await execute(context, manager, sql`SELECT COUNT(*) AS n FROM sqlite_master WHERE type = 'index' AND name = ${candidateIndexName(context)}`);
  return Number(rows[0]?.n) > 0;
}

/** SQLite: the election schema (see `election/schema.ts` for the steps). */
export const sqliteSchema: SchemaParts = {
  /** TypeORM's datetime form: UTC text 'YYYY-MM-DD HH:MM:SS.SSS', which sorts in time order. */
  tableStatements(names: TableNames): SqlFragment[] {
    const candidate = names.table(CANDIDATE_TABLE);
    const leader = names.table(LEADER_TABLE);
    const candidatePk = named(objectName('PK', names.tableName(CANDIDATE_TABLE)));
    const leaderPk = named(objectName('PK', names.tableName(LEADER_TABLE)));
    const termCheck = named(objectName('CHK', names.tableName(LEADER_TABLE), '_term'));
    const index = named(candidateIndexName(names));
    return [
      sql`CREATE TABLE IF NOT EXISTS ${candidate} (
  ns varchar(255) NOT NULL,
  candidate_id varchar(36) NOT NULL,
  last_heartbeat_at datetime NOT NULL,
  expires_at datetime NOT NULL,
  CONSTRAINT ${candidatePk} PRIMARY KEY (ns, candidate_id)
)`,
      sql`CREATE INDEX IF NOT EXISTS ${index} ON ${candidate} (ns, expires_at)`,
      sql`CREATE TABLE IF NOT EXISTS ${leader} (
  ns varchar(255) NOT NULL,
  leader_id varchar(36) NULL,
  lease_expires_at datetime NULL,
  updated_at datetime NOT NULL,
  term bigint NOT NULL DEFAULT 0,
  CONSTRAINT ${leaderPk} PRIMARY KEY (ns),
  CONSTRAINT ${termCheck} CHECK (term >= 0)
)`,
    ];
  },

  identityColumnTypes: { metadata: 'text NULL', priority: 'integer NOT NULL DEFAULT 0', eligible: 'boolean NOT NULL DEFAULT 1' },

  /** SQLite's ALTER TABLE adds or drops one column per statement (inside the caller's transaction). */
  alterOneColumnAtATime: true,

  historyStatements(names: TableNames): SqlFragment[] {
    const history = names.table(HISTORY_TABLE);
    const historyPk = named(objectName('PK', names.tableName(HISTORY_TABLE)));
    const index = named(historyIndexName(names));
    return [
      sql`CREATE TABLE IF NOT EXISTS ${history} (
  ns varchar(255) NOT NULL,
  term bigint NOT NULL,
  leader_id varchar(36) NOT NULL,
  acquired_at datetime NOT NULL,
  ended_at datetime NULL,
  end_reason varchar(16) NULL,
  CONSTRAINT ${historyPk} PRIMARY KEY (ns, term)
)`,
      sql`CREATE INDEX IF NOT EXISTS ${index} ON ${history} (ended_at)`,
    ];
  },

  runStatements(names: TableNames): SqlFragment[] {
    const runs = names.table(RUN_TABLE);
    const runPk = named(objectName('PK', names.tableName(RUN_TABLE)));
    const index = named(runIndexName(names));
    const nsIndex = named(runNsIndexName(names));
    return [
      sql`CREATE TABLE IF NOT EXISTS ${runs} (
  ns varchar(255) NOT NULL,
  name varchar(100) NOT NULL,
  slot datetime NOT NULL,
  state varchar(16) NOT NULL,
  attempt integer NOT NULL,
  term bigint NOT NULL,
  candidate_id varchar(36) NOT NULL,
  started_at datetime NULL,
  finished_at datetime NULL,
  error text NULL,
  CONSTRAINT ${runPk} PRIMARY KEY (ns, name, slot)
)`,
      sql`CREATE INDEX IF NOT EXISTS ${index} ON ${runs} (slot DESC, ns, name, finished_at)`,
      sql`CREATE INDEX IF NOT EXISTS ${nsIndex} ON ${runs} (ns, slot DESC, name)`,
    ];
  },

  candidateColumns(context: DbContext): SqlFragment {
    return sql`SELECT name FROM pragma_table_info(${context.tableName(CANDIDATE_TABLE)})`;
  },

  async firstStepPresent(context: DbContext, manager: EntityManager): Promise<boolean> {
    const [candidate, leader] = [CANDIDATE_TABLE, LEADER_TABLE].map((name) => context.tableName(name));
    const rows = await execute(context, manager, sql`SELECT COUNT(*) AS n FROM sqlite_master WHERE type = 'table' AND name IN (${candidate}, ${leader})`);
    return Number(rows[0]?.n) === 2;
  },

  async relationsPresent(context: DbContext, manager: EntityManager): Promise<boolean> {
    const names = [CANDIDATE_TABLE, LEADER_TABLE, HISTORY_TABLE, RUN_TABLE].map((name) => context.tableName(name));
    const rows = await execute(
      context,
      manager,
      sql`SELECT COUNT(*) AS n FROM sqlite_master WHERE (type = 'table' AND name IN (${names[0]}, ${names[1]}, ${names[2]}, ${names[3]}))
  OR (type = 'index' AND name IN (${historyIndexName(context)}, ${runIndexName(context)}, ${runNsIndexName(context)}))`,
    );
    return Number(rows[0]?.n) === names.length + 3;
  },

  async leanHeartbeatStatements(context: DbContext, manager: EntityManager): Promise<SqlFragment[]> {
    if (!(await sqliteIndexPresent(context, manager))) return [];
    return [sql`DROP INDEX IF EXISTS ${named(candidateIndexName(context))}`];
  },

  async leanHeartbeatUndoStatements(context: DbContext, manager: EntityManager): Promise<SqlFragment[]> {
    if (await sqliteIndexPresent(context, manager)) return [];
    return [sql`CREATE INDEX IF NOT EXISTS ${named(candidateIndexName(context))} ON ${context.table(CANDIDATE_TABLE)} (ns, expires_at)`];
  },

  /** Transactional DDL: every step or none; SQLite's write lock serializes installers by itself. */
  flavorOf: async () => undefined,
  withDdlLockTimeout: (_runner, _timeoutMs, work) => work(),
  install(dataSource, context) {
    return installInOneTransaction(dataSource, context, async () => undefined);
  },
};
