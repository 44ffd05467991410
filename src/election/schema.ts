import type { DataSource, EntityManager } from 'typeorm';
import { contextOf, DbContext } from '../db/context';
import type { DialectName } from '../db/dialect';
import type { TableInstaller } from '../db/registry';
import { execute, inTransaction } from '../db/session';
import { raw, RawSql, sql, SqlFragment } from '../db/sql';
import { ElectionCandidate } from '../../entities/ElectionCandidate';
import { ElectionLeader } from '../../entities/ElectionLeader';

export const CANDIDATE_TABLE = 'gemstone_election_candidate';
export const LEADER_TABLE = 'gemstone_election_leader';
export const CANDIDATE_INDEX = 'IDX_gemstone_election_candidate_ns_expires_at';

/**
 * MySQL/MariaDB compare strings case- and trailing-space-insensitively by default, which would
 * merge namespaces `"Jobs"`, `"jobs"` and `"jobs "`. A binary no-pad collation keeps them apart,
 * as PostgreSQL and SQLite do; its name differs between the two servers.
 */
export type MysqlFlavor = 'mariadb' | 'mysql';
const NS_COLLATION: Record<MysqlFlavor, string> = { mariadb: 'utf8mb4_nopad_bin', mysql: 'utf8mb4_0900_bin' };

/** The CREATE statements for one database: the single source for `initDb` and the migrations. */
export function schemaStatements(
  dialect: DialectName,
  table: (name: string) => RawSql,
  flavor: MysqlFlavor = 'mariadb',
): SqlFragment[] {
  const candidate = table(CANDIDATE_TABLE);
  const leader = table(LEADER_TABLE);
  switch (dialect) {
    case 'postgres':
      return [
        sql`CREATE TABLE IF NOT EXISTS ${candidate} (
  ns varchar(255) NOT NULL,
  candidate_id varchar(36) NOT NULL,
  last_heartbeat_at timestamptz NOT NULL,
  expires_at timestamptz NOT NULL,
  CONSTRAINT "PK_gemstone_election_candidate" PRIMARY KEY (ns, candidate_id)
)`,
        sql`CREATE INDEX IF NOT EXISTS "${raw(CANDIDATE_INDEX)}" ON ${candidate} (ns, expires_at)`,
        sql`CREATE TABLE IF NOT EXISTS ${leader} (
  ns varchar(255) NOT NULL,
  leader_id varchar(36) NULL,
  lease_expires_at timestamptz NULL,
  updated_at timestamptz NOT NULL,
  term bigint NOT NULL DEFAULT 0,
  CONSTRAINT "PK_gemstone_election_leader" PRIMARY KEY (ns),
  CONSTRAINT "CHK_gemstone_election_leader_term" CHECK (term >= 0)
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
  KEY ${raw(CANDIDATE_INDEX)} (ns, expires_at)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4`,
        sql`CREATE TABLE IF NOT EXISTS ${leader} (
  ns ${ns},
  leader_id ${uuid} NULL,
  lease_expires_at datetime(6) NULL,
  updated_at datetime(6) NOT NULL,
  term bigint NOT NULL DEFAULT 0,
  PRIMARY KEY (ns),
  CONSTRAINT CHK_gemstone_election_leader_term CHECK (term >= 0)
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
  CONSTRAINT PK_gemstone_election_candidate PRIMARY KEY (ns, candidate_id)
)`,
        sql`CREATE INDEX IF NOT EXISTS ${raw(CANDIDATE_INDEX)} ON ${candidate} (ns, expires_at)`,
        sql`CREATE TABLE IF NOT EXISTS ${leader} (
  ns varchar(255) NOT NULL,
  leader_id varchar(36) NULL,
  lease_expires_at datetime NULL,
  updated_at datetime NOT NULL,
  term bigint NOT NULL DEFAULT 0,
  CONSTRAINT PK_gemstone_election_leader PRIMARY KEY (ns),
  CONSTRAINT CHK_gemstone_election_leader_term CHECK (term >= 0)
)`,
      ];
  }
}

/** The DROP statements of the migration's `down`. */
export function dropStatements(table: (name: string) => RawSql): SqlFragment[] {
  return [sql`DROP TABLE IF EXISTS ${table(LEADER_TABLE)}`, sql`DROP TABLE IF EXISTS ${table(CANDIDATE_TABLE)}`];
}

/** MariaDB or MySQL, for the collation name. */
export async function mysqlFlavor(manager: Pick<EntityManager, 'query'>): Promise<MysqlFlavor> {
  const rows: Array<Record<string, unknown>> = await manager.query('SELECT VERSION() AS version');
  return /mariadb/i.test(String(rows[0]?.version)) ? 'mariadb' : 'mysql';
}

/** Whether both tables and the candidate index exist: then `initDb` runs no DDL at all. */
async function schemaPresent(context: DbContext, manager: EntityManager): Promise<boolean> {
  const names = [CANDIDATE_TABLE, LEADER_TABLE];
  switch (context.dialect.name) {
    case 'postgres': {
      const [candidate, leader, index] = [CANDIDATE_TABLE, LEADER_TABLE, CANDIDATE_INDEX].map((name) => context.table(name).text);
      const rows = await execute(
        context,
        manager,
        sql`SELECT (to_regclass(${candidate}) IS NOT NULL AND to_regclass(${leader}) IS NOT NULL AND to_regclass(${index}) IS NOT NULL) AS present`,
      );
      return rows[0]?.present === true;
    }
    case 'mysql': {
      const rows = await execute(
        context,
        manager,
        sql`SELECT COUNT(*) AS n FROM information_schema.tables WHERE table_schema = DATABASE() AND table_name IN (${names[0]}, ${names[1]})`,
      );
      return Number(rows[0]?.n) === names.length && (await mysqlIndexPresent(context, manager));
    }
    case 'sqlite': {
      const rows = await execute(
        context,
        manager,
        sql`SELECT COUNT(*) AS n FROM sqlite_master WHERE (type = 'table' AND name IN (${names[0]}, ${names[1]})) OR (type = 'index' AND name = ${CANDIDATE_INDEX})`,
      );
      return Number(rows[0]?.n) === names.length + 1;
    }
  }
}

async function mysqlIndexPresent(context: DbContext, manager: EntityManager): Promise<boolean> {
  const rows = await execute(
    context,
    manager,
    sql`SELECT COUNT(*) AS n FROM information_schema.statistics WHERE table_schema = DATABASE() AND table_name = ${CANDIDATE_TABLE} AND index_name = ${CANDIDATE_INDEX}`,
  );
  return Number(rows[0]?.n) > 0;
}

/** MySQL: ER_DUP_KEYNAME, another process added the same index first. */
const MYSQL_DUPLICATE_KEY_NAME = 1061;

/** Serializes concurrent installs on PostgreSQL, where two racing CREATE TABLE IF NOT EXISTS can fail. */
const PG_INSTALL_LOCK_KEY = 7_455_301_121;

async function install(dataSource: DataSource): Promise<void> {
  const context = contextOf(dataSource);
  const present = await (context.sqliteLock
    ? context.sqliteLock.run(() => schemaPresent(context, dataSource.manager))
    : schemaPresent(context, dataSource.manager));
  if (present) return; // no DDL at all: works for roles without DDL rights once the tables exist

  if (context.dialect.name === 'mysql') {
    // MySQL DDL commits implicitly, so no transaction; its metadata locks make concurrent
    // CREATE TABLE IF NOT EXISTS safe.
    const flavor = await mysqlFlavor(dataSource.manager);
    for (const statement of schemaStatements('mysql', context.table, flavor)) {
      await execute(context, dataSource.manager, statement);
    }
    // The index is part of CREATE TABLE, which skips a table that exists without it.
    if (!(await mysqlIndexPresent(context, dataSource.manager))) {
      const index = sql`CREATE INDEX ${raw(CANDIDATE_INDEX)} ON ${context.table(CANDIDATE_TABLE)} (ns, expires_at)`;
      await execute(context, dataSource.manager, index).catch((error: unknown) => {
        const { errno } = ((error as { driverError?: unknown }).driverError ?? error) as { errno?: unknown };
        if (Number(errno) !== MYSQL_DUPLICATE_KEY_NAME) throw error;
      });
    }
    return;
  }
  // PostgreSQL and SQLite DDL is transactional: all tables or none. The transaction-scoped
  // advisory lock is released at commit, so it is safe behind PgBouncer.
  await inTransaction(dataSource, undefined, async (manager) => {
    if (context.dialect.name === 'postgres') {
      await execute(context, manager, sql`SELECT pg_advisory_xact_lock(${PG_INSTALL_LOCK_KEY})`);
    }
    for (const statement of schemaStatements(context.dialect.name, context.table)) {
      await execute(context, manager, statement);
    }
  });
}

/** Registered on GemstoneDB: what `initDb({ createTables: true })` runs for the election tables. */
export const electionTables: TableInstaller = Object.freeze({
  name: 'gemstone-utils/election',
  entities: [ElectionCandidate, ElectionLeader],
  install,
});
