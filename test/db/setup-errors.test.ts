/**
 * The failures a new setup meets — server unreachable, login refused, tables missing, DataSource
 * never initialized — leave initDb, the ElectionService and the loops as GemstoneErrors that name
 * the database (password redacted) and say what to do; a loop whose tables are missing fails
 * start() instead of ticking errors forever. Real servers: a refused port is 127.0.0.1:1.
 */
import { DataSource, DataSourceOptions } from 'typeorm';
import {
  DatabaseAuthenticationError,
  DatabaseUnreachableError,
  DataSourceNotInitializedError,
  ElectionService,
  GemstoneDB,
  GemstoneError,
  initDb,
  LeaderElector,
  LeaderElectorGroup,
  TablesMissingError,
  withTransaction,
} from 'gemstone-utils';
import { describeEachDatabase, TestDatabase } from '../support/databases';
import { ns } from '../support/rows';

const PASSWORD = 'hunter2-not-shown';

/** `db`'s URL with another port, user or password. */
function urlWith(db: TestDatabase, change: { port?: string; username?: string; password?: string }): string {
  const url = new URL(db.url());
  if (change.port !== undefined) url.port = change.port;
  if (change.username !== undefined) url.username = change.username;
  if (change.password !== undefined) url.password = change.password;
  return url.toString();
}

/** A DataSource on `db` that lists the entities but was never passed to initDb: no tables. */
function withoutInitDb(db: TestDatabase): DataSource {
  return db.track(new DataSource({ ...db.options(), entities: [...GemstoneDB.entities] } as DataSourceOptions));
}

async function failure(promise: Promise<unknown>): Promise<GemstoneError & { target: string }> {
  const error = await promise.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(GemstoneError);
  return error as GemstoneError & { target: string };
}

describeEachDatabase(
  'a server that cannot be used',
  (db) => {
    test('a refused port: DatabaseUnreachableError naming the target without its password, and what to check', async () => {
      const url = urlWith(db, { port: '1', password: PASSWORD });
      const error = await failure(initDb(url));
      expect(error).toBeInstanceOf(DatabaseUnreachableError);
      expect(error.message).toMatch(/ECONNREFUSED/);
      expect(error.message).toContain('127.0.0.1:1');
      expect(error.message).toMatch(/Check that the server runs/);
      expect(error.message).not.toContain(PASSWORD);
      expect(error.target).not.toContain(PASSWORD);
      expect(error.cause).toBeDefined();
    });

    test('a role that does not exist: DatabaseAuthenticationError naming the user, not the password', async () => {
      const url = urlWith(db, { username: 'gemstone_nobody', password: PASSWORD });
      const error = await failure(initDb(url));
      expect(error).toBeInstanceOf(DatabaseAuthenticationError);
      expect(error.message).toContain('gemstone_nobody');
      expect(error.message).toMatch(/Check the user name and password/);
      expect(error.message).not.toContain(PASSWORD);
    });

    test('options without a URL: the target is described from host, port and user, never the password', async () => {
      const { hostname } = new URL(db.url());
      const options = { type: db.options().type, host: hostname, port: 1, username: 'app', password: PASSWORD, database: 'x' } as DataSourceOptions;
      const error = await failure(initDb(options));
      expect(error).toBeInstanceOf(DatabaseUnreachableError);
      expect(error.target).toBe(`${String(options.type)}://app@${hostname}:1/x`);
      expect(error.message).not.toContain(PASSWORD);
    });
  },
  { kinds: ['postgres', 'mariadb'] },
);

describeEachDatabase('a database without the tables, a DataSource never initialized', (db) => {
  test('the service: TablesMissingError naming the target and initDb', async () => {
    const dataSource = withoutInitDb(db);
    await dataSource.initialize();
    const error = await failure(new ElectionService(dataSource).getLeader({ ns: ns() }));
    expect(error).toBeInstanceOf(TablesMissingError);
    expect(error.message).toMatch(/gemstone_election_/);
    expect(error.message).toMatch(/await initDb\(dataSource\)/);
    expect(error.cause).toBeDefined();
  });

  test('LeaderElector.start() rejects with TablesMissingError, reports no error, and is left stopped', async () => {
    const dataSource = withoutInitDb(db);
    await dataSource.initialize();
    const elector = new LeaderElector({ dataSource, ns: ns(), expireSeconds: 3 });
    const reported: unknown[] = [];
    elector.on('error', (error) => reported.push(error));
    const error = await failure(elector.start());
    expect(error).toBeInstanceOf(TablesMissingError);
    expect(elector.running).toBe(false);
    expect(reported).toEqual([]);
  });

  test('LeaderElectorGroup.start() rejects with TablesMissingError, reports no error, and is left stopped', async () => {
    const dataSource = withoutInitDb(db);
    await dataSource.initialize();
    const group = new LeaderElectorGroup({ dataSource, namespaces: [ns(), ns()], expireSeconds: 3 });
    const reported: unknown[] = [];
    group.on('error', (error) => reported.push(error));
    const error = await failure(group.start());
    expect(error).toBeInstanceOf(TablesMissingError);
    expect(group.running).toBe(false);
    expect(reported).toEqual([]);
  });

  test("an application table missing in the caller's own work stays the database's error, not TablesMissingError", async () => {
    const dataSource = await db.connect();
    const error = await withTransaction(dataSource, (manager) => manager.query('SELECT * FROM app_table_that_is_not_there')).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(error).toBeDefined();
    expect(error).not.toBeInstanceOf(TablesMissingError);
    expect(String((error as Error).message)).toMatch(/app_table_that_is_not_there/);
  });

  test('a DataSource never initialized: the service throws DataSourceNotInitializedError saying to call initDb', async () => {
    const dataSource = withoutInitDb(db);
    const error = await failure(new ElectionService(dataSource).getLeader({ ns: ns() }));
    expect(error).toBeInstanceOf(DataSourceNotInitializedError);
    expect(error.message).toMatch(/await initDb\(dataSource\)/);
  });
});
