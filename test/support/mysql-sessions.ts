/**
 * MySQL/MariaDB DataSources whose every connection runs some session statements first (as an
 * application's pool `connection` hook or the server's `init_connect` would): `SET SESSION
 * sql_mode = …`, `SET SESSION autocommit = 0`. The hook is installed when the pool is created
 * (TypeORM's `driver` option: mysql2 with a wrapped `createPool`), so it also covers the
 * connections `initialize()` and `initDb` use. mysql2 queues the hook's statements before any
 * other command of the new connection.
 */
import type { DataSource, DataSourceOptions } from 'typeorm';
import { TYPEORM_LINE } from './databases';

// eslint-disable-next-line @typescript-eslint/no-require-imports
const mysql2 = require('mysql2') as { createPool(options: unknown): Pool };

interface Pool {
  on(event: 'connection', listener: (connection: PooledConnection) => void): unknown;
}

/** A pooled mysql2 connection, as the pool's `connection` event hands it over. */
export interface PooledConnection {
  query(sql: string, values: unknown[]): unknown;
  execute?: unknown;
}

/** DataSource options (to merge) whose pool calls `hook` with every new connection before anyone uses it. */
export function withConnectionHook(hook: (connection: PooledConnection) => void): Partial<DataSourceOptions> {
  const driver = Object.assign(Object.create(mysql2) as object, {
    createPool(options: unknown): Pool {
      const pool = mysql2.createPool(options);
      pool.on('connection', hook);
      return pool;
    },
  });
  // TypeORM 0.3 loads the `mysql` package first unless told which one `driver` is.
  return { driver, ...(TYPEORM_LINE === '0.3' ? { connectorPackage: 'mysql2' } : {}) } as Partial<DataSourceOptions>;
}

/** DataSource options (to merge) that run `statements` (with their values) on every new connection. */
export function onEveryNewConnection(statements: ReadonlyArray<[string, unknown[]]>): Partial<DataSourceOptions> {
  return withConnectionHook((connection) => {
    for (const [text, values] of statements) connection.query(text, values);
  });
}

/** `@@in_transaction` and `@@autocommit` of each of the pool's `size` connections (holds them all at once). */
export async function pooledSessions(ds: DataSource, size: number): Promise<Array<{ inTransaction: number; autocommit: number }>> {
  const runners = Array.from({ length: size }, () => ds.createQueryRunner());
  try {
    const out: Array<{ inTransaction: number; autocommit: number }> = [];
    for (const runner of runners) {
      await runner.connect();
      const [row] = (await runner.query('SELECT @@in_transaction AS t, @@autocommit AS a')) as Array<{ t: unknown; a: unknown }>;
      out.push({ inTransaction: Number(row!.t), autocommit: Number(row!.a) });
    }
    return out;
  } finally {
    for (const runner of runners) await runner.release();
  }
}
