/**
 * `getDataSource()` throws NotInitializedError before any initDb, then returns the
 * DataSource of the latest initDb call (one default for `gemstone-utils` and `gemstone-utils/db`).
 */
import { DataSource } from 'typeorm';
import { getDataSource, initDb, NotInitializedError } from 'gemstone-utils';
import * as dbModule from 'gemstone-utils/db';
import { describeEachDatabase } from '../support/databases';
import { AppWidget } from './support/app-entities';

type DbModule = typeof import('gemstone-utils/db');

// Runs first: jest gives every test file its own module registry, and nothing above called initDb.
test('before any initDb: NotInitializedError saying what to call', () => {
  expect(() => getDataSource()).toThrow(NotInitializedError);
  expect(() => dbModule.getDataSource()).toThrow(NotInitializedError);
  expect(() => getDataSource()).toThrow(/initDb/);
});

test('a fresh module registry starts without a default, whatever another registry initialized', async () => {
  const ds = await initDb('sqlite::memory:');
  try {
    expect(getDataSource()).toBe(ds);
    jest.isolateModules(() => {
      const fresh = require('gemstone-utils/db') as DbModule;
      expect(fresh.getDataSource).not.toBe(getDataSource); // really a new copy of the module
      let error: unknown;
      try {
        fresh.getDataSource();
      } catch (e) {
        error = e;
      }
      expect(error).toBeInstanceOf(fresh.NotInitializedError);
      expect((error as Error).name).toBe('NotInitializedError');
    });
  } finally {
    await ds.destroy();
  }
});

describeEachDatabase('getDataSource', (db) => {
  test('returns the DataSource of the latest initDb call', async () => {
    const first = db.track(new DataSource(db.options()));
    expect(await initDb(first)).toBe(first);
    expect(getDataSource()).toBe(first);
    expect(dbModule.getDataSource()).toBe(first); // one default behind both entry points

    const second = db.track(await dbModule.initDb(db.options()));
    expect(second).not.toBe(first);
    expect(getDataSource()).toBe(second);

    await initDb(first); // the latest call wins, also for a DataSource seen before
    expect(getDataSource()).toBe(first);
  });

  test('a refused initDb leaves the default as it was', async () => {
    const current = db.track(await initDb(db.options()));
    const unregistered = db.track(new DataSource({ ...db.options(), entities: [AppWidget] }));
    await unregistered.initialize();
    await expect(initDb(unregistered)).rejects.toThrow(/GemstoneDB\.entities/);
    await expect(initDb('nosuchdb://x')).rejects.toMatchObject({ parameter: 'target' });
    await expect(initDb(db.options(), { createTables: 'no' as never })).rejects.toMatchObject({ parameter: 'options.createTables' });
    expect(getDataSource()).toBe(current);
  });
});
