/**
 * Naming strategies: one that renames tables works for every operation (the names come from the
 * entity metadata); a snake_case strategy changes nothing (the columns are already snake_case);
 * one that renames columns is refused by initDb with an UnsupportedConfigurationError naming it.
 */
import { DataSource, DataSourceOptions, DefaultNamingStrategy, NamingStrategyInterface } from 'typeorm';
import { ElectionService, LeaderElector, UnsupportedConfigurationError } from 'gemstone-utils';
import { describeEachDatabase, query, TestDatabase, uuid } from '../support/databases';
import { ns as freshNs } from '../support/rows';
import { waitFor } from '../elector/helpers';

const snake = (text: string) => text.replace(/([a-z0-9])([A-Z])/g, '$1_$2').replace(/([A-Z])([A-Z][a-z])/g, '$1_$2').toLowerCase();

/** Like typeorm-naming-strategies' SnakeNamingStrategy: given names are kept, the rest snake_cased. */
class SnakeNamingStrategy extends DefaultNamingStrategy implements NamingStrategyInterface {
  override tableName(className: string, customName: string | undefined): string {
    return customName ? customName : snake(className);
  }
  override columnName(propertyName: string, customName: string | undefined, prefixes: string[]): string {
    return snake(prefixes.concat('').join('_')) + (customName ? customName : snake(propertyName));
  }
}

/** Puts every table under an `app_` name, as some organisations' conventions do. */
class AppTablesStrategy extends DefaultNamingStrategy implements NamingStrategyInterface {
  override tableName(className: string, customName: string | undefined): string {
    return `app_${customName ?? snake(className)}`;
  }
}

/** Upper-cases every column, ignoring the given names. */
class UpperColumnsStrategy extends DefaultNamingStrategy implements NamingStrategyInterface {
  override columnName(propertyName: string): string {
    return propertyName.toUpperCase();
  }
}

async function tableNames(ds: DataSource, db: TestDatabase): Promise<string[]> {
  const rows =
    db.kind === 'postgres'
      ? await query<{ name: string }>(ds, 'SELECT table_name AS name FROM information_schema.tables WHERE table_schema = current_schema()')
      : db.kind === 'mariadb'
        ? await query<{ name: string }>(ds, 'SELECT table_name AS name FROM information_schema.tables WHERE table_schema = DATABASE()')
        : await query<{ name: string }>(ds, "SELECT name FROM sqlite_master WHERE type = 'table'");
  return rows.map((r) => String(r.name)).sort();
}

async function elections(ds: DataSource): Promise<void> {
  const svc = new ElectionService(ds);
  const ns = freshNs();
  const [a, b] = [uuid(), uuid()];
  expect(await svc.elect(a, { ns })).toBe(a);
  expect(await svc.elect(b, { ns })).toBe(a);
  expect(await svc.getLeader({ ns })).toMatchObject({ leaderId: a, term: 1 });
  expect(await svc.resign(a, { ns })).toBe(true);
  expect(await svc.elect(b, { ns })).toBe(b);
  const elector = new LeaderElector({ dataSource: ds, ns: freshNs(), expireSeconds: 2, intervalMs: 200 });
  try {
    await elector.start();
    await waitFor('the elector to lead', () => elector.isLeader, 5_000);
  } finally {
    await elector.stop();
  }
}

describeEachDatabase('naming strategies', (db) => {
  test('a snake_case strategy keeps the names and works', async () => {
    const other = await db.sibling();
    const ds = await other.connect({ namingStrategy: new SnakeNamingStrategy() } as Partial<DataSourceOptions>);
    expect(await tableNames(ds, db)).toEqual(expect.arrayContaining(['gemstone_election_candidate', 'gemstone_election_leader']));
    await elections(ds);
  });

  test('a strategy that renames tables: initDb and every operation use the renamed tables', async () => {
    const other = await db.sibling();
    const ds = await other.connect({ namingStrategy: new AppTablesStrategy() } as Partial<DataSourceOptions>);
    const names = await tableNames(ds, db);
    expect(names).toEqual(expect.arrayContaining(['app_gemstone_election_candidate', 'app_gemstone_election_leader', 'app_gemstone_election_run']));
    expect(names).not.toContain('gemstone_election_leader');
    expect(names).not.toContain('gemstone_election_run');
    await elections(ds);
  });

  test('a strategy that renames columns is refused by initDb, naming the option', async () => {
    const other = await db.sibling();
    const error = await other.connect({ namingStrategy: new UpperColumnsStrategy() } as Partial<DataSourceOptions>).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(error).toBeInstanceOf(UnsupportedConfigurationError);
    expect((error as UnsupportedConfigurationError).option).toBe('namingStrategy');
    expect((error as Error).message).toMatch(/namingStrategy.*column/);
  });
});
