/**
 * An application DataSource with `synchronize: true` that lists
 * `...GemstoneDB.entities` never alters, drops or empties the plugin's tables, although their
 * database-specific column types differ from what TypeORM would derive from the entities.
 */
import { DataSource, DataSourceOptions } from 'typeorm';
import { ElectionService, GemstoneDB, initDb } from 'gemstone-utils';
import { describeEachDatabase, snapshot, uuid } from '../support/databases';
import { ns } from '../support/rows';
import { AppWidget } from './support/app-entities';
import { ELECTION_TABLES, schemaDump, tableNames } from './support/schema';

describeEachDatabase('synchronize: true next to the plugin tables', (db) => {
  /** Rows in both tables: a leader with its term, a second candidate, a vacated namespace. */
  async function electSome(ds: DataSource): Promise<void> {
    const service = new ElectionService(ds);
    const [space, other] = [ns(), ns()];
    const [a, b] = [uuid(), uuid()];
    await service.elect(a, { ns: space });
    await service.registerCandidate(b, { ns: space });
    await service.elect(b, { ns: other });
    await service.resign(b, { ns: other });
  }

  /** TypeORM's own plan for `synchronize` (what `schema:log` prints): public API, runs nothing. */
  async function pendingSchemaSql(ds: DataSource): Promise<string[]> {
    const plan = await ds.driver.createSchemaBuilder().log();
    return plan.upQueries.map((q) => q.query);
  }

  if (db.shared) {
    test('an app DataSource synchronizing after initDb created the tables leaves them exactly as they were', async () => {
      const installed = db.track(await initDb(db.options()));
      await electSome(installed);
      const rows = await snapshot(installed);
      const schema = await schemaDump(installed, ELECTION_TABLES);
      expect(rows).toMatch(/"term":"?1/);

      const app = db.track(
        new DataSource({ ...db.options(), entities: [...GemstoneDB.entities, AppWidget], synchronize: true } as DataSourceOptions),
      );
      await app.initialize();
      expect(await tableNames(app)).toContain('app_widget'); // synchronize did run
      expect(await schemaDump(app, ELECTION_TABLES)).toEqual(schema);
      expect(await snapshot(app)).toEqual(rows);
      expect(await initDb(app)).toBe(app); // and the library accepts that DataSource
      expect(await snapshot(app)).toEqual(rows);
    });
  }

  test('synchronize of an initDb-managed app DataSource never plans or runs a change to the plugin tables', async () => {
    const app = db.track(new DataSource({ ...db.options(), entities: [AppWidget], synchronize: true } as DataSourceOptions));
    await initDb(app); // initializes (synchronize creates app_widget), then creates the plugin tables
    await electSome(app);
    const rows = await snapshot(app);
    const schema = await schemaDump(app, ELECTION_TABLES);

    for (const statement of await pendingSchemaSql(app)) expect(statement).not.toMatch(/gemstone_election/);
    await app.synchronize();
    await app.synchronize(false);
    expect(await schemaDump(app, ELECTION_TABLES)).toEqual(schema);
    expect(await snapshot(app)).toEqual(rows);
    expect(await tableNames(app)).toEqual(expect.arrayContaining(['app_widget', ...ELECTION_TABLES]));
  });
});
