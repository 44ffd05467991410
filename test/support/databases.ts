/**
 * The database matrix every test file runs on, each file in a fresh database of its own so files
 * run in parallel: PostgreSQL and MariaDB get a new database per file; SQLite a new temp file
 * (or `:memory:`). On the TypeORM 0.3 line SQLite runs through both `sqlite3` and `better-sqlite3`.
 */
import { randomBytes, randomUUID } from 'crypto';
import * as fs from 'fs';
import * as os from 'os';
import * as path from 'path';
import { Client } from 'pg';
import * as mysql from 'mysql2/promise';
import type { DataSource, DataSourceOptions, QueryRunner } from 'typeorm';
import { initDb, InitDbOptions } from 'gemstone-utils';

export type DbKind = 'postgres' | 'mariadb' | 'sqlite';
export const TYPEORM_LINE: '0.3' | '1.x' = process.env.GEMSTONE_TYPEORM_LINE === '0.3' ? '0.3' : '1.x';

const PG_URL = () => process.env.GEMSTONE_TEST_PG_URL || 'postgres://postgres@127.0.0.1:5432/test';
const MYSQL_URL = () => process.env.GEMSTONE_TEST_MYSQL_URL || 'mysql://root@127.0.0.1:3306/test';

export interface TestDatabase {
  /** e.g. `postgres`, `mariadb`, `sqlite file (better-sqlite3)`. */
  readonly name: string;
  readonly kind: DbKind;
  /** Separate DataSources (and processes) see the same data: false for `:memory:`. */
  readonly shared: boolean;
  /** A URL for `initDb(url)` and child processes. */
  url(): string;
  /** DataSourceOptions without entities. */
  options(extra?: Partial<DataSourceOptions>): DataSourceOptions;
  /** `initDb` on a new DataSource of this database; destroyed after the file. */
  connect(extra?: Partial<DataSourceOptions>, initOptions?: InitDbOptions): Promise<DataSource>;
  /** Remembers a DataSource the test made itself, to destroy it after the file. */
  track(dataSource: DataSource): DataSource;
  /** Creates another fresh, empty database of the same kind (dropped after the file). */
  sibling(): Promise<TestDatabase>;
}

function slug(): string {
  const file = path.basename(expect.getState().testPath ?? 'test').replace(/\.test\.ts$/, '');
  return `gem_${file.replace(/[^a-z0-9]+/gi, '_').toLowerCase().slice(0, 24)}_${process.pid}_${randomBytes(3).toString('hex')}`;
}

function withDatabase(url: string, database: string): string {
  const parsed = new URL(url);
  parsed.pathname = `/${database}`;
  return parsed.toString();
}

abstract class BaseDatabase implements TestDatabase {
  abstract readonly name: string;
  abstract readonly kind: DbKind;
  readonly shared: boolean = true;
  /** The names GEMSTONE_TEST_SKIP may give to leave this database out: its kind, and on SQLite its driver. */
  get skipNames(): readonly string[] {
    return [this.kind];
  }
  protected readonly dataSources: DataSource[] = [];
  protected readonly siblings: BaseDatabase[] = [];
  protected database = '';

  abstract url(): string;
  abstract options(extra?: Partial<DataSourceOptions>): DataSourceOptions;
  protected abstract createDatabase(): Promise<void>;
  protected abstract dropDatabase(): Promise<void>;
  protected abstract clone(): BaseDatabase;

  async create(): Promise<void> {
    this.database = slug();
    await this.createDatabase();
  }

  async drop(): Promise<void> {
    for (const sibling of this.siblings) await sibling.drop();
    for (const dataSource of this.dataSources.splice(0)) {
      if (dataSource.isInitialized) await dataSource.destroy().catch(() => undefined);
    }
    await this.dropDatabase();
  }

  track(dataSource: DataSource): DataSource {
    this.dataSources.push(dataSource);
    return dataSource;
  }

  async connect(extra: Partial<DataSourceOptions> = {}, initOptions?: InitDbOptions): Promise<DataSource> {
    return this.track(await initDb(this.options(extra), initOptions));
  }

  async sibling(): Promise<TestDatabase> {
    const sibling = this.clone();
    await sibling.create();
    this.siblings.push(sibling);
    return sibling;
  }

}

class PostgresDatabase extends BaseDatabase {
  readonly name = 'postgres';
  readonly kind = 'postgres' as const;
  url() {
    return withDatabase(PG_URL(), this.database);
  }
  options(extra: Partial<DataSourceOptions> = {}): DataSourceOptions {
    // Idle pooled connections close after half a second: test files run side by side on a shared
    // server whose connection limit (100) a burst of racers would otherwise keep occupied.
    const pool = { idleTimeoutMillis: 500, ...((extra as { extra?: object }).extra ?? {}) };
    return { type: 'postgres', url: this.url(), ...extra, extra: pool } as DataSourceOptions;
  }
  protected async admin<T>(work: (client: Client) => Promise<T>): Promise<T> {
    const client = new Client({ connectionString: PG_URL() });
    await client.connect();
    try {
      return await work(client);
    } finally {
      await client.end();
    }
  }
  protected async createDatabase() {
    await this.admin((c) => c.query(`CREATE DATABASE "${this.database}"`));
  }
  protected async dropDatabase() {
    await this.admin((c) => c.query(`DROP DATABASE IF EXISTS "${this.database}" WITH (FORCE)`));
  }
  protected clone() {
    return new PostgresDatabase();
  }
}

class MariaDatabase extends BaseDatabase {
  readonly name = 'mariadb';
  readonly kind = 'mariadb' as const;
  url() {
    return withDatabase(MYSQL_URL(), this.database);
  }
  options(extra: Partial<DataSourceOptions> = {}): DataSourceOptions {
    return { type: 'mysql', url: this.url(), ...extra } as DataSourceOptions;
  }
  protected async admin(statement: string) {
    const connection = await mysql.createConnection({ uri: MYSQL_URL() });
    try {
      await connection.query(statement);
    } finally {
      await connection.end();
    }
  }
  protected async createDatabase() {
    await this.admin(`CREATE DATABASE \`${this.database}\``);
  }
  protected async dropDatabase() {
    await this.admin(`DROP DATABASE IF EXISTS \`${this.database}\``);
  }
  protected clone() {
    return new MariaDatabase();
  }
}

type SqliteDriver = 'better-sqlite3' | 'sqlite3';

/**
 * GEMSTONE_SQLITE3=5: the sqlite3 DataSources run on sqlite3 5.x (the `sqlite3-v5` alias) through
 * TypeORM 0.3's `driver` option; otherwise on the `sqlite3` package (6.x).
 */
function sqlite3Driver(): { driver?: unknown } {
  if (process.env.GEMSTONE_SQLITE3 !== '5') return {};
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  const version: string = require('sqlite3-v5/package.json').version;
  if (!version.startsWith('5.')) throw new Error(`GEMSTONE_SQLITE3=5 but sqlite3-v5 is ${version}`);
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  return { driver: require('sqlite3-v5') };
}

class SqliteDatabase extends BaseDatabase {
  readonly kind = 'sqlite' as const;
  override readonly shared: boolean;
  readonly name: string;
  private file = '';
  constructor(
    private readonly driver: SqliteDriver,
    private readonly memory: boolean,
  ) {
    super();
    this.shared = !memory;
    this.name = `sqlite ${memory ? 'memory' : 'file'} (${driver})`;
  }
  override get skipNames(): readonly string[] {
    return [this.kind, this.driver];
  }
  private get database_(): string {
    return this.memory ? ':memory:' : this.file;
  }
  url() {
    return `sqlite:${this.database_}?driver=${this.driver}`;
  }
  options(extra: Partial<DataSourceOptions> = {}): DataSourceOptions {
    const type = this.driver === 'sqlite3' ? 'sqlite' : 'better-sqlite3';
    const driver = this.driver === 'sqlite3' ? sqlite3Driver() : {};
    return { type, database: this.database_, enableWAL: !this.memory, ...driver, ...extra } as DataSourceOptions;
  }
  protected async createDatabase() {
    const dir = path.join(os.tmpdir(), 'gemstone-tests');
    fs.mkdirSync(dir, { recursive: true });
    this.file = path.join(dir, `${this.database}.sqlite`);
  }
  protected async dropDatabase() {
    for (const suffix of ['', '-wal', '-shm', '-journal']) fs.rmSync(`${this.file}${suffix}`, { force: true });
  }
  protected clone() {
    return new SqliteDatabase(this.driver, this.memory);
  }
}

/** The databases of this TypeORM line. */
export function testDatabases(): BaseDatabase[] {
  const sqlite: BaseDatabase[] =
    TYPEORM_LINE === '0.3'
      ? [new SqliteDatabase('sqlite3', false), new SqliteDatabase('sqlite3', true), new SqliteDatabase('better-sqlite3', false)]
      : [new SqliteDatabase('better-sqlite3', false), new SqliteDatabase('better-sqlite3', true)];
  return [new PostgresDatabase(), new MariaDatabase(), ...sqlite];
}

/**
 * GEMSTONE_TEST_SKIP: kinds (`postgres`, `mariadb`, `sqlite`) or SQLite drivers (`better-sqlite3`,
 * `sqlite3`) whose describes are skipped (the global setup sets it for unreachable servers).
 */
const skipped = new Set((process.env.GEMSTONE_TEST_SKIP ?? '').split(',').filter(Boolean));

export interface EachDatabaseOptions {
  /** Only these kinds. */
  kinds?: readonly DbKind[];
  /** Only databases that separate connections share (not `:memory:`). */
  sharedOnly?: boolean;
  /** Only databases private to each connection (`:memory:`). */
  unsharedOnly?: boolean;
  /**
   * On the TypeORM 0.3 line, only the databases of the drivers that exist on that line alone
   * (sqlite3): for a file whose outcome on the other drivers cannot depend on the line, which the
   * 1.x run covers (its reason stated where it is used).
   */
  lineOnlyDrivers?: boolean;
}

/** `describe` once per database of the matrix, with a fresh database created before and dropped after. */
export function describeEachDatabase(title: string, body: (db: TestDatabase) => void, options: EachDatabaseOptions = {}): void {
  for (const db of testDatabases()) {
    if (options.kinds && !options.kinds.includes(db.kind)) continue;
    if (options.sharedOnly && !db.shared) continue;
    if (options.unsharedOnly && db.shared) continue;
    if (options.lineOnlyDrivers && TYPEORM_LINE === '0.3' && !db.skipNames.includes('sqlite3')) continue;
    const run = db.skipNames.some((name) => skipped.has(name)) ? describe.skip : describe;
    run(`${title} [${db.name}]`, () => {
      beforeAll(() => db.create());
      afterAll(() => db.drop());
      body(db);
    });
  }
}

/**
 * Whether the MariaDB server knows `innodb_snapshot_isolation` (probed by the global setup). Cases
 * that need it are skipped, with this reason in their title, where it does not.
 */
export const MARIADB_SNAPSHOT_ISOLATION = process.env.GEMSTONE_TEST_MARIADB_SNAPSHOT_ISOLATION === '1';
export const NO_SNAPSHOT_ISOLATION = ' [SKIPPED: this MariaDB server has no innodb_snapshot_isolation (10.6.18+/10.11.8+)]';

export const uuid = (): string => randomUUID();

/**
 * Runs test-owned SQL (`?` placeholders, rewritten to `$n` on PostgreSQL). Tests use this to
 * arrange and inspect rows behind the library's back.
 */
export async function query<T = Record<string, unknown>>(dataSource: DataSource, text: string, params: unknown[] = []): Promise<T[]> {
  let i = 0;
  const sqlText = dataSource.options.type === 'postgres' ? text.replace(/\?/g, () => `$${++i}`) : text;
  return dataSource.query(sqlText, params);
}

/** Every row of both election tables, in a stable order: to prove a call changed nothing. */
export async function snapshot(dataSource: DataSource): Promise<string> {
  const candidates = await query(dataSource, 'SELECT * FROM gemstone_election_candidate ORDER BY ns, candidate_id');
  const leaders = await query(dataSource, 'SELECT * FROM gemstone_election_leader ORDER BY ns');
  const history = await query(dataSource, 'SELECT * FROM gemstone_election_history ORDER BY ns, term');
  return JSON.stringify({ candidates, leaders, history });
}

/**
 * Runs `work` in a transaction the test owns, as an application would with a QueryRunner:
 * commits when `work` resolves, rolls back when it throws, always releases the runner.
 */
export async function inCallerTransaction<T>(dataSource: DataSource, work: (runner: QueryRunner) => Promise<T>): Promise<T> {
  const runner = dataSource.createQueryRunner();
  try {
    await runner.startTransaction();
    const result = await work(runner);
    await runner.commitTransaction();
    return result;
  } catch (error) {
    if (runner.isTransactionActive) await runner.rollbackTransaction();
    throw error;
  } finally {
    await runner.release();
  }
}

export const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
