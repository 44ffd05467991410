import type { DataSource, EntityMetadata, QueryRunner } from 'typeorm';

/** What an installer creating missing plugin tables hands to its database (see `db/plugin-tables.ts`). */
export interface PluginTablesWork {
  /** A runner of the installer's own, released by the installer. */
  readonly runner: QueryRunner;
  /** The tables missing when the install began, keyed by resolved table path. */
  readonly missing: ReadonlyMap<string, EntityMetadata>;
  /** The keys of those tables still missing now (looked up again, e.g. under a lock). */
  stillMissing(): Promise<string[]>;
  /** Runs the schema builder's statements that create the table `key` (with its indexes). */
  create(key: string): Promise<void>;
}

/**
 * How DDL and the lookups around it run on one database, for every installer (the election
 * schema, plugin tables, the demo's tables): where they must wait, what they leave behind, how
 * concurrent installers are kept apart.
 */
export interface DdlParts {
  /**
   * Runs `work` (lookups, DDL) where it cannot become part of an application's transaction: on
   * SQLite every runner shares one connection, so it waits until no transaction is open there;
   * elsewhere it runs at once.
   */
  isolated<T>(dataSource: DataSource, work: () => Promise<T>): Promise<T>;
  /**
   * Called on a runner of the installer's own before it is released: MySQL/MariaDB with
   * autocommit off left the lookups' implicit transaction open, and the connection must go back
   * to the pool without it. Nothing elsewhere.
   */
  settle(dataSource: DataSource, runner: QueryRunner): Promise<void>;
  /** Whether `error` is a DDL statement's lock wait running out (then the install is retried). */
  isLockTimeout(error: unknown): boolean;
  /** Creates the missing plugin tables, safe when several processes install at once. */
  createPluginTables(work: PluginTablesWork): Promise<void>;
}
