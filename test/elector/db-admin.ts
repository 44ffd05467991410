/**
 * Raw connections to a test database, outside any DataSource: to hold locks, inspect and kill the
 * connections of worker processes behind the library's back.
 */
import { Client } from 'pg';
import * as mysql from 'mysql2/promise';
import type { TestDatabase } from '../support/databases';

export interface AdminConnection {
  query(text: string, params?: unknown[]): Promise<Record<string, unknown>[]>;
  close(): Promise<void>;
}

/** A connection to the database of `db` (PostgreSQL or MariaDB); `?` placeholders on both. */
export async function adminConnection(db: TestDatabase): Promise<AdminConnection> {
  if (db.kind === 'postgres') {
    const client = new Client({ connectionString: db.url(), application_name: 'gemstone test admin' });
    client.on('error', () => undefined);
    await client.connect();
    return {
      query: async (text, params = []) => {
        let i = 0;
        return (await client.query(text.replace(/\?/g, () => `$${++i}`), params)).rows;
      },
      close: () => client.end().catch(() => undefined),
    };
  }
  if (db.kind === 'mariadb') {
    const connection = await mysql.createConnection({ uri: db.url() });
    connection.on('error', () => undefined);
    return {
      query: async (text, params = []) => {
        const [rows] = await connection.query(text, params);
        return Array.isArray(rows) ? (rows as Record<string, unknown>[]) : [];
      },
      close: () => connection.end().catch(() => undefined),
    };
  }
  throw new Error(`no admin connection for ${db.name}`);
}

/** Whether another connection holds a lock on the leader row of `ns` (or, on SQLite, the write lock). */
export async function leaderRowLocked(db: TestDatabase, ns: string): Promise<boolean> {
  if (db.kind === 'sqlite') {
    // better-sqlite3 ships no types; only these two calls are needed.
    // eslint-disable-next-line @typescript-eslint/no-require-imports
    const Database = require('better-sqlite3') as new (file: string, options: { timeout: number }) => {
      exec(sql: string): void;
      close(): void;
    };
    const file = db.url().slice('sqlite:'.length).split('?')[0]!;
    const sqlite = new Database(file, { timeout: 0 });
    try {
      sqlite.exec('BEGIN IMMEDIATE');
      sqlite.exec('ROLLBACK');
      return false;
    } catch {
      return true;
    } finally {
      sqlite.close();
    }
  }
  const admin = await adminConnection(db);
  try {
    await admin.query(db.kind === 'postgres' ? 'BEGIN' : 'START TRANSACTION');
    await admin.query('SELECT ns FROM gemstone_election_leader WHERE ns = ? FOR UPDATE NOWAIT', [ns]);
    await admin.query('ROLLBACK');
    return false;
  } catch {
    return true;
  } finally {
    await admin.close();
  }
}

/** Kills every connection to the database of `db` except `keep`'s own. Returns how many. */
export async function killConnections(db: TestDatabase, keep: AdminConnection): Promise<number> {
  if (db.kind === 'postgres') {
    const rows = await keep.query(
      'SELECT pg_terminate_backend(pid) AS killed FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid()',
    );
    return rows.length;
  }
  const rows = await keep.query('SELECT ID AS id FROM information_schema.PROCESSLIST WHERE DB = DATABASE() AND ID <> CONNECTION_ID()');
  for (const row of rows) await keep.query(`KILL ${Number(row.id)}`).catch(() => undefined);
  return rows.length;
}

/** How many connections to the database of `db` wait for a lock. */
export async function lockWaiters(db: TestDatabase, admin: AdminConnection): Promise<number> {
  const rows =
    db.kind === 'postgres'
      ? await admin.query("SELECT COUNT(*) AS n FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'")
      : await admin.query(
          "SELECT COUNT(*) AS n FROM information_schema.INNODB_TRX t JOIN information_schema.PROCESSLIST p ON p.ID = t.trx_mysql_thread_id WHERE t.trx_state = 'LOCK WAIT' AND p.DB = DATABASE()",
        );
  return Number(rows[0]!.n);
}
