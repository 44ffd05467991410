import type { EntityManager } from 'typeorm';
import type { DbContext } from '../../db/context';
import { execute } from '../../db/session';
import { raw, sql, SqlFragment } from '../../db/sql';
import { DDL_LOCK_TIMEOUT_MS } from '../../election/ddl-lock';
import { installInOneTransaction } from '../../election/schema';
import { CANDIDATE_TABLE, candidateIndexName, HISTORY_TABLE, historyIndexName, LEADER_TABLE, objectName, quotedName, RUN_TABLE, runIndexName, runNsIndexName, TableNames } from '../../election/tables';
import type { SchemaParts } from '../contract/schema';

/** A constraint or index name, quoted for this database. */
const named = (name: string) => quotedName(name, '"');

/** Serializes concurrent installs on PostgreSQL, where two racing CREATE TABLE IF NOT EXISTS can fail. */
const PG_INSTALL_LOCK_KEY = 7_455_301_121;

/**
 * Step 4's `fillfactor` of the candidate and leader tables: 30 % of each page left free when rows
 * are inserted, room for the next version of its rows, so that their updates stay HOT as the
 * tables grow (a heartbeat's version is about 100 bytes; metadata beyond 2 kB lives in TOAST and
 * is not copied when unchanged).
 */
export const HEARTBEAT_FILLFACTOR = 70;

/**
 * Where step 4 stands: the old index still there; each table's `fillfactor` set. A `fillfactor`
 * someone set otherwise is theirs to choose and stays.
 */
async function heartbeatState(context: DbContext, manager: EntityManager): Promise<{ indexed: boolean; candidateRoomy: boolean; leaderRoomy: boolean }> {
  const index = context.qualified(CANDIDATE_TABLE, candidateIndexName(context)).text;
  const roomy = (table: string) =>
    sql`EXISTS (SELECT 1 FROM pg_class c, unnest(c.reloptions) AS o(option) WHERE c.oid = to_regclass(${context.table(table).text}) AND o.option LIKE 'fillfactor=%')`;
  const [row] = await execute(
    context,
    manager,
    sql`SELECT to_regclass(${index}) IS NOT NULL AS indexed, ${roomy(CANDIDATE_TABLE)} AS candidate_roomy, ${roomy(LEADER_TABLE)} AS leader_roomy`,
  );
  return { indexed: row?.indexed === true, candidateRoomy: row?.candidate_roomy === true, leaderRoomy: row?.leader_roomy === true };
}

/** PostgreSQL: the election schema (see `election/schema.ts` for the steps). */
export const postgresSchema: SchemaParts = {
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
  last_heartbeat_at timestamptz NOT NULL,
  expires_at timestamptz NOT NULL,
  CONSTRAINT ${candidatePk} PRIMARY KEY (ns, candidate_id)
)`,
      sql`CREATE INDEX IF NOT EXISTS ${index} ON ${candidate} (ns, expires_at)`,
      sql`CREATE TABLE IF NOT EXISTS ${leader} (
  ns varchar(255) NOT NULL,
  leader_id varchar(36) NULL,
  lease_expires_at timestamptz NULL,
  updated_at timestamptz NOT NULL,
  term bigint NOT NULL DEFAULT 0,
  CONSTRAINT ${leaderPk} PRIMARY KEY (ns),
  CONSTRAINT ${termCheck} CHECK (term >= 0)
)`,
    ];
  },

  identityColumnTypes: { metadata: 'text NULL', priority: 'integer NOT NULL DEFAULT 0', eligible: 'boolean NOT NULL DEFAULT true' },

  /** One ALTER adds all columns, or none. */
  alterOneColumnAtATime: false,

  historyStatements(names: TableNames): SqlFragment[] {
    const history = names.table(HISTORY_TABLE);
    const historyPk = named(objectName('PK', names.tableName(HISTORY_TABLE)));
    const index = named(historyIndexName(names));
    return [
      sql`CREATE TABLE IF NOT EXISTS ${history} (
  ns varchar(255) NOT NULL,
  term bigint NOT NULL,
  leader_id varchar(36) NOT NULL,
  acquired_at timestamptz NOT NULL,
  ended_at timestamptz NULL,
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
  slot timestamptz NOT NULL,
  state varchar(16) NOT NULL,
  attempt integer NOT NULL,
  term bigint NOT NULL,
  candidate_id varchar(36) NOT NULL,
  started_at timestamptz NULL,
  finished_at timestamptz NULL,
  error text NULL,
  CONSTRAINT ${runPk} PRIMARY KEY (ns, name, slot)
)`,
      sql`CREATE INDEX IF NOT EXISTS ${index} ON ${runs} (slot DESC, ns, name, finished_at)`,
      sql`CREATE INDEX IF NOT EXISTS ${nsIndex} ON ${runs} (ns, slot DESC, name)`,
    ];
  },

  /** pg_attribute, not information_schema: the latter hides columns the role has no rights on. */
  candidateColumns(context: DbContext): SqlFragment {
    return sql`SELECT attname AS name FROM pg_attribute WHERE attrelid = to_regclass(${context.table(CANDIDATE_TABLE).text}) AND attnum > 0 AND NOT attisdropped`;
  },

  async firstStepPresent(context: DbContext, manager: EntityManager): Promise<boolean> {
    const [candidate, leader] = [CANDIDATE_TABLE, LEADER_TABLE].map((name) => context.table(name).text);
    const rows = await execute(context, manager, sql`SELECT (to_regclass(${candidate}) IS NOT NULL AND to_regclass(${leader}) IS NOT NULL) AS present`);
    return rows[0]?.present === true;
  },

  async relationsPresent(context: DbContext, manager: EntityManager): Promise<boolean> {
    const [candidate, leader, history] = [CANDIDATE_TABLE, LEADER_TABLE, HISTORY_TABLE].map((name) => context.table(name).text);
    const historyIndex = context.qualified(HISTORY_TABLE, historyIndexName(context)).text;
    const runs = context.table(RUN_TABLE).text;
    const runIndex = context.qualified(RUN_TABLE, runIndexName(context)).text;
    const runNsIndex = context.qualified(RUN_TABLE, runNsIndexName(context)).text;
    const rows = await execute(
      context,
      manager,
      sql`SELECT (to_regclass(${candidate}) IS NOT NULL AND to_regclass(${leader}) IS NOT NULL
  AND to_regclass(${history}) IS NOT NULL AND to_regclass(${historyIndex}) IS NOT NULL
  AND to_regclass(${runs}) IS NOT NULL AND to_regclass(${runIndex}) IS NOT NULL AND to_regclass(${runNsIndex}) IS NOT NULL) AS present`,
    );
    return rows[0]?.present === true;
  },

  async leanHeartbeatStatements(context: DbContext, manager: EntityManager): Promise<SqlFragment[]> {
    const state = await heartbeatState(context, manager);
    const candidate = context.table(CANDIDATE_TABLE);
    const leader = context.table(LEADER_TABLE);
    const fillfactor = raw(`(fillfactor = ${HEARTBEAT_FILLFACTOR})`);
    return [
      ...(state.indexed ? [sql`DROP INDEX IF EXISTS ${context.qualified(CANDIDATE_TABLE, candidateIndexName(context))}`] : []),
      ...(state.candidateRoomy ? [] : [sql`ALTER TABLE ${candidate} SET ${fillfactor}`]),
      ...(state.leaderRoomy ? [] : [sql`ALTER TABLE ${leader} SET ${fillfactor}`]),
    ];
  },

  async leanHeartbeatUndoStatements(context: DbContext, manager: EntityManager): Promise<SqlFragment[]> {
    const state = await heartbeatState(context, manager);
    const index = named(candidateIndexName(context));
    return [
      ...(state.indexed ? [] : [sql`CREATE INDEX IF NOT EXISTS ${index} ON ${context.table(CANDIDATE_TABLE)} (ns, expires_at)`]),
      sql`ALTER TABLE ${context.table(CANDIDATE_TABLE)} RESET (fillfactor)`,
      sql`ALTER TABLE ${context.table(LEADER_TABLE)} RESET (fillfactor)`,
    ];
  },

  /**
   * Transactional DDL: every step or none. The transaction-scoped advisory lock is released at
   * commit, so it is safe behind PgBouncer; the ALTER's lock wait is bounded by `lock_timeout`.
   */
  flavorOf: async () => undefined,
  /** The session's `lock_timeout` for the work, restored after it (see the identity migration). */
  async withDdlLockTimeout(runner, timeoutMs, work) {
    const [saved] = (await runner.query("SELECT current_setting('lock_timeout') AS t")) as Array<{ t: string }>;
    await runner.query("SELECT set_config('lock_timeout', $1, false)", [`${timeoutMs}ms`]);
    try {
      return await work();
    } finally {
      // After a failed ALTER the transaction is aborted and refuses this; its rollback restores the setting.
      await runner.query("SELECT set_config('lock_timeout', $1, false)", [saved?.t ?? '0']).catch(() => undefined);
    }
  },
  install(dataSource, context) {
    return installInOneTransaction(dataSource, context, async (manager) => {
      await execute(context, manager, sql`SELECT pg_advisory_xact_lock(${PG_INSTALL_LOCK_KEY})`);
      await execute(context, manager, sql`SELECT set_config('lock_timeout', ${`${DDL_LOCK_TIMEOUT_MS}ms`}, true)`);
    });
  },
};
