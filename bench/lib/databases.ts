/**
 * The dedicated benchmark databases: `gem_bench_<pid>` on PostgreSQL and MariaDB and a SQLite
 * file under the OS temp directory, created for one run and dropped after it, so benchmarks
 * never touch the `test` databases (or another run's).
 */
import * as fs from 'fs';
import * as os from 'os';
import * as path from 'path';
import { Client } from 'pg';
import * as mysql from 'mysql2/promise';
import type { DataSourceOptions } from 'typeorm';

export type BenchKind = 'postgres' | 'mariadb' | 'sqlite';
export const ALL_KINDS: readonly BenchKind[] = ['postgres', 'mariadb', 'sqlite'];

/** Server URLs; the database part is replaced by the benchmark database. */
export const PG_ADMIN_URL = process.env.GEMSTONE_BENCH_PG_URL || 'postgres://postgres@127.0.0.1:5432/test';
export const MYSQL_ADMIN_URL = process.env.GEMSTONE_BENCH_MYSQL_URL || 'mysql://root@127.0.0.1:3306/test';

/** What a worker process or thread needs to reach a benchmark database. */
export interface BenchTarget {
  kind: BenchKind;
  /** A URL `initDb(url)` accepts. */
  url: string;
}

function withDatabase(url: string, database: string): string {
  const parsed = new URL(url);
  parsed.pathname = `/${database}`;
  return parsed.toString();
}

/** DataSourceOptions as `initDb(url)` would build them, plus `extra` (pool size, logger). */
export function dataSourceOptions(target: BenchTarget, extra: Record<string, unknown> = {}): DataSourceOptions {
  switch (target.kind) {
    case 'postgres':
      return { type: 'postgres', url: target.url, ...extra } as DataSourceOptions;
    case 'mariadb':
      return { type: 'mysql', url: target.url, timezone: 'Z', ...extra } as DataSourceOptions;
    case 'sqlite':
      return {
        type: 'better-sqlite3',
        database: target.url.slice('sqlite:'.length),
        enableWAL: true,
        timeout: 5000,
        ...extra,
      } as DataSourceOptions;
  }
}

/** Pool of exactly one connection: a candidate as a separate process would hold it. */
export function singleConnection(kind: BenchKind): Record<string, unknown> {
  if (kind === 'postgres') return { poolSize: 1 };
  if (kind === 'mariadb') return { poolSize: 1 };
  return {};
}

export class BenchDatabase implements BenchTarget {
  readonly url: string;
  readonly #name: string;

  /** `suffix` tells apart several databases of one kind in one run (e.g. per scale size). */
  constructor(
    readonly kind: BenchKind,
    suffix = '',
  ) {
    this.#name = `gem_bench_${process.pid}${suffix ? `_${suffix}` : ''}`;
    this.url =
      kind === 'postgres'
        ? withDatabase(PG_ADMIN_URL, this.#name)
        : kind === 'mariadb'
          ? withDatabase(MYSQL_ADMIN_URL, this.#name)
          : `sqlite:${path.join(os.tmpdir(), `${this.#name}.sqlite`)}`;
  }

  get target(): BenchTarget {
    return { kind: this.kind, url: this.url };
  }

  /** A fresh, empty database (an earlier one of the same name is dropped first). */
  async create(): Promise<void> {
    await this.drop();
    if (this.kind === 'postgres') await pgAdmin((c) => c.query(`CREATE DATABASE "${this.#name}"`));
    if (this.kind === 'mariadb') await mysqlAdmin(`CREATE DATABASE \`${this.#name}\``);
  }

  async drop(): Promise<void> {
    if (this.kind === 'postgres') await pgAdmin((c) => c.query(`DROP DATABASE IF EXISTS "${this.#name}" WITH (FORCE)`));
    if (this.kind === 'mariadb') await mysqlAdmin(`DROP DATABASE IF EXISTS \`${this.#name}\``);
    if (this.kind === 'sqlite') {
      const file = this.url.slice('sqlite:'.length);
      for (const suffix of ['', '-wal', '-shm', '-journal']) fs.rmSync(file + suffix, { force: true });
    }
  }
}

async function pgAdmin<T>(work: (client: Client) => Promise<T>): Promise<T> {
  const client = new Client({ connectionString: PG_ADMIN_URL });
  await client.connect();
  try {
    return await work(client);
  } finally {
    await client.end();
  }
}

async function mysqlAdmin(statement: string): Promise<void> {
  const connection = await mysql.createConnection({ uri: MYSQL_ADMIN_URL });
  try {
    await connection.query(statement);
  } finally {
    await connection.end();
  }
}
