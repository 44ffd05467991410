import { createHash } from 'crypto';
import type { DataSource, EntityManager, QueryRunner } from 'typeorm';
import { contextOf, DbContext } from '../db/context';
import type { DialectName } from '../databases/dialect';
import { endImplicitTransaction } from '../databases/mysql/session';
import type { TableInstaller } from '../db/registry';
import { execute, inTransaction } from '../db/session';
import { outsideTransactions } from '../databases/sqlite/atomic';
import { raw, RawSql, sql, SqlFragment } from '../db/sql';
import { ElectionCandidate } from '../../entities/ElectionCandidate';
import { ElectionHistory } from '../../entities/ElectionHistory';
import { ElectionLeader } from '../../entities/ElectionLeader';

export const CANDIDATE_TABLE = 'gemstone_election_candidate';
export const LEADER_TABLE = 'gemstone_election_leader';
export const HISTORY_TABLE = 'gemstone_election_history';
export const CANDIDATE_INDEX = 'IDX_gemstone_election_candidate_ns_expires_at';
export const HISTORY_INDEX = 'IDX_gemstone_election_history_ended_at';

/** PostgreSQL truncates identifiers beyond 63 bytes (MySQL refuses beyond 64). */
const MAX_IDENTIFIER_LENGTH = 63;

/**
 * A constraint or index name derived from the real table name, so two `entityPrefix`es (or
 * naming strategies) in one schema never collide. Without a prefix it is the historical name.
 * Beyond 63 bytes the table part is shortened and a hash of the full name keeps it unique.
 */
export function objectName(kind: 'PK' | 'CHK' | 'IDX', table: string, suffix = ''): string {
  const full = `${kind}_${table}${suffix}`;
  if (Buffer.byteLength(full) <= MAX_IDENTIFIER_LENGTH) return full;
  const hash = createHash('sha256').update(full).digest('hex').slice(0, 10);
  let head = `${kind}_${table}`;
  while (Buffer.byteLength(`${head}_${hash}`) > MAX_IDENTIFIER_LENGTH) head = head.slice(0, -1);
  return `${head}_${hash}`;
}

/** The names the DDL needs: the library's table names as this DataSource resolves them. */
export type TableNames = Pick<DbContext, 'table' | 'tableName'>;

/** The candidate index's name on a DataSource. */
export function candidateIndexName(names: Pick<DbContext, 'tableName'>): string {
  return objectName('IDX', names.tableName(CANDIDATE_TABLE), '_ns_expires_at');
}

/**
 * MySQL/MariaDB compare strings case- and trailing-space-insensitively by default, which would
 * merge namespaces `"Jobs"`, `"jobs"` and `"jobs "`. A binary no-pad collation keeps them apart,
 * as PostgreSQL and SQLite do; its name differs between the two servers.
 */
export type MysqlFlavor = 'mariadb' | 'mysql';
const NS_COLLATION: Record<MysqlFlavor, string> = { mariadb: 'utf8mb4_nopad_bin', mysql: 'utf8mb4_0900_bin' };

/** The history index's name on a DataSource. */
export function historyIndexName(names: Pick<DbContext, 'tableName'>): string {
  return objectName('IDX', names.tableName(HISTORY_TABLE), '_ended_at');
}

/*
 * The schema is built in steps, each the DDL of one migration, and `initDb` runs the same steps
 * in order: so the migrations produce exactly what `initDb` creates, and a database created by
 * an older version is brought forward by the steps it lacks.
 *   1. `schemaStatements`: the 0.1.0 tables (first migration);
 *   2. `identityStatements`: candidate metadata, priority and eligibility, the history table
 *      (second migration).
 */

/**
 * Step 1, the CREATE statements of the 0.1.0 tables (candidate and leader), exactly as 0.1.0
 * shipped them: the first migration runs these, and changing them would change its schema.
 */
export function schemaStatements(dialect: DialectName, names: TableNames, flavor: MysqlFlavor = 'mariadb'): SqlFragment[] {
  const candidate = names.table(CANDIDATE_TABLE);
  const leader = names.table(LEADER_TABLE);
  const candidatePk = raw(objectName('PK', names.tableName(CANDIDATE_TABLE)));
  const leaderPk = raw(objectName('PK', names.tableName(LEADER_TABLE)));
  const termCheck = raw(objectName('CHK', names.tableName(LEADER_TABLE), '_term'));
  const index = raw(candidateIndexName(names));
  switch (dialect) {
    case 'postgres':
      return [
        sql`CREATE TABLE IF NOT EXISTS ${candidate} (
  ns varchar(255) NOT NULL,
  candidate_id varchar(36) NOT NULL,
  last_heartbeat_at timestamptz NOT NULL,
  expires_at timestamptz NOT NULL,
  CONSTRAINT "${candidatePk}" PRIMARY KEY (ns, candidate_id)
)`,
        sql`CREATE INDEX IF NOT EXISTS "${index}" ON ${candidate} (ns, expires_at)`,
        sql`CREATE TABLE IF NOT EXISTS ${leader} (
  ns varchar(255) NOT NULL,
  leader_id varchar(36) NULL,
  lease_expires_at timestamptz NULL,
  updated_at timestamptz NOT NULL,
  term bigint NOT NULL DEFAULT 0,
  CONSTRAINT "${leaderPk}" PRIMARY KEY (ns),
  CONSTRAINT "${termCheck}" CHECK (term >= 0)
)`,
      ];
    case 'mysql': {
      const ns = raw(`varchar(255) CHARACTER SET utf8mb4 COLLATE ${NS_COLLATION[flavor]} NOT NULL`);
      const uuid = raw('varchar(36) CHARACTER SET ascii COLLATE ascii_bin');
      return [
        sql`CREATE TABLE IF NOT EXISTS ${candidate} (
  ns ${ns},
  candidate_id ${uuid} NOT NULL,
  last_heartbeat_at datetime(6) NOT NULL,
  expires_at datetime(6) NOT NULL,
  PRIMARY KEY (ns, candidate_id),
  KEY ${index} (ns, expires_at)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4`,
        sql`CREATE TABLE IF NOT EXISTS ${leader} (
  ns ${ns},
  leader_id ${uuid} NULL,
  lease_expires_at datetime(6) NULL,
  updated_at datetime(6) NOT NULL,
  term bigint NOT NULL DEFAULT 0,
  PRIMARY KEY (ns),
  CONSTRAINT ${termCheck} CHECK (term >= 0)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4`,
      ];
    }
    case 'sqlite':
      // TypeORM's datetime form: UTC text 'YYYY-MM-DD HH:MM:SS.SSS', which sorts in time order.
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
  }
}

/** The DROP statements of the first migration's `down`. */
export function dropStatements(table: (name: string) => RawSql): SqlFragment[] {
  return [sql`DROP TABLE IF EXISTS ${table(LEADER_TABLE)}`, sql`DROP TABLE IF EXISTS ${table(CANDIDATE_TABLE)}`];
}

/** The candidate columns step 2 adds, in the order it adds them (appended after `expires_at`). */
export const IDENTITY_COLUMNS = ['metadata', 'priority', 'eligible'] as const;
export type IdentityColumn = (typeof IDENTITY_COLUMNS)[number];

/**
 * Their definitions. Metadata is JSON *text* on every database: the same bytes come back on all
 * three (PostgreSQL `jsonb` would reorder keys, MySQL's `JSON` is a binary type and MariaDB's a
 * LONGTEXT alias), and TypeORM's `text` maps alike on both of its lines. `NOT NULL DEFAULT` on
 * priority and eligibility fills the rows of older versions, whose INSERTs name neither column,
 * and is an instant (metadata-only) ADD COLUMN on PostgreSQL 11+ and InnoDB.
 */
const IDENTITY_COLUMN_TYPES: Record<DialectName, Record<IdentityColumn, string>> = {
  postgres: { metadata: 'text NULL', priority: 'integer NOT NULL DEFAULT 0', eligible: 'boolean NOT NULL DEFAULT true' },
  mysql: {
    metadata: 'text CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NULL',
    priority: 'int NOT NULL DEFAULT 0',
    eligible: 'boolean NOT NULL DEFAULT 1',
  },
  sqlite: { metadata: 'text NULL', priority: 'integer NOT NULL DEFAULT 0', eligible: 'boolean NOT NULL DEFAULT 1' },
};

/**
 * Step 2: adds the candidate columns in `missing` (the caller looked them up: `ALTER TABLE`
 * takes a table lock even when it adds nothing, so it runs only when something is missing) and
 * creates the history table and its index if absent. One ALTER for all columns where the
 * database allows it (PostgreSQL, MySQL: all or none); SQLite adds one column per statement,
 * inside the caller's transaction.
 */
export function identityStatements(
  dialect: DialectName,
  names: TableNames,
  missing: readonly IdentityColumn[],
  flavor: MysqlFlavor = 'mariadb',
): SqlFragment[] {
  const candidate = names.table(CANDIDATE_TABLE);
  const history = names.table(HISTORY_TABLE);
  const historyPk = raw(objectName('PK', names.tableName(HISTORY_TABLE)));
  const index = raw(historyIndexName(names));
  const types = IDENTITY_COLUMN_TYPES[dialect];
  const columns = IDENTITY_COLUMNS.filter((column) => missing.includes(column));
  const statements: SqlFragment[] = [];
  if (columns.length > 0) {
    if (dialect === 'sqlite') {
      for (const column of columns) statements.push(sql`ALTER TABLE ${candidate} ADD COLUMN ${raw(`${column} ${types[column]}`)}`);
    } else {
      statements.push(sql`ALTER TABLE ${candidate} ${raw(columns.map((column) => `ADD COLUMN ${column} ${types[column]}`).join(', '))}`);
    }
  }
  switch (dialect) {
    case 'postgres':
      statements.push(
        sql`CREATE TABLE IF NOT EXISTS ${history} (
  ns varchar(255) NOT NULL,
  term bigint NOT NULL,
  leader_id varchar(36) NOT NULL,
  acquired_at timestamptz NOT NULL,
  ended_at timestamptz NULL,
  end_reason varchar(16) NULL,
  CONSTRAINT "${historyPk}" PRIMARY KEY (ns, term)
)`,
        sql`CREATE INDEX IF NOT EXISTS "${index}" ON ${history} (ended_at)`,
      );
      break;
    case 'mysql': {
      const ns = raw(`varchar(255) CHARACTER SET utf8mb4 COLLATE ${NS_COLLATION[flavor]} NOT NULL`);
      const ascii = raw('CHARACTER SET ascii COLLATE ascii_bin');
      statements.push(sql`CREATE TABLE IF NOT EXISTS ${history} (
  ns ${ns},
  term bigint NOT NULL,
  leader_id varchar(36) ${ascii} NOT NULL,
  acquired_at datetime(6) NOT NULL,
  ended_at datetime(6) NULL,
  end_reason varchar(16) ${ascii} NULL,
  PRIMARY KEY (ns, term),
  KEY ${index} (ended_at)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4`);
      break;
    }
    case 'sqlite':
      statements.push(
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
      );
      break;
  }
  return statements;
}

/** The second migration's `down`: the history table and the candidate columns go. */
export function identityDropStatements(dialect: DialectName, names: TableNames, present: readonly IdentityColumn[]): SqlFragment[] {
  const candidate = names.table(CANDIDATE_TABLE);
  const columns = IDENTITY_COLUMNS.filter((column) => present.includes(column));
  const drops =
    columns.length === 0
      ? []
      : dialect === 'sqlite'
        ? columns.map((column) => sql`ALTER TABLE ${candidate} DROP COLUMN ${raw(column)}`)
        : [sql`ALTER TABLE ${candidate} ${raw(columns.map((column) => `DROP COLUMN ${column}`).join(', '))}`];
  return [sql`DROP TABLE IF EXISTS ${names.table(HISTORY_TABLE)}`, ...drops];
}

/** Which of the step-2 candidate columns the candidate table has (none when it is missing). */
export async function identityColumnsPresent(context: DbContext, session: EntityManager | QueryRunner): Promise<IdentityColumn[]> {
  const manager = 'startTransaction' in session ? session.manager : session;
  const table = context.tableName(CANDIDATE_TABLE);
  let statement: SqlFragment;
  switch (context.dialect.name) {
    case 'postgres':
      // pg_attribute, not information_schema: the latter hides columns the role has no rights on.
      statement = sql`SELECT attname AS name FROM pg_attribute WHERE attrelid = to_regclass(${context.table(CANDIDATE_TABLE).text}) AND attnum > 0 AND NOT attisdropped`;
      break;
    case 'mysql':
      statement = sql`SELECT column_name AS name FROM information_schema.columns WHERE table_schema = DATABASE() AND table_name = ${table}`;
      break;
    case 'sqlite':
      statement = sql`SELECT name FROM pragma_table_info(${table})`;
      break;
  }
  const rows = await execute(context, manager, statement);
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
  return /mariadb/i.test(String(rows[0]?.version)) ? 'mariadb' : 'mysql';
}

/**
 * Whether every table, index and column of every step exists: then `initDb` runs no DDL at all
 * (so roles without DDL rights can call it once the schema is in place).
 */
async function schemaPresent(context: DbContext, manager: EntityManager): Promise<boolean> {
  const names = [CANDIDATE_TABLE, LEADER_TABLE, HISTORY_TABLE].map((name) => context.tableName(name));
  let relations: boolean;
  switch (context.dialect.name) {
    case 'postgres': {
      const [candidate, leader, history] = [CANDIDATE_TABLE, LEADER_TABLE, HISTORY_TABLE].map((name) => context.table(name).text);
      const index = context.qualified(CANDIDATE_TABLE, candidateIndexName(context)).text;
      const historyIndex = context.qualified(HISTORY_TABLE, historyIndexName(context)).text;
      const rows = await execute(
        context,
        manager,
        sql`SELECT (to_regclass(${candidate}) IS NOT NULL AND to_regclass(${leader}) IS NOT NULL AND to_regclass(${index}) IS NOT NULL
  AND to_regclass(${history}) IS NOT NULL AND to_regclass(${historyIndex}) IS NOT NULL) AS present`,
      );
      relations = rows[0]?.present === true;
      break;
    }
    case 'mysql': {
      const rows = await execute(
        context,
        manager,
        sql`SELECT COUNT(*) AS n FROM information_schema.tables WHERE table_schema = DATABASE() AND table_name IN (${names[0]}, ${names[1]}, ${names[2]})`,
      );
      relations = Number(rows[0]?.n) === names.length && (await mysqlIndexPresent(context, manager));
      break;
    }
    case 'sqlite': {
      const rows = await execute(
        context,
        manager,
        sql`SELECT COUNT(*) AS n FROM sqlite_master WHERE (type = 'table' AND name IN (${names[0]}, ${names[1]}, ${names[2]}))
  OR (type = 'index' AND name IN (${candidateIndexName(context)}, ${historyIndexName(context)}))`,
      );
      relations = Number(rows[0]?.n) === names.length + 2;
      break;
    }
  }
  return relations && (await identityColumnsMissing(context, manager)).length === 0;
}

/** MySQL/MariaDB: the history index is part of its CREATE TABLE; the candidate index may have been dropped. */
async function mysqlIndexPresent(context: DbContext, manager: EntityManager): Promise<boolean> {
  const rows = await execute(
    context,
    manager,
    sql`SELECT COUNT(*) AS n FROM information_schema.statistics WHERE table_schema = DATABASE() AND table_name = ${context.tableName(CANDIDATE_TABLE)} AND index_name = ${candidateIndexName(context)}`,
  );
  return Number(rows[0]?.n) > 0;
}

/** MySQL: ER_DUP_KEYNAME, another process added the same index first. */
const MYSQL_DUPLICATE_KEY_NAME = 1061;
/** MySQL: ER_DUP_FIELDNAME, another process added the same column first. */
const MYSQL_DUPLICATE_COLUMN = 1060;
/** MySQL: ER_LOCK_WAIT_TIMEOUT, also what a metadata-lock wait past `lock_wait_timeout` raises. */
const MYSQL_LOCK_WAIT_TIMEOUT = 1205;
/** PostgreSQL: lock_not_available, a lock wait past `lock_timeout`. */
const PG_LOCK_NOT_AVAILABLE = '55P03';

/** Serializes concurrent installs on PostgreSQL, where two racing CREATE TABLE IF NOT EXISTS can fail. */
const PG_INSTALL_LOCK_KEY = 7_455_301_121;

/**
 * How long one `ALTER TABLE` of an upgrade waits for the candidate table's lock: 2 seconds.
 * An ALTER waiting for a lock queues every later statement on the table behind it, so on a live
 * database (processes of the old version electing, an application's long transaction that read
 * the table) an unbounded wait would stall all elections; a bounded one gives up, lets the queue
 * drain and tries again ({@link DDL_LOCK_ATTEMPTS} times).
 */
export const DDL_LOCK_TIMEOUT_MS = 2000;
/** Attempts of an upgrade whose ALTER ran into {@link DDL_LOCK_TIMEOUT_MS} before `initDb` gives up: 10. */
export const DDL_LOCK_ATTEMPTS = 10;

function driverCode(error: unknown): { code: unknown; errno: unknown } {
  const inner = ((error as { driverError?: unknown } | null)?.driverError ?? error) as { code?: unknown; errno?: unknown } | null;
  return { code: inner?.code, errno: inner?.errno };
}

function isDdlLockTimeout(error: unknown): boolean {
  const { code, errno } = driverCode(error);
  return code === PG_LOCK_NOT_AVAILABLE || Number(errno) === MYSQL_LOCK_WAIT_TIMEOUT;
}

/** Runs `attempt` again (after a pause) while it fails on the DDL lock timeout, at most {@link DDL_LOCK_ATTEMPTS} times. */
async function withDdlLockRetries(attempt: () => Promise<void>): Promise<void> {
  for (let i = 1; ; i++) {
    try {
      return await attempt();
    } catch (error) {
      if (!isDdlLockTimeout(error) || i >= DDL_LOCK_ATTEMPTS) throw error;
      await new Promise((resolve) => setTimeout(resolve, Math.min(2000, 100 * 2 ** i) * (0.5 + Math.random())));
    }
  }
}

/**
 * MySQL/MariaDB DDL commits implicitly, so no transaction; their metadata locks make concurrent
 * CREATE TABLE IF NOT EXISTS safe, and a racing ALTER that added a column first is recognized.
 * Runs on a connection of its own, whose `lock_wait_timeout` is bounded and then restored.
 */
async function installMysql(dataSource: DataSource, context: DbContext): Promise<void> {
  const runner = dataSource.createQueryRunner();
  try {
    const m = runner.manager;
    const flavor = await mysqlFlavor(m);
    for (const statement of schemaStatements('mysql', context, flavor)) await execute(context, m, statement);
    // The index is part of CREATE TABLE, which skips a table that exists without it.
    if (!(await mysqlIndexPresent(context, m))) {
      const index = sql`CREATE INDEX ${raw(candidateIndexName(context))} ON ${context.table(CANDIDATE_TABLE)} (ns, expires_at)`;
      await execute(context, m, index).catch((error: unknown) => {
        if (Number(driverCode(error).errno) !== MYSQL_DUPLICATE_KEY_NAME) throw error;
      });
    }
    const [saved] = await execute<{ t: unknown }>(context, m, sql`SELECT @@SESSION.lock_wait_timeout AS t`);
    // A server-side parameter is a double, which the variable refuses: cast to its type.
    await execute(context, m, sql`SET SESSION lock_wait_timeout = CAST(${Math.ceil(DDL_LOCK_TIMEOUT_MS / 1000)} AS UNSIGNED)`);
    try {
      await withDdlLockRetries(async () => {
        const missing = await identityColumnsMissing(context, m);
        for (const statement of identityStatements('mysql', context, missing, flavor)) {
          await execute(context, m, statement).catch(async (error: unknown) => {
            // Another process added the columns first (one ALTER adds all of them, or none).
            if (Number(driverCode(error).errno) !== MYSQL_DUPLICATE_COLUMN) throw error;
            if ((await identityColumnsMissing(context, m)).length > 0) throw error;
          });
        }
      });
    } finally {
      await execute(context, m, sql`SET SESSION lock_wait_timeout = CAST(${Number(saved?.t)} AS UNSIGNED)`);
    }
  } finally {
    try {
      // Autocommit off: the reads above opened a transaction; the connection goes back to the pool without it.
      await endImplicitTransaction(dataSource, runner);
    } finally {
      await runner.release();
    }
  }
}

async function install(dataSource: DataSource): Promise<void> {
  const context = contextOf(dataSource);
  const present = await (context.dialect.name === 'sqlite'
    ? outsideTransactions(dataSource, () => schemaPresent(context, dataSource.manager))
    : schemaPresent(context, dataSource.manager));
  if (present) return; // no DDL at all: works for roles without DDL rights once the tables exist

  if (context.dialect.name === 'mysql') return installMysql(dataSource, context);
  // PostgreSQL and SQLite DDL is transactional: every step or none. The transaction-scoped
  // advisory lock is released at commit, so it is safe behind PgBouncer; SQLite's write lock
  // serializes installers by itself. Missing columns are looked up under that lock.
  await withDdlLockRetries(() =>
    inTransaction(dataSource, undefined, async (manager) => {
      if (context.dialect.name === 'postgres') {
        await execute(context, manager, sql`SELECT pg_advisory_xact_lock(${PG_INSTALL_LOCK_KEY})`);
        await execute(context, manager, sql`SELECT set_config('lock_timeout', ${`${DDL_LOCK_TIMEOUT_MS}ms`}, true)`);
      }
      for (const statement of schemaStatements(context.dialect.name, context)) await execute(context, manager, statement);
      const missing = await identityColumnsMissing(context, manager);
      for (const statement of identityStatements(context.dialect.name, context, missing)) await execute(context, manager, statement);
    }),
  );
}

/** Registered on GemstoneDB: what `initDb({ createTables: true })` runs for the election tables. */
export const electionTables: TableInstaller = Object.freeze({
  name: 'gemstone-utils/election',
  entities: [ElectionCandidate, ElectionLeader, ElectionHistory],
  install,
});
