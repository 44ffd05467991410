/**
 * `initDb` on a server where the named database does not exist (a quick start without
 * DATABASE_URL, a typo): one `DatabaseNotFoundError` whose one-line message says to create it,
 * with the driver's error as `cause`, whatever the form of the target. SQLite creates a missing
 * file, so it has no such case.
 */
import { DataSource, DataSourceOptions } from 'typeorm';
import { DatabaseNotFoundError, GemstoneError, initDb } from 'gemstone-utils';
import { describeEachDatabase, TestDatabase } from '../support/databases';

/** `url` with another database name. */
function renamed(url: string, database: string): string {
  const parsed = new URL(url);
  parsed.pathname = `/${database}`;
  return parsed.toString();
}

/** A name no database of the server has: this file's fresh database's, with a suffix. */
function missingName(db: TestDatabase): string {
  return `${new URL(db.url()).pathname.slice(1)}_missing`;
}

function expectNotFound(error: unknown, db: TestDatabase, name: string): void {
  expect(error).toBeInstanceOf(DatabaseNotFoundError);
  expect(error).toBeInstanceOf(GemstoneError);
  const failure = error as DatabaseNotFoundError;
  expect(failure.name).toBe('DatabaseNotFoundError');
  expect(failure.database).toBe(name);
  expect(failure.message).not.toMatch(/\n/);
  expect(failure.message).toContain(`database "${name}" does not exist`);
  expect(failure.message).toContain(db.kind === 'postgres' ? `CREATE DATABASE "${name}"` : `CREATE DATABASE \`${name}\``);
  const cause = failure.cause as { code?: string; errno?: number };
  if (db.kind === 'postgres') expect(cause.code).toBe('3D000');
  else expect(cause.errno).toBe(1049);
}

async function rejection(work: Promise<unknown>): Promise<unknown> {
  try {
    await work;
  } catch (error) {
    return error;
  }
  throw new Error('initDb resolved on a database that does not exist');
}

describeEachDatabase(
  'initDb: the database does not exist',
  (db) => {
    test('a URL', async () => {
      const name = missingName(db);
      expectNotFound(await rejection(initDb(renamed(db.url(), name))), db, name);
    });

    test('DataSourceOptions with `database` instead of a URL path', async () => {
      const name = missingName(db);
      const url = new URL(db.url());
      const options = {
        type: db.options().type,
        host: url.hostname,
        port: Number(url.port),
        username: decodeURIComponent(url.username),
        ...(url.password ? { password: decodeURIComponent(url.password) } : {}),
        database: name,
      } as DataSourceOptions;
      expectNotFound(await rejection(initDb(options)), db, name);
    });

    test('a DataSource: refused and left uninitialized, again on a second call', async () => {
      const name = missingName(db);
      const dataSource = db.track(new DataSource({ ...db.options(), url: renamed(db.url(), name) } as DataSourceOptions));
      expectNotFound(await rejection(initDb(dataSource)), db, name);
      expect(dataSource.isInitialized).toBe(false);
      expectNotFound(await rejection(initDb(dataSource)), db, name);
    });
  },
  { kinds: ['postgres', 'mariadb'] },
);
