/**
 * Migrations produce exactly the schema initDb creates: `GemstoneDB.migrations`
 * through a DataSource's `migrations` option, undo, re-runs over tables initDb made, and the
 * PostgreSQL `schema` option (tables land in that schema, elections work there).
 */
import { DataSource, DataSourceOptions } from 'typeorm';
import { ElectionService, GemstoneDB, initDb } from 'gemstone-utils';
import { describeEachDatabase, query, snapshot, TestDatabase, uuid } from '../support/databases';
import { ns } from '../support/rows';
import { freshOptions } from './support/fresh';
import { QueryLog } from './support/query-log';
import { ELECTION_INDEX, ELECTION_TABLES, indexNames, schemaDump, tableNames } from './support/schema';

const FIRST_MIGRATION = 'GemstoneElectionTables1763683200000';
const IDENTITY_MIGRATION = 'GemstoneElectionIdentity1795392000000';
const RUNS_MIGRATION = 'GemstoneElectionRuns1796256000000';
const HEARTBEAT_MIGRATION = 'GemstoneElectionLeanHeartbeat1797120000000';
const MIGRATION_NAMES = [FIRST_MIGRATION, IDENTITY_MIGRATION, RUNS_MIGRATION, HEARTBEAT_MIGRATION];

/** A DataSource on a fresh database that lists the plugin's migrations, as an application would. */
async function migratingDataSource(db: TestDatabase, extra: Partial<DataSourceOptions> = {}): Promise<DataSource> {
  return db.track(new DataSource({ ...(await freshOptions(db)), migrations: [...GemstoneDB.migrations], ...extra } as DataSourceOptions));
}

/** Namespaces that differ only in case or trailing space stay separate elections. */
async function expectExactNamespaces(ds: DataSource): Promise<void> {
  const service = new ElectionService(ds);
  const base = ns();
  const spaces = [base, base.toUpperCase(), `${base} `];
  const ids = spaces.map(() => uuid());
  for (const [i, space] of spaces.entries()) expect(await service.elect(ids[i]!, { ns: space })).toBe(ids[i]);
  for (const [i, space] of spaces.entries()) expect((await service.getLeader({ ns: space }))!.leaderId).toBe(ids[i]);
}

describeEachDatabase('migrations', (db) => {
  let reference: Record<string, unknown>;

  beforeAll(async () => {
    reference = await schemaDump(await db.connect(), ELECTION_TABLES);
  });

  test('migrationsRun with createTables: false creates exactly the schema initDb creates', async () => {
    const log = new QueryLog();
    const ds = await migratingDataSource(db, { migrationsRun: true, logger: log });
    await initDb(ds, { createTables: false });
    expect(await schemaDump(ds, ELECTION_TABLES)).toEqual(reference);
    expect(await ds.showMigrations()).toBe(false); // nothing pending
    const executed = await query<{ name: string }>(ds, 'SELECT name FROM migrations');
    expect(executed.map((row) => row.name)).toEqual(MIGRATION_NAMES);
    expect(log.ddl().filter((s) => /gemstone_election/.test(s)).length).toBeGreaterThan(0);
    if (db.kind === 'mariadb') {
      const nsColumns = ((await schemaDump(ds, ELECTION_TABLES)).columns as Array<Record<string, unknown>>).filter((c) => c.column_name === 'ns');
      expect(nsColumns.map((c) => c.collation_name)).toEqual(['utf8mb4_nopad_bin', 'utf8mb4_nopad_bin', 'utf8mb4_nopad_bin', 'utf8mb4_nopad_bin']);
    }
    await expectExactNamespaces(ds);
  });

  test('runMigrations() creates the tables, undoLastMigration drops them step by step, running again restores them', async () => {
    const ds = await migratingDataSource(db);
    await initDb(ds, { createTables: false });
    expect(await tableNames(ds)).toEqual([]);

    const ran = await ds.runMigrations();
    expect(ran.map((m) => m.name)).toEqual(MIGRATION_NAMES);
    expect(await tableNames(ds)).toEqual([...ELECTION_TABLES, 'migrations'].sort());
    expect(await schemaDump(ds, ELECTION_TABLES)).toEqual(reference);

    await ds.undoLastMigration(); // the heartbeat step: step 1's candidate index is back
    expect(await indexNames(ds, 'gemstone_election_candidate')).toContain(ELECTION_INDEX);
    expect((await query<{ name: string }>(ds, 'SELECT name FROM migrations')).map((r) => r.name)).toEqual([FIRST_MIGRATION, IDENTITY_MIGRATION, RUNS_MIGRATION]);
    await ds.undoLastMigration(); // the runs step: the runs table goes
    expect(await tableNames(ds)).toEqual(['gemstone_election_candidate', 'gemstone_election_history', 'gemstone_election_leader', 'migrations']);
    expect((await query<{ name: string }>(ds, 'SELECT name FROM migrations')).map((r) => r.name)).toEqual([FIRST_MIGRATION, IDENTITY_MIGRATION]);
    await ds.undoLastMigration(); // the identity step: history table and candidate columns go
    expect(await tableNames(ds)).toEqual(['gemstone_election_candidate', 'gemstone_election_leader', 'migrations']);
    expect((await query<{ name: string }>(ds, 'SELECT name FROM migrations')).map((r) => r.name)).toEqual([FIRST_MIGRATION]);
    await ds.undoLastMigration();
    expect(await tableNames(ds)).toEqual(['migrations']);
    expect(await query(ds, 'SELECT name FROM migrations')).toEqual([]);

    expect((await ds.runMigrations()).map((m) => m.name)).toEqual(MIGRATION_NAMES);
    expect(await schemaDump(ds, ELECTION_TABLES)).toEqual(reference);
    await expectExactNamespaces(ds);
  });

  test('running the migrations after initDb created the tables keeps tables and rows as they were', async () => {
    const ds = await migratingDataSource(db);
    await initDb(ds);
    await expectExactNamespaces(ds);
    const rows = await snapshot(ds);
    expect((await ds.runMigrations()).map((m) => m.name)).toEqual(MIGRATION_NAMES);
    expect(await schemaDump(ds, ELECTION_TABLES)).toEqual(reference);
    expect(await snapshot(ds)).toEqual(rows);
    expect(await initDb(ds)).toBe(ds); // and initDb afterwards too
    expect(await snapshot(ds)).toEqual(rows);
  });

  test('migrations run when initDb initializes the DataSource, also with transaction mode "each"', async () => {
    const ds = await migratingDataSource(db, { migrationsRun: true, migrationsTransactionMode: 'each' });
    await initDb(ds); // migrations first (inside initialize), then the installer finds the tables
    expect(await schemaDump(ds, ELECTION_TABLES)).toEqual(reference);
    expect((await query<{ name: string }>(ds, 'SELECT name FROM migrations')).map((r) => r.name)).toEqual(MIGRATION_NAMES);
  });
});

describeEachDatabase(
  'PostgreSQL schema option',
  (db) => {
    let admin: DataSource;

    beforeAll(async () => {
      admin = await db.connect({}, { createTables: false });
      await query(admin, 'CREATE SCHEMA app');
      await query(admin, 'CREATE SCHEMA app_migrated');
    });

    /** The dump with the schema's name taken out (it appears in index definitions). */
    async function dumpOf(ds: DataSource, schema: string): Promise<string> {
      return JSON.stringify(await schemaDump(ds, ELECTION_TABLES, schema)).split(`${schema}.`).join('<schema>.');
    }

    test("schema: 'app' puts the tables in app (also when public has its own) and elections run there", async () => {
      await initDb(admin); // election tables in public first: they must not count as present in app
      const ds = db.track(await initDb(db.options({ schema: 'app' })));
      expect(await tableNames(ds, 'app')).toEqual([...ELECTION_TABLES]);
      expect(await dumpOf(ds, 'app')).toEqual(await dumpOf(admin, 'public'));

      const service = new ElectionService(ds);
      const space = ns();
      const [a, b] = [uuid(), uuid()];
      expect(await service.elect(a, { ns: space })).toBe(a);
      expect(await service.elect(b, { ns: space })).toBe(a);
      expect(await service.listCandidates({ ns: space })).toEqual([a, b].sort());
      const info = await ds.transaction((manager) => service.assertLeader(a, { ns: space, session: manager }));
      expect(info).toMatchObject({ leaderId: a, term: 1 });
      expect(await service.resign(a, { ns: space })).toBe(true);
      expect(await service.elect(b, { ns: space })).toBe(b);

      const inApp = await query(admin, 'SELECT leader_id, term FROM app.gemstone_election_leader WHERE ns = ?', [space]);
      expect(inApp).toEqual([{ leader_id: b, term: '2' }]);
      expect(await query(admin, 'SELECT * FROM public.gemstone_election_leader WHERE ns = ?', [space])).toEqual([]);
    });

    test("the migrations with schema: 'app_migrated' create the same tables there", async () => {
      const ds = db.track(
        new DataSource(db.options({ schema: 'app_migrated', migrations: [...GemstoneDB.migrations], migrationsRun: true }) as DataSourceOptions),
      );
      await initDb(ds, { createTables: false });
      expect(await tableNames(ds, 'app_migrated')).toEqual([...ELECTION_TABLES, 'migrations'].sort());
      expect(await dumpOf(ds, 'app_migrated')).toEqual(await dumpOf(admin, 'public'));
      const id = uuid();
      expect(await new ElectionService(ds).elect(id, { ns: ns() })).toBe(id);
      for (let step = 0; step < 4; step++) await ds.undoLastMigration();
      expect(await tableNames(ds, 'app_migrated')).toEqual(['migrations']);
    });
  },
  { kinds: ['postgres'] },
);
