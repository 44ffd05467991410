/**
 * Hostile input for `initDb(target, options)`: a bad target or option is a ValidationError
 * naming it; a rejected call runs no statement and keeps the previous default DataSource.
 */
import fc from 'fast-check';
import type { DataSource } from 'typeorm';
import { getDataSource, initDb } from 'gemstone-utils';
import { describeEachDatabase, snapshot, uuid } from '../support/databases';
import { expectVerdict, garbage, RUNS } from './hostile';

const createTablesArb = fc.oneof(fc.boolean(), garbage, fc.constantFrom<unknown>('true', 'false', 0, 1));

/** initDb options: objects with hostile `createTables`, and non-objects. */
const initOptionsArb: fc.Arbitrary<unknown> = fc.oneof(
  { weight: 5, arbitrary: fc.record({ createTables: createTablesArb }, { requiredKeys: [] }) },
  { weight: 1, arbitrary: fc.constantFrom<unknown>(undefined, null, true, 'createTables', 7, () => ({})) },
);

function invalidInitOptions(options: unknown): string[] {
  if (options === undefined) return [];
  if (typeof options !== 'object' || options === null) return ['options'];
  const value = (options as { createTables?: unknown }).createTables;
  return value === undefined || typeof value === 'boolean' ? [] : ['options.createTables'];
}

/** Strings that are no database URL (no supported scheme). */
const notAUrl = fc.oneof(
  fc.constantFrom('', ' ', 'postgre://x', 'mysql', 'sqlite', 'http://127.0.0.1:5432/test', "'; DROP TABLE x; --", '😀://db', 'sqlite:', 'sqlite:?driver=better-sqlite3'),
  fc.string({ maxLength: 30 }).filter((s) => !/^\s*(postgres|postgresql|mysql|mariadb|sqlite):/i.test(s)),
);

describeEachDatabase('initDb hostile input', (db) => {
  let ds: DataSource;

  beforeAll(async () => {
    ds = await db.connect();
  });

  test('options: createTables must be a boolean; a rejected call writes nothing and keeps the default', async () => {
    await fc.assert(
      fc.asyncProperty(initOptionsArb, async (options) => {
        const before = await snapshot(ds);
        const outcome = await expectVerdict(invalidInitOptions(options), () => initDb(ds, options as { createTables?: boolean }));
        if (outcome.ok) expect(outcome.value).toBe(ds);
        else expect(await snapshot(ds)).toBe(before);
        expect(getDataSource()).toBe(ds);
      }),
      { numRuns: RUNS },
    );
  });

  test('target: anything but a DataSource, its options or a supported URL is refused as target', async () => {
    const before = await snapshot(ds);
    await fc.assert(
      fc.asyncProperty(
        fc.oneof(
          notAUrl,
          fc.constantFrom<unknown>(null, 0, 1, true, false, NaN, Symbol.for('db'), () => ds, 10n),
          fc.record({ url: fc.string(), database: fc.string() }, { requiredKeys: [] }),
        ),
        async (target) => {
          await expectVerdict(['target'], () => initDb(target as string));
          expect(getDataSource()).toBe(ds);
        },
      ),
      { numRuns: RUNS },
    );
    expect(await snapshot(ds)).toBe(before);
  });

  test('a sqlite: URL with an unknown driver is refused as target before any file is created', async () => {
    const file = `/tmp/gemstone-never-${uuid()}.sqlite`;
    await expect(initDb(`sqlite:${file}?driver=oracle`)).rejects.toMatchObject({ name: 'ValidationError', parameter: 'target' });
    expect(require('fs').existsSync(file)).toBe(false);
  });
});
