import { contextOf } from '../../db/context';
import { inRunnerTransaction } from '../../db/plugin-steps';
import { execute } from '../../db/session';
import { sql } from '../../db/sql';
import type { DdlParts } from '../contract/ddl';
import { driverError } from '../dialect';

/** PostgreSQL: lock_not_available, a lock wait past `lock_timeout`. */
const PG_LOCK_NOT_AVAILABLE = '55P03';

/** Serializes concurrent plugin installs on PostgreSQL (another key than the election installer's). */
const PG_PLUGIN_INSTALL_LOCK_KEY = 7_455_301_122;

/** PostgreSQL: DDL is transactional; concurrent installers are serialized by advisory locks. */
export const postgresDdl: DdlParts = {
  isolated: (_dataSource, work) => work(),
  settle: async () => undefined,
  isLockTimeout: (error) => driverError(error).code === PG_LOCK_NOT_AVAILABLE,

  /**
   * Transactional DDL under a transaction-scoped lock (released at commit, PgBouncer-safe): the
   * second installer waits, then finds the tables.
   */
  async createPluginTables(work) {
    const { runner } = work;
    const context = contextOf(runner.connection);
    await inRunnerTransaction(runner, async () => {
      await execute(context, runner.manager, sql`SELECT pg_advisory_xact_lock(${PG_PLUGIN_INSTALL_LOCK_KEY})`);
      for (const key of await work.stillMissing()) await work.create(key);
    });
  },
};
