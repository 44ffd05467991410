/**
 * `options.createTables`: initDb creates the two election tables and their index —
 * only those; the application's tables are never created, altered or dropped; with `false` no DDL
 * runs at all, and a later call on the same DataSource creates what was skipped.
 */
import { DataSource, DataSourceOptions } from 'typeorm';
import { ElectionService, initDb, ValidationError } from 'gemstone-utils';
import { describeEachDatabase, query, snapshot, TestDatabase, uuid } from '../support/databases';
import { ns } from '../support/rows';
import { AppGadget, AppWidget, CREATE_APP_WIDGET } from './support/app-entities';
import { freshOptions } from './support/fresh';
import { QueryLog } from './support/query-log';
import { ELECTION_INDEX, ELECTION_TABLES, indexNames, schemaDump, tableNames, tableRows } from './support/schema';

/** A DataSource on a fresh empty database, as an application would build it, recording its SQL. */
async function appDataSource(db: TestDatabase): Promise<{ ds: DataSource; log: QueryLog }> {
  const log = new QueryLog();
  const ds = db.track(new DataSource({ ...(await freshOptions(db)), entities: [AppWidget, AppGadget], logger: log } as DataSourceOptions));
  return { ds, log };
}

describeEachDatabase('initDb createTables', (db) => {
  test('createTables: false runs no DDL; a later initDb creates only the election tables and index', async () => {
    const { ds, log } = await appDataSource(db);
    expect(await initDb(ds, { createTables: false })).toBe(ds);
    expect(ds.isInitialized).toBe(true);
    expect(log.ddl()).toEqual([]);
    expect(await tableNames(ds)).toEqual([]);

    // the application's own table, made its own way, with data
    for (const statement of CREATE_APP_WIDGET) await query(ds, statement);
    const appTables = await tableNames(ds);
    const appSchema = await schemaDump(ds, appTables);
    const appRows = await tableRows(ds, 'app_widget');
    log.clear();

    await initDb(ds); // createTables defaults to true
    expect(await tableNames(ds)).toEqual([...appTables, ...ELECTION_TABLES].sort());
    expect(await tableNames(ds)).not.toContain('app_gadget'); // listed entity of the app: not created
    expect(await schemaDump(ds, appTables)).toEqual(appSchema);
    expect(await tableRows(ds, 'app_widget')).toEqual(appRows);
    // every DDL statement names an election table, none the application's
    expect(log.ddl().length).toBeGreaterThan(0);
    for (const statement of log.ddl()) {
      expect(statement).toMatch(/gemstone_election_(candidate|leader|history|run)/);
      expect(statement).not.toMatch(/app_(widget|gadget)/);
    }

    // A heartbeat rewrites expires_at: no index holds it (step 1's (ns, expires_at) is dropped).
    const candidateIndexes = await indexNames(ds, 'gemstone_election_candidate');
    expect(candidateIndexes).not.toContain(ELECTION_INDEX);
    expect(candidateIndexes).toHaveLength(1); // the primary key
    expect(await indexNames(ds, 'gemstone_election_leader')).toHaveLength(1); // the primary key
    expect(JSON.stringify(await schemaDump(ds, ['gemstone_election_candidate']))).not.toMatch(/expires_at\)/);

    const id = uuid();
    expect(await new ElectionService(ds).elect(id, { ns: ns() })).toBe(id);
  });

  test('createTables: false on a fresh database leaves the election tables absent', async () => {
    const { ds, log } = await appDataSource(db);
    await initDb(ds, { createTables: false });
    await initDb(ds, { createTables: false }); // again: still nothing
    expect(log.ddl()).toEqual([]);
    expect(await tableNames(ds)).toEqual([]);
  });

  test('initDb again on the same DataSource is harmless: no DDL, rows and schema unchanged', async () => {
    const { ds, log } = await appDataSource(db);
    await initDb(ds);
    const service = new ElectionService(ds);
    const space = ns();
    await service.elect(uuid(), { ns: space });
    await service.registerCandidate(uuid(), { ns: space });
    const rows = await snapshot(ds);
    const schema = await schemaDump(ds, ELECTION_TABLES);
    log.clear();

    for (const options of [{}, { createTables: true }, { createTables: false }]) {
      expect(await initDb(ds, options)).toBe(ds);
    }
    expect(log.ddl()).toEqual([]); // tables present: no DDL, so roles without DDL rights can call it too
    expect(await snapshot(ds)).toEqual(rows);
    expect(await schemaDump(ds, ELECTION_TABLES)).toEqual(schema);
  });

  // MariaDB: the indexes are part of each CREATE TABLE, which skips a table that exists.
  (db.kind === 'mariadb' ? test.skip : test)('an election index someone dropped is created again by initDb; rows and the rest stay', async () => {
    const { ds } = await appDataSource(db);
    await initDb(ds);
    const complete = await schemaDump(ds, ELECTION_TABLES);
    await new ElectionService(ds).elect(uuid(), { ns: ns() });
    const rows = await snapshot(ds);
    const index = 'IDX_gemstone_election_history_ended_at';
    await query(ds, db.kind === 'mariadb' ? `DROP INDEX ${index} ON gemstone_election_history` : `DROP INDEX "${index}"`);
    expect(await indexNames(ds, 'gemstone_election_history')).not.toContain(index);

    await initDb(ds);
    expect(await schemaDump(ds, ELECTION_TABLES)).toEqual(complete);
    expect(await snapshot(ds)).toEqual(rows);
  });

  test("the candidate index of earlier versions on (ns, expires_at) is dropped by initDb; rows and the rest stay", async () => {
    const { ds } = await appDataSource(db);
    await initDb(ds);
    const complete = await schemaDump(ds, ELECTION_TABLES);
    await new ElectionService(ds).elect(uuid(), { ns: ns() });
    const rows = await snapshot(ds);
    await query(ds, `CREATE INDEX ${db.kind === 'mariadb' ? ELECTION_INDEX : `"${ELECTION_INDEX}"`} ON gemstone_election_candidate (ns, expires_at)`);
    expect(await indexNames(ds, 'gemstone_election_candidate')).toContain(ELECTION_INDEX);

    await initDb(ds);
    expect(await indexNames(ds, 'gemstone_election_candidate')).not.toContain(ELECTION_INDEX);
    expect(await schemaDump(ds, ELECTION_TABLES)).toEqual(complete);
    expect(await snapshot(ds)).toEqual(rows);
  });

  (db.kind === 'postgres' ? test : test.skip)("PostgreSQL: the tables' fillfactor is set where missing, and one chosen otherwise stays", async () => {
    const { ds, log } = await appDataSource(db);
    await initDb(ds);
    const fillfactors = async () =>
      (
        await query<{ relname: string; reloptions: string[] | null }>(
          ds,
          `SELECT relname, reloptions FROM pg_class WHERE relname IN ('gemstone_election_candidate', 'gemstone_election_leader') AND relnamespace = current_schema()::regnamespace ORDER BY relname`,
        )
      ).map((row) => row.reloptions);
    await query(ds, 'ALTER TABLE gemstone_election_candidate RESET (fillfactor)');
    await query(ds, 'ALTER TABLE gemstone_election_leader SET (fillfactor = 50)');
    log.clear();
    await initDb(ds);
    expect(await fillfactors()).toEqual([['fillfactor=70'], ['fillfactor=50']]);
    // Besides the later steps' CREATE … IF NOT EXISTS (no-ops here), that ALTER alone: step 1's
    // candidate index is not built again only to be dropped.
    expect(log.ddl().filter((statement) => !/^CREATE (TABLE|INDEX) IF NOT EXISTS "[^"]*" ON "gemstone_election_(history|run)"|^CREATE TABLE IF NOT EXISTS "gemstone_election_(history|run)"/.test(statement))).toEqual([
      'ALTER TABLE "gemstone_election_candidate" SET (fillfactor = 70)',
    ]);
  });

  test('createTables that is not a boolean is a ValidationError naming it; nothing happens', async () => {
    const { ds, log } = await appDataSource(db);
    for (const createTables of ['yes', 1, 0, null, 'false']) {
      const error = await initDb(ds, { createTables } as never).then(
        () => undefined,
        (e: unknown) => e,
      );
      expect({ createTables, error }).toEqual({ createTables, error: expect.any(ValidationError) });
      expect((error as ValidationError).parameter).toBe('options.createTables');
    }
    for (const options of [null, 5, 'createTables', ['createTables']]) {
      await expect(initDb(ds, options as never)).rejects.toMatchObject({ name: 'ValidationError', parameter: 'options' });
    }
    // a typo must not silently fall back to the default (and run DDL)
    await expect(initDb(ds, { createTable: false } as never)).rejects.toMatchObject({ name: 'ValidationError', parameter: 'options.createTable' });
    expect(ds.isInitialized).toBe(false);
    expect(log.statements).toEqual([]);
  });
});
