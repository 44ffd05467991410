import type { DataSource, QueryRunner } from 'typeorm';
import type { CancellableReads } from '../contract/cancellable-reads';
import { driverError } from '../dialect';
import { outsideRuns } from '../../db/run-guard';
import { execute, withManager } from '../../db/session';
import { raw, sql, SqlFragment } from '../../db/sql';
import { mysqlSession } from './connection';
import { isMariadbServer, runMysql } from './session';

/**
 * 1317 `ER_QUERY_INTERRUPTED` (KILL QUERY), 1969 MariaDB's `max_statement_time` exceeded, 3024
 * MySQL's `max_execution_time` exceeded.
 */
const CANCELLED = new Set([1317, 1969, 3024]);

function isCancelled(error: unknown): boolean {
  return CANCELLED.has(Number(driverError(error).errno));
}

/** `CONNECTION_ID()` per mysql2 connection object (the pool hands out the same object for the same connection). */
const sessionIds = new WeakMap<object, number>();

/**
 * The server's id of the runner's connection, read once per connection: the id `KILL QUERY`
 * takes. Asked of the server rather than taken from the handshake (mysql2's `threadId`), which
 * behind a proxy is the proxy's.
 */
async function sessionIdOf(dataSource: DataSource, runner: QueryRunner): Promise<number> {
  const connection = (await runner.connect()) as object;
  const known = sessionIds.get(connection);
  if (known !== undefined) return known;
  const rows = (await runMysql(dataSource, runner, sql`SELECT CONNECTION_ID() AS id`)) as Array<{ id?: unknown }>;
  const id = Number(rows[0]?.id);
  if (!Number.isSafeInteger(id) || id <= 0) throw new Error(`gemstone-utils: CONNECTION_ID() answered ${String(rows[0]?.id)}, not a connection id`);
  sessionIds.set(connection, id);
  return id;
}

/**
 * `statement` bounded by MariaDB's `max_statement_time` for this statement only (`SET STATEMENT …
 * FOR`, nothing stays on the pooled connection). The bound is not a parameter (MariaDB refuses
 * one there): a whole number of milliseconds the caller validated, written as seconds.
 */
function boundedOnMariadb(statement: SqlFragment, timeoutMs: number): SqlFragment {
  if (!Number.isSafeInteger(timeoutMs) || timeoutMs <= 0) throw new Error(`gemstone-utils: not a statement bound in ms: ${timeoutMs}`);
  return sql`SET STATEMENT max_statement_time = ${raw((timeoutMs / 1000).toFixed(3))} FOR ${statement}`;
}

/**
 * MySQL/MariaDB: a cancellable read runs on the runner's connection as every read outside a
 * transaction does there (`mysqlSession.outsideTransaction`: its own READ COMMITTED transaction
 * where the session has autocommit off). MariaDB bounds each statement by `max_statement_time`,
 * lock waits included; MySQL's `max_execution_time` would need a hint inside each SELECT, so there
 * the read is bounded by the shared code's timer, which cancels it with `KILL QUERY` like a close.
 */
export const mysqlReads: CancellableReads = {
  async run(context, runner, timeoutMs, onSession, work) {
    const { dataSource } = context;
    onSession(await sessionIdOf(dataSource, runner));
    const mariadb = await isMariadbServer(dataSource, runner);
    try {
      return await mysqlSession.outsideTransaction(context, runner, () =>
        work(async (statement) => (await runMysql(dataSource, runner, mariadb ? boundedOnMariadb(statement, timeoutMs) : statement)) as Record<string, unknown>[]),
      );
    } catch (error) {
      // The server answers a killed or timed-out statement before it has finished with it (its
      // thread still shows the statement for a moment): one more round trip on the connection
      // returns once it has, so the read ends only then. Outside the read's run, which has ended.
      if (isCancelled(error)) await outsideRuns(() => runMysql(dataSource, runner, sql`SELECT 1 AS settled`)).catch(() => undefined);
      throw error;
    }
  },
  async cancel(context, id) {
    // An id the server reported, never anything a client sent: still checked, and bound as a parameter.
    if (!Number.isSafeInteger(id) || id <= 0) throw new Error(`gemstone-utils: not a MySQL/MariaDB connection id: ${id}`);
    await withManager(context.dataSource, undefined, (m) => execute(context, m, sql`KILL QUERY ${id}`));
  },
  isCancelled,
};
