import type { CancellableReads } from '../contract/cancellable-reads';
import { driverError } from '../dialect';
import { execute, ownTransaction, withManager } from '../../db/session';
import { sql } from '../../db/sql';

/** `query_canceled`: a statement ended by `pg_cancel_backend` or by `statement_timeout`. */
const QUERY_CANCELED = '57014';

/**
 * PostgreSQL: a cancellable read is a READ ONLY transaction of its own (READ COMMITTED, as every
 * transaction of the library's) whose first statement learns the backend's pid and sets
 * `statement_timeout` for this transaction only (`set_config(…, true)`: nothing stays on the pooled
 * connection). The pid is read inside the transaction: behind a transaction-mode pooler
 * (PgBouncer) that is the backend the read's statements run on, which the pid of the client's
 * connection (`processID`) would not be. `pg_cancel_backend` from another connection cancels the
 * statement that backend runs (a backend waiting for the next command ignores it).
 */
export const postgresReads: CancellableReads = {
  run: (context, runner, timeoutMs, onSession, work) =>
    ownTransaction(context, runner, async (manager) => {
      const [row] = await execute<{ pid: unknown }>(
        context,
        manager,
        sql`SELECT pg_backend_pid() AS pid, set_config('statement_timeout', ${String(timeoutMs)}, true) AS statement_timeout,
  set_config('transaction_read_only', 'on', true) AS read_only`,
      );
      onSession(Number(row?.pid));
      return work((statement) => execute(context, manager, statement));
    }),
  async cancel(context, id) {
    // A pid the server reported, never anything a client sent: still checked, and bound as a parameter.
    if (!Number.isSafeInteger(id) || id <= 0) throw new Error(`gemstone-utils: not a PostgreSQL backend pid: ${id}`);
    await withManager(context.dataSource, undefined, (m) => execute(context, m, sql`SELECT pg_cancel_backend(${id}) AS cancelled`));
  },
  isCancelled: (error) => driverError(error).code === QUERY_CANCELED,
};
