import type { DataSource, EntityManager, QueryRunner } from 'typeorm';
import type { DbContext } from '../../db/context';
import type { SqlFragment } from '../../db/sql';
import type { IdentityColumn, TableNames } from '../../election/tables';

/**
 * MySQL/MariaDB compare strings case- and trailing-space-insensitively by default, which would
 * merge namespaces `"Jobs"`, `"jobs"` and `"jobs "`. A binary no-pad collation keeps them apart,
 * as PostgreSQL and SQLite do; its name differs between the two servers, hence the flavour.
 */
export type MysqlFlavor = 'mariadb' | 'mysql';

/** The flavour of a MySQL-protocol server from its `VERSION()`: MariaDB names itself there. */
export function mysqlFlavorOf(version: unknown): MysqlFlavor {
  return /mariadb/i.test(String(version)) ? 'mariadb' : 'mysql';
}

/**
 * The election schema on one database: the DDL of each step (the statements the migrations run,
 * exactly as shipped), how to tell that everything exists, and how the steps are installed.
 * The shared `election/schema.ts` composes these; see its comment for the steps.
 */
export interface SchemaParts {
  /**
   * Step 1, the CREATE statements of the 0.1.0 tables (candidate and leader), exactly as 0.1.0
   * shipped them. `flavor` matters on MySQL/MariaDB only (the namespace collation; default MariaDB).
   */
  tableStatements(names: TableNames, flavor?: MysqlFlavor): SqlFragment[];
  /** Step 2's column definitions (`metadata`, `priority`, `eligible`), as `ADD COLUMN` appends them. */
  readonly identityColumnTypes: Readonly<Record<IdentityColumn, string>>;
  /** Whether one `ALTER TABLE` adds or drops one column only (SQLite); else one ALTER takes them all. */
  readonly alterOneColumnAtATime: boolean;
  /** Step 2's history table and its index (`CREATE … IF NOT EXISTS`). */
  historyStatements(names: TableNames, flavor?: MysqlFlavor): SqlFragment[];
  /** Step 3's runs table of schedules and its index (`CREATE … IF NOT EXISTS`). */
  runStatements(names: TableNames, flavor?: MysqlFlavor): SqlFragment[];
  /**
   * Step 4, heartbeats that touch no index: the statements that bring the tables there from what
   * `manager` shows, none when they are there. A heartbeat rewrites the candidate's
   * `expires_at`, which step 1's `(ns, expires_at)` index holds: that index goes (every
   * per-namespace read finds its rows by the primary key's `ns` prefix). PostgreSQL also leaves
   * room on each page of the candidate and leader tables (`fillfactor`), so that a heartbeat and
   * a renewal are HOT updates: a new row version on the same page, and no index entry at all.
   */
  leanHeartbeatStatements(context: DbContext, manager: EntityManager): Promise<SqlFragment[]>;
  /** The fourth migration's `down`: step 1's index back (and PostgreSQL's default `fillfactor`), from what `manager` shows. */
  leanHeartbeatUndoStatements(context: DbContext, manager: EntityManager): Promise<SqlFragment[]>;
  /** A statement listing the candidate table's columns, one row per column in column `name`. */
  candidateColumns(context: DbContext): SqlFragment;
  /**
   * Whether step 1's two tables (candidate and leader) exist: then `initDb` skips step 1, whose
   * candidate index step 4 dropped and which must not be built again only to be dropped.
   */
  firstStepPresent(context: DbContext, manager: EntityManager): Promise<boolean>;
  /** Whether every table and index of steps 1–3 exists (the columns and step 4 are checked apart). */
  relationsPresent(context: DbContext, manager: EntityManager): Promise<boolean>;
  /** The server's flavour where the DDL depends on it (MySQL/MariaDB: the collation), else undefined. */
  flavorOf(session: Pick<EntityManager, 'query'>): Promise<MysqlFlavor | undefined>;
  /**
   * Runs a migration's ALTERs with lock waits bounded by `timeoutMs` where the database can bound
   * them for a session (PostgreSQL's `lock_timeout`, restored afterwards); elsewhere just runs them.
   */
  withDdlLockTimeout<T>(runner: QueryRunner, timeoutMs: number, work: () => Promise<T>): Promise<T>;
  /** Runs the steps that are missing (called when something is), safe against concurrent installers. */
  install(dataSource: DataSource, context: DbContext): Promise<void>;
}
