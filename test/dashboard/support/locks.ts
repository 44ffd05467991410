/**
 * Reads held up at the server, for the tests of cancelling them: a lock on election tables held
 * by a session of the test's, and what the server shows of the other sessions of the database
 * (PostgreSQL `pg_stat_activity`, MariaDB `information_schema.PROCESSLIST`).
 */
import type { DataSource } from 'typeorm';
import type { DbKind } from '../../support/databases';
import { query } from '../../support/databases';

export interface HeldLock {
  /** The holder's session id at the server (backend pid, connection id). */
  readonly session: number;
  readonly released: () => boolean;
  /** Releases the lock (once; later calls do nothing). */
  release(): Promise<void>;
}

/**
 * Locks `tables` against every read from another session of `dataSource` (PostgreSQL `LOCK TABLE
 * … ACCESS EXCLUSIVE` in a transaction, MariaDB `LOCK TABLES … WRITE`); released after `maxMs` at
 * the latest.
 */
export async function lockTables(dataSource: DataSource, kind: DbKind, tables: readonly string[], maxMs: number): Promise<HeldLock> {
  const runner = dataSource.createQueryRunner();
  await runner.connect();
  let done: () => Promise<void>;
  let session: number;
  if (kind === 'postgres') {
    session = Number((await runner.query('SELECT pg_backend_pid() AS id'))[0].id);
    await runner.startTransaction();
    await runner.query(`LOCK TABLE ${tables.join(', ')} IN ACCESS EXCLUSIVE MODE`);
    done = () => runner.commitTransaction();
  } else {
    session = Number((await runner.query('SELECT CONNECTION_ID() AS id'))[0].id);
    await runner.query(`LOCK TABLES ${tables.map((table) => `${table} WRITE`).join(', ')}`);
    done = async () => void (await runner.query('UNLOCK TABLES'));
  }
  let released = false;
  const release = async () => {
    if (released) return;
    released = true;
    clearTimeout(timer);
    try {
      await done();
    } finally {
      await runner.release();
    }
  };
  const timer = setTimeout(() => void release(), maxMs);
  return { session, released: () => released, release };
}

/** The statements of this database's sessions waiting for a table lock now. */
export async function waitingForLocks(dataSource: DataSource, kind: DbKind): Promise<string[]> {
  const rows =
    kind === 'postgres'
      ? await query<{ query: string }>(dataSource, "SELECT query FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'")
      : await query<{ query: string }>(
          dataSource,
          "SELECT info AS query FROM information_schema.processlist WHERE db = DATABASE() AND state LIKE 'Waiting for table metadata lock%'",
        );
  return rows.map((row) => String(row.query));
}

/**
 * What the other sessions of this database run now, or a transaction one left open, but the
 * asking session's and `lock`'s: PostgreSQL client backends that are not idle, MariaDB sessions
 * that are not asleep. Where only the code under test sends statements besides, these are its.
 */
export async function runningStatements(dataSource: DataSource, kind: DbKind, lock: HeldLock): Promise<string[]> {
  const rows =
    kind === 'postgres'
      ? await query<{ state: string; query: string }>(
          dataSource,
          "SELECT state, query FROM pg_stat_activity WHERE datname = current_database() AND backend_type = 'client backend' AND pid <> pg_backend_pid() AND pid <> $1 AND state <> 'idle'",
          [lock.session],
        )
      : await query<{ state: string; query: string }>(
          dataSource,
          "SELECT command AS state, info AS query FROM information_schema.processlist WHERE db = DATABASE() AND id <> CONNECTION_ID() AND id <> ? AND command <> 'Sleep'",
          [lock.session],
        );
  return rows.map((row) => `${row.state}: ${row.query}`);
}
