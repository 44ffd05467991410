import { DataSource, QueryFailedError } from 'typeorm';
import type { SessionParts } from '../contract/session';
import type { DbContext } from '../../db/context';
import { executeRendered, execute, OWN_ISOLATION_LEVEL, ownTransaction } from '../../db/session';
import { anyWithTransaction } from '../../db/transaction';
import { assertRunCurrent } from '../../db/run-guard';
import { bind, sql } from '../../db/sql';

/** What is learnt once per PostgreSQL DataSource about its connections (see {@link connectionFacts}). */
interface ConnectionFacts {
  /** A statement outside a transaction runs at READ COMMITTED. */
  readCommitted: boolean;
  /** Connections reach PostgreSQL itself, not a pooler in front of it: named prepared statements are kept. */
  direct: boolean;
}

const facts = new WeakMap<DataSource, Promise<ConnectionFacts>>();
/** DataSources whose connections may keep named prepared statements (see {@link sendNamed}). */
const namedStatements = new WeakMap<DataSource, boolean>();

/** The port a PostgreSQL DataSource connects to, as TypeORM's driver takes it (`url` first). */
function configuredPort(dataSource: DataSource): number | undefined {
  const options = dataSource.options as { url?: string; port?: number; replication?: unknown };
  if (options.replication !== undefined) return undefined;
  if (options.url) {
    try {
      return Number(new URL(options.url).port || 5432);
    } catch {
      return undefined;
    }
  }
  return options.port ?? 5432;
}

/**
 * Learnt once per DataSource (PostgreSQL), with one statement outside a transaction:
 * - whether a statement outside a transaction runs at READ COMMITTED (the session's default);
 * - whether the connection reaches PostgreSQL directly: the server's port is the one the
 *   DataSource was configured with. A pooler in front of it (PgBouncer, in transaction mode, moves
 *   a client between server connections, which then lack its named statements) listens on a port
 *   of its own; so does anything else in between, which only costs the named statements. Behind
 *   a Unix socket `inet_server_port()` is NULL: not counted as direct either.
 * A failed look-up is not remembered and answers "no" to both, which only costs speed.
 */
function connectionFacts(context: DbContext): Promise<ConnectionFacts> {
  const { dataSource } = context;
  let known = facts.get(dataSource);
  if (!known) {
    known = execute<{ transaction_isolation?: unknown; server_port?: unknown }>(
      context,
      dataSource.manager,
      sql`SELECT current_setting('transaction_isolation') AS transaction_isolation, inet_server_port() AS server_port`,
    ).then((rows) => {
      const row = rows[0];
      const port = row?.server_port === null || row?.server_port === undefined ? undefined : Number(row.server_port);
      const result = {
        readCommitted: String(row?.transaction_isolation).toLowerCase() === 'read committed',
        direct: port !== undefined && port === configuredPort(dataSource),
      };
      if (!namedStatements.has(dataSource)) namedStatements.set(dataSource, result.direct);
      return result;
    });
    facts.set(dataSource, known);
    known.catch(() => facts.delete(dataSource));
  }
  return known.catch(() => ({ readCommitted: false, direct: false }));
}

/** PostgreSQL: "prepared statement does not exist" / "already exists" — a pooler moved the client. */
const NAMED_STATEMENT_LOST = new Set(['26000', '42P05']);

/**
 * On a DataSource whose connections reach the server directly (see {@link connectionFacts}) and
 * without a session (`manager` is the DataSource's own), sends the statement as a NAMED prepared
 * statement on a pooled connection: PostgreSQL then plans it once per connection instead of at
 * every call. The statement is logged through the DataSource's logger as TypeORM logs its own,
 * and errors are TypeORM's `QueryFailedError`. If a named statement is found missing or
 * duplicated on the server after all (a pooler the port check did not see), named statements are
 * given up for the DataSource and undefined is answered: the caller repeats the call unnamed (the
 * failed statement changed nothing).
 */
const sendNamed: SessionParts['sendNamed'] = async (context, manager, prepared, args) => {
  const { dataSource } = context;
  if (manager.queryRunner !== undefined || manager !== dataSource.manager || namedStatements.get(dataSource) !== true) return undefined;
  const { name, text, values } = bind(prepared, args);
  const runner = dataSource.createQueryRunner();
  try {
    const client = (await runner.connect()) as { query(config: { name: string; text: string; values: unknown[] }): Promise<{ rows?: unknown[] }> };
    // Taking the connection may have waited (see sendQuery in db/session.ts).
    assertRunCurrent();
    dataSource.logger.logQuery(text, values, runner);
    try {
      const result = await client.query({ name, text, values });
      return Array.isArray(result.rows) ? result.rows : [];
    } catch (error) {
      if (!NAMED_STATEMENT_LOST.has(String((error as { code?: unknown }).code))) {
        dataSource.logger.logQueryError(error as Error, text, values, runner);
        throw new QueryFailedError(text, values, error as Error);
      }
      namedStatements.set(dataSource, false);
      return undefined;
    }
  } finally {
    await runner.release();
  }
};

/** How the library's statements and transactions reach PostgreSQL. */
export const postgresSession: SessionParts = {
  sharesOneConnection: false,
  isolationLevel: OWN_ISOLATION_LEVEL,
  executeRaw: executeRendered,
  sendNamed,
  /**
   * A session default other than READ COMMITTED (`default_transaction_isolation = serializable`)
   * is possible: learnt once per DataSource (see {@link connectionFacts}).
   */
  outsideIsReadCommitted: async (context) => (await connectionFacts(context)).readCommitted,
  outsideTransaction: (context, runner, work) => work(runner ? runner.manager : context.dataSource.manager),
  ownTransaction,
  beforeBegin: async () => undefined,
  withTransaction: anyWithTransaction,
};
