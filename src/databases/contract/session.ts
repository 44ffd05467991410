import type { DataSource, EntityManager, QueryRunner } from 'typeorm';
import type { DbContext } from '../../db/context';
import type { PreparedSql, SqlFragment } from '../../db/sql';

/** An isolation level as `QueryRunner.startTransaction` takes it (the same on both TypeORM lines). */
export type IsolationLevel = NonNullable<Parameters<QueryRunner['startTransaction']>[0]>;

/**
 * How the library's statements and transactions reach one database (`db/session.ts` and
 * `db/transaction.ts` ask it, see `DatabaseParts.session`): what differs is how a statement is
 * sent (MySQL/MariaDB: server-side parameters), what a statement outside a transaction may see
 * (a session default other than READ COMMITTED), and how a transaction of the library's own is
 * opened (SQLite: one connection shared by every QueryRunner).
 *
 * The shared steps these members build on (`executeRendered`, `ownTransaction`,
 * `inTransaction`, `withManager`) stay in `db/session.ts`; the members say when to use which.
 */
export interface SessionParts {
  /**
   * Whether every QueryRunner of a DataSource shares ONE connection (SQLite): taking it never
   * waits for a pool, so a statement goes straight to `manager.query`.
   */
  readonly sharesOneConnection: boolean;
  /**
   * The isolation level of every transaction the library opens with `ownTransaction` (READ
   * COMMITTED, see `OWN_ISOLATION_LEVEL`); undefined where transactions are serializable by
   * construction and are started without a level.
   */
  readonly isolationLevel: IsolationLevel | undefined;
  /** Runs one statement on `manager` and returns what the driver answered (`executeRaw`). */
  executeRaw(context: DbContext, manager: EntityManager, statement: SqlFragment): Promise<unknown>;
  /**
   * Sends a prepared statement, bound to `args`, as a NAMED prepared statement when this database
   * keeps them on the DataSource's connections (`executeBound`), answering its rows; undefined
   * when it was not sent that way (the caller then sends it unnamed).
   */
  sendNamed(
    context: DbContext,
    manager: EntityManager,
    prepared: PreparedSql,
    args: Readonly<Record<string, unknown>>,
  ): Promise<unknown[] | undefined>;
  /** Whether a statement outside a transaction runs at READ COMMITTED on the DataSource's connections. */
  outsideIsReadCommitted(context: DbContext): Promise<boolean>;
  /**
   * Runs `work` outside any transaction of the caller's (`withManager`): on the session's
   * connection (`runner`) or a pooled one.
   */
  outsideTransaction<T>(context: DbContext, runner: QueryRunner | undefined, work: (manager: EntityManager) => Promise<T>): Promise<T>;
  /**
   * Runs `work` in a transaction the library opens and commits (`inTransaction`), on the
   * session's connection (`runner`) or a fresh one.
   */
  ownTransaction<T>(context: DbContext, runner: QueryRunner | undefined, work: (manager: EntityManager) => Promise<T>): Promise<T>;
  /** What must happen on a connection before the library's own BEGIN there (its runner is connected). */
  beforeBegin(context: DbContext, runner: QueryRunner): Promise<void>;
  /**
   * `withTransaction` once its options are checked: `work` in a transaction of its own,
   * committed, rerun up to `retries` times on conflicts; `waitMs` is how long to wait for a
   * transaction someone else holds open on a shared connection (SQLite).
   */
  withTransaction<T>(dataSource: DataSource, work: (manager: EntityManager) => Promise<T>, retries: number, waitMs: number): Promise<T>;
}
