/**
 * `initDb(target)`: what it accepts (a DataSource, DataSourceOptions, URL strings,
 * the default target), what it refuses (ValidationError naming `target`, EntitiesNotRegisteredError
 * for an initialized DataSource without the entities), and how it treats the `entities` option.
 */
import * as fs from 'fs';
import * as os from 'os';
import * as path from 'path';
import { DataSource, DataSourceOptions } from 'typeorm';
import {
  ElectionCandidate,
  ElectionLeader,
  ElectionService,
  EntitiesNotRegisteredError,
  GemstoneDB,
  getDataSource,
  initDb,
  ValidationError,
} from 'gemstone-utils';
import { describeEachDatabase, query, TestDatabase, TYPEORM_LINE, uuid } from '../support/databases';
import { ns } from '../support/rows';
import { AppWidget } from './support/app-entities';
import { ELECTION_TABLES, tableNames } from './support/schema';

/** How often each registered entity appears in a DataSource's `entities` option. */
function registeredCounts(ds: DataSource): number[] {
  const list = Object.values(ds.options.entities ?? {}) as unknown[];
  return GemstoneDB.entities.map((entity) => list.filter((listed) => listed === entity).length);
}

/** The DataSource knows the election entities, the tables exist and an election runs on it. */
async function expectWorkingElection(ds: DataSource): Promise<void> {
  expect(ds.isInitialized).toBe(true);
  expect(ds.hasMetadata(ElectionCandidate)).toBe(true);
  expect(ds.hasMetadata(ElectionLeader)).toBe(true);
  expect(await tableNames(ds, (ds.options as { schema?: string }).schema)).toEqual(expect.arrayContaining([...ELECTION_TABLES]));
  const id = uuid();
  expect(await new ElectionService(ds).elect(id, { ns: ns() })).toBe(id);
}

/** The SQLite file of a file database, from its `sqlite:<path>?driver=…` URL. */
function sqliteFile(db: TestDatabase): string {
  return db.url().slice('sqlite:'.length).split('?')[0]!;
}

describeEachDatabase('initDb targets', (db) => {
  test('an uninitialized DataSource gets the registered entities appended once and is initialized', async () => {
    const ds = db.track(new DataSource({ ...db.options(), entities: [AppWidget] } as DataSourceOptions));
    expect(ds.isInitialized).toBe(false);
    expect(await initDb(ds)).toBe(ds);
    expect(ds.options.entities).toEqual([AppWidget, ...GemstoneDB.entities]);
    expect(ds.hasMetadata(AppWidget)).toBe(true);
    await expectWorkingElection(ds);
  });

  test('an entity the application already lists is not added twice', async () => {
    const ds = db.track(new DataSource({ ...db.options(), entities: [ElectionLeader, AppWidget] } as DataSourceOptions));
    await initDb(ds);
    expect(registeredCounts(ds)).toEqual([1, 1, 1, 1]);
    expect(Object.values(ds.options.entities!)).toHaveLength(5);
    await expectWorkingElection(ds);
  });

  test('entities given as an object map are kept and the registered ones added', async () => {
    const ds = db.track(new DataSource({ ...db.options(), entities: { AppWidget, ElectionCandidate } } as unknown as DataSourceOptions));
    await initDb(ds);
    expect(registeredCounts(ds)).toEqual([1, 1, 1, 1]);
    expect(Object.values(ds.options.entities!)).toContain(AppWidget);
    expect(ds.hasMetadata(AppWidget)).toBe(true);
    await expectWorkingElection(ds);
  });

  test('DataSourceOptions: a new initialized DataSource with the registered entities', async () => {
    const options = db.options({ entities: [AppWidget] });
    const ds = db.track(await initDb(options));
    expect(ds).toBeInstanceOf(DataSource);
    expect(registeredCounts(ds)).toEqual([1, 1, 1, 1]);
    expect(ds.hasMetadata(AppWidget)).toBe(true);
    expect(options.entities).toEqual([AppWidget]); // the caller's object is not modified
    await expectWorkingElection(ds);
  });

  test('concurrent initDb calls on one uninitialized DataSource both resolve, without duplicate entities', async () => {
    const ds = db.track(new DataSource(db.options()));
    const results = await Promise.all([initDb(ds), initDb(ds), initDb(ds)]);
    expect(results).toEqual([ds, ds, ds]);
    expect(registeredCounts(ds)).toEqual([1, 1, 1, 1]);
    await expectWorkingElection(ds);
  });

  test('entity globs in the list are kept as given and the registered classes appended', async () => {
    const glob = '/nonexistent-gemstone-app/**/*.entity.js';
    const ds = db.track(new DataSource({ ...db.options(), entities: [glob] } as DataSourceOptions));
    await initDb(ds);
    expect(ds.options.entities).toEqual([glob, ...GemstoneDB.entities]);
    await expectWorkingElection(ds);
  });

  if (db.kind !== 'sqlite') {
    test('a DataSource whose initialize() failed can be passed to initDb again once the database is there', async () => {
      const admin = db.track(await initDb(db.options()));
      const name = `${new URL(db.url()).pathname.slice(1)}_late`.slice(0, 60);
      const quoted = db.kind === 'postgres' ? `"${name}"` : `\`${name}\``;
      const url = new URL(db.url());
      url.pathname = `/${name}`;
      const ds = db.track(new DataSource({ ...db.options(), url: url.toString() } as DataSourceOptions));
      try {
        await expect(initDb(ds)).rejects.toThrow(); // the database does not exist yet
        expect(ds.isInitialized).toBe(false);
        expect(getDataSource()).toBe(admin);
        await query(admin, `CREATE DATABASE ${quoted}`);
        expect(await initDb(ds)).toBe(ds);
        expect(registeredCounts(ds)).toEqual([1, 1, 1, 1]);
        await expectWorkingElection(ds);
      } finally {
        if (ds.isInitialized) await ds.destroy();
        await query(admin, `DROP DATABASE IF EXISTS ${quoted}${db.kind === 'postgres' ? ' WITH (FORCE)' : ''}`);
      }
    });
  }

  test('an initialized DataSource without the entities is refused with how to fix it; nothing changes', async () => {
    const accepted = db.track(await initDb(db.options()));
    for (const entities of [[AppWidget], [AppWidget, ElectionLeader]]) {
      const ds = db.track(new DataSource({ ...db.options(), entities } as DataSourceOptions));
      await ds.initialize();
      const error = await initDb(ds).then(
        () => undefined,
        (e: unknown) => e,
      );
      expect(error).toBeInstanceOf(EntitiesNotRegisteredError);
      const message = (error as Error).message;
      expect(message).toContain('ElectionCandidate');
      expect(message).toMatch(/initDb.*before.*initialize\(\)/s);
      expect(message).toContain('...GemstoneDB.entities');
      expect(ds.hasMetadata(ElectionCandidate)).toBe(false); // TypeORM's metadata was not patched
      expect(getDataSource()).toBe(accepted); // the refused DataSource did not become the default
    }
  });

  test('an initialized DataSource that lists the entities is accepted as it is', async () => {
    const ds = db.track(new DataSource({ ...db.options(), entities: [AppWidget, ...GemstoneDB.entities] } as DataSourceOptions));
    await ds.initialize();
    const before = [...(ds.options.entities as unknown[])];
    expect(await initDb(ds)).toBe(ds);
    expect(ds.options.entities).toEqual(before);
    expect(getDataSource()).toBe(ds);
    await expectWorkingElection(ds);
  });

  describe('URL strings', () => {
    const urls: Record<string, () => Array<[string, string]>> = {
      postgres: () => [
        [db.url(), 'postgres'],
        [db.url().replace(/^postgres:/, 'postgresql:'), 'postgres'],
      ],
      mariadb: () => [
        [db.url(), 'mysql'],
        [db.url().replace(/^mysql:/, 'mariadb:'), 'mariadb'],
      ],
      sqlite: () => {
        const base = db.shared ? `sqlite:${sqliteFile(db)}` : 'sqlite::memory:';
        const list: Array<[string, string]> = [
          [base, 'better-sqlite3'],
          [`${base}?driver=better-sqlite3`, 'better-sqlite3'],
        ];
        // TypeORM 1.x removed the sqlite3 driver.
        if (TYPEORM_LINE === '0.3') list.push([`${base}?driver=sqlite3`, 'sqlite']);
        return list;
      },
    };

    test('every URL form of this database connects to it with the registered entities', async () => {
      const id = uuid();
      const space = ns();
      let first = true;
      for (const [url, type] of urls[db.kind]!()) {
        const ds = db.track(await initDb(url));
        expect({ url, type: ds.options.type }).toEqual({ url, type });
        expect(registeredCounts(ds)).toEqual([1, 1, 1, 1]);
        await expectWorkingElection(ds);
        if (db.shared) {
          // one database behind every form: what the first URL wrote, the others read
          const service = new ElectionService(ds);
          if (first) await service.elect(id, { ns: space });
          expect({ url, leader: (await service.getLeader({ ns: space }))?.leaderId }).toEqual({ url, leader: id });
        }
        first = false;
      }
    });

    if (db.kind === 'sqlite' && db.shared) {
      test('sqlite:<path> opens that file', async () => {
        const file = sqliteFile(db);
        const ds = db.track(await initDb(`sqlite:${file}`));
        expect(ds.options.database).toBe(file);
        expect(fs.existsSync(file)).toBe(true);
      });
    }
  });

  test('a bad target or URL is a ValidationError naming `target`; the default DataSource stays', async () => {
    const current = db.track(await initDb(db.options()));
    const bad: unknown[] = [
      '',
      '   ',
      'gemstone.sqlite',
      'ftp://example.com/db',
      'http://localhost:5432/test',
      'sqlite:',
      'sqlite:/tmp/x.sqlite?driver=nope',
      42,
      true,
      null,
      () => undefined,
      {},
      [],
      { database: 'x.sqlite' },
      { type: 'oracle', database: 'x' },
      { type: 'mongodb', url: 'mongodb://localhost/x' },
      // TypeORM 1.x removed the sqlite3 driver
      ...(TYPEORM_LINE === '1.x' ? ['sqlite::memory:?driver=sqlite3', { type: 'sqlite', database: ':memory:' }] : []),
    ];
    for (const target of bad) {
      const error = await initDb(target as string).then(
        () => undefined,
        (e: unknown) => e,
      );
      expect({ target, error }).toEqual({ target, error: expect.any(ValidationError) });
      expect((error as ValidationError).parameter).toBe('target');
      expect((error as Error).message).toMatch(/^target /);
    }
    expect(getDataSource()).toBe(current);
  });
});

describe('initDb URL errors', () => {
  test('the error for a bad URL does not repeat its password', async () => {
    const error = await initDb('ftp://admin:s3cr3t-pw@db.example.com/app').then(
      () => undefined,
      (e: unknown) => e as Error,
    );
    expect(error).toBeInstanceOf(ValidationError);
    expect(error!.message).toContain('db.example.com');
    expect(error!.message).not.toContain('s3cr3t-pw');
  });
});

describe('initDb with a target that came from an unset variable', () => {
  test('undefined, null, empty or blank: a ValidationError naming `target` and DATABASE_URL; nothing is opened', async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'gemstone-unset-'));
    const saved = { cwd: process.cwd(), gemstone: process.env.GEMSTONE_DB_URL, database: process.env.DATABASE_URL };
    process.chdir(dir);
    // The environment would not make the fallback right either: a given target is never replaced.
    process.env.GEMSTONE_DB_URL = `sqlite:${path.join(dir, 'env.sqlite')}`;
    try {
      for (const target of [undefined, null, '', '  \n']) {
        for (const call of [() => initDb(target as string), () => initDb(target as string, { createTables: false })]) {
          const error = await call().then(
            () => undefined,
            (e: unknown) => e,
          );
          expect({ target, error }).toEqual({ target, error: expect.any(ValidationError) });
          expect((error as ValidationError).parameter).toBe('target');
          expect((error as Error).message).toMatch(/DATABASE_URL/);
          expect((error as Error).message).toMatch(/pass a DataSource/);
        }
      }
      expect(fs.readdirSync(dir)).toEqual([]);
    } finally {
      process.chdir(saved.cwd);
      if (saved.gemstone === undefined) delete process.env.GEMSTONE_DB_URL;
      else process.env.GEMSTONE_DB_URL = saved.gemstone;
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('initDb default target', () => {
  const saved = { cwd: process.cwd(), url: process.env.GEMSTONE_DB_URL, databaseUrl: process.env.DATABASE_URL };
  let dir: string;
  const opened: DataSource[] = [];

  beforeEach(() => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'gemstone-default-'));
  });
  afterEach(async () => {
    process.chdir(saved.cwd);
    if (saved.url === undefined) delete process.env.GEMSTONE_DB_URL;
    else process.env.GEMSTONE_DB_URL = saved.url;
    if (saved.databaseUrl === undefined) delete process.env.DATABASE_URL;
    else process.env.DATABASE_URL = saved.databaseUrl;
    for (const ds of opened.splice(0)) if (ds.isInitialized) await ds.destroy();
    fs.rmSync(dir, { recursive: true, force: true });
  });

  /** initDb() with the working directory set to the temp dir while it opens the database. */
  async function initDbIn(cwd: string): Promise<DataSource> {
    process.chdir(cwd);
    try {
      const ds = await initDb();
      opened.push(ds);
      return ds;
    } finally {
      process.chdir(saved.cwd);
    }
  }

  test('without GEMSTONE_DB_URL or DATABASE_URL: the embedded file gemstone.sqlite in the working directory', async () => {
    delete process.env.GEMSTONE_DB_URL;
    delete process.env.DATABASE_URL;
    const ds = await initDbIn(dir);
    expect(['better-sqlite3', 'sqlite']).toContain(ds.options.type);
    expect(fs.existsSync(path.join(dir, 'gemstone.sqlite'))).toBe(true);
    expect(fs.existsSync(path.join(saved.cwd, 'gemstone.sqlite'))).toBe(false);
    await expectWorkingElection(ds);
    expect(getDataSource()).toBe(ds);
  });

  test('GEMSTONE_DB_URL wins over the embedded file', async () => {
    const file = path.join(dir, 'from-env.sqlite');
    process.env.GEMSTONE_DB_URL = `sqlite:${file}`;
    const ds = await initDbIn(dir);
    expect(ds.options.database).toBe(file);
    await expectWorkingElection(ds);
    expect(fs.existsSync(file)).toBe(true);
    expect(fs.existsSync(path.join(dir, 'gemstone.sqlite'))).toBe(false);
  });

  test('DATABASE_URL is read too; GEMSTONE_DB_URL wins when both are set; a blank one counts as unset', async () => {
    delete process.env.GEMSTONE_DB_URL;
    const fromDatabaseUrl = path.join(dir, 'database-url.sqlite');
    process.env.DATABASE_URL = `sqlite:${fromDatabaseUrl}`;
    expect((await initDbIn(dir)).options.database).toBe(fromDatabaseUrl);

    const fromGemstone = path.join(dir, 'gemstone-url.sqlite');
    process.env.GEMSTONE_DB_URL = `sqlite:${fromGemstone}`;
    expect((await initDbIn(dir)).options.database).toBe(fromGemstone);

    process.env.GEMSTONE_DB_URL = ' ';
    expect((await initDbIn(dir)).options.database).toBe(fromDatabaseUrl);
  });

  test('a bad GEMSTONE_DB_URL is a ValidationError naming `target`', async () => {
    process.env.GEMSTONE_DB_URL = 'nosuchdb://x';
    await expect(initDbIn(dir)).rejects.toMatchObject({ name: 'ValidationError', parameter: 'target' });
    expect(fs.readdirSync(dir)).toEqual([]);
  });
});
