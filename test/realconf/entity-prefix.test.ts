/**
 * `entityPrefix` renames the library's tables: initDb, every call, the elector, the migrations and
 * the CLI use the prefixed names, and two prefixes on one database are separate elections whose
 * constraint and index names do not collide.
 */
import { DataSource, DataSourceOptions } from 'typeorm';
import {
  ElectionService,
  GemstoneDB,
  LeaderElector,
  LeaderElectorGroup,
  NotLeaderError,
  pruneExpiredCandidates,
  pruneHistory,
  UnsupportedConfigurationError,
  withTransaction,
} from 'gemstone-utils';
import { describeEachDatabase, query, TestDatabase, uuid } from '../support/databases';
import { ns as freshNs } from '../support/rows';
import { runCli } from '../cli/cli';
import { waitFor } from '../elector/helpers';
import { setTimeout as sleep } from 'node:timers/promises';

/** The tables of the database (in the current schema), by name. */
async function tables(ds: DataSource, kind: TestDatabase['kind']): Promise<string[]> {
  const rows =
    kind === 'postgres'
      ? await query<{ name: string }>(ds, "SELECT table_name AS name FROM information_schema.tables WHERE table_schema = current_schema()")
      : kind === 'mariadb'
        ? await query<{ name: string }>(ds, 'SELECT table_name AS name FROM information_schema.tables WHERE table_schema = DATABASE()')
        : await query<{ name: string }>(ds, "SELECT name FROM sqlite_master WHERE type = 'table'");
  return rows.map((row) => String(row.name)).sort();
}

async function exercise(ds: DataSource): Promise<void> {
  const svc = new ElectionService(ds);
  const ns = freshNs();
  const [a, b] = [uuid(), uuid()];
  await svc.registerCandidate(a, { ns });
  expect(await svc.elect(a, { ns })).toBe(a);
  expect(await svc.elect(b, { ns })).toBe(a);
  await svc.heartbeat(b, { ns });
  expect(await svc.isLeader(a, { ns })).toBe(true);
  expect(await svc.getLeader({ ns })).toMatchObject({ leaderId: a, term: 1 });
  expect(await svc.listCandidates({ ns })).toEqual([a, b].sort());
  await withTransaction(ds, (manager) => svc.assertLeader(a, { ns, session: manager }));
  await expect(withTransaction(ds, (manager) => svc.assertLeader(b, { ns, session: manager }))).rejects.toBeInstanceOf(NotLeaderError);
  expect(await svc.resign(a, { ns })).toBe(true);
  expect(await svc.elect(b, { ns })).toBe(b);
  expect(await svc.getLeader({ ns })).toMatchObject({ leaderId: b, term: 2 });
  await svc.unregisterCandidate(a, { ns });
  expect(await svc.listCandidates({ ns })).toEqual([b]);

  const elector = new LeaderElector({ dataSource: ds, ns: freshNs(), expireSeconds: 2, intervalMs: 200 });
  try {
    await elector.start();
    await waitFor('the elector to lead', () => elector.isLeader, 5_000);
    expect((await svc.getLeader({ ns: elector.ns }))?.leaderId).toBe(elector.candidateId);
  } finally {
    await elector.stop();
  }
}

describeEachDatabase('entityPrefix', (db) => {
  test('initDb creates the prefixed tables and every operation uses them', async () => {
    const other = await db.sibling();
    const ds = await other.connect({ entityPrefix: 'app_' } as Partial<DataSourceOptions>);
    expect(await tables(ds, db.kind)).toEqual(expect.arrayContaining(['app_gemstone_election_candidate', 'app_gemstone_election_leader']));
    expect(await tables(ds, db.kind)).not.toContain('gemstone_election_leader');
    await exercise(ds);
    const rows = await query(ds, 'SELECT COUNT(*) AS n FROM app_gemstone_election_leader');
    expect(Number(rows[0]!.n)).toBe(2);
  });

  // An in-memory SQLite database is private to its connection: three DataSources, or a CLI
  // process, cannot open the same one.
  const unshared = db.shared ? '' : ' [SKIPPED: an in-memory database is private to each connection]';
  (db.shared ? test : test.skip)(`two prefixes and no prefix on one database: separate elections, no name collisions${unshared}`, async () => {
    const other = await db.sibling();
    const plain = await other.connect();
    const x = await other.connect({ entityPrefix: 'x_' } as Partial<DataSourceOptions>);
    // Long enough that derived constraint and index names exceed 63 characters (hash-shortened).
    const long = await other.connect({ entityPrefix: 'a_long_application_prefix_30c_' } as Partial<DataSourceOptions>);
    const ns = freshNs();
    const ids = [uuid(), uuid(), uuid()];
    const services = [plain, x, long].map((ds) => new ElectionService(ds));
    for (const [i, svc] of services.entries()) expect(await svc.elect(ids[i]!, { ns })).toBe(ids[i]);
    for (const [i, svc] of services.entries()) expect(await svc.getLeader({ ns })).toMatchObject({ leaderId: ids[i], term: 1 });
    await exercise(long);
  });

  /** A table name as SQL: quoted, since a prefix like `my-app_` is no bare identifier. */
  const quoted = (name: string) => (db.kind === 'mariadb' ? `\`${name}\`` : `"${name}"`);

  /** A group, history and both prunes on `ds`, whose tables carry `prefix`. */
  async function exerciseMore(ds: DataSource, prefix: string): Promise<void> {
    const namespaces = [freshNs(), freshNs()];
    const group = new LeaderElectorGroup({ dataSource: ds, namespaces, expireSeconds: 2, intervalMs: 200 });
    group.on('error', () => undefined);
    try {
      await group.start();
      await waitFor('the group to lead both namespaces', () => namespaces.every((ns) => group.isLeader(ns)), 10_000);
    } finally {
      await group.stop();
    }
    const svc = new ElectionService(ds);
    for (const ns of namespaces) {
      expect((await svc.getHistory({ ns })).map((entry) => [entry.term, entry.endedAt !== null])).toEqual([[1, true]]);
    }
    // Retention 0 deletes the terms that ended before the database's now, kept in milliseconds on
    // SQLite and MariaDB; on an in-process driver the stop's hand-over and the prune below can fall
    // in the same millisecond (0.6 ms apart measured), so let the clock pass the terms' end first.
    await sleep(5);
    expect(await pruneHistory(ds, { retentionSeconds: 0 })).toBeGreaterThanOrEqual(namespaces.length);
    await pruneExpiredCandidates(ds, { retentionSeconds: 0 });
    const rows = await query(ds, `SELECT COUNT(*) AS n FROM ${quoted(`${prefix}gemstone_election_history`)} WHERE ns IN (?, ?)`, namespaces);
    expect(Number(rows[0]!.n)).toBe(0);
  }

  describe("a prefix that is no bare identifier ('my-app_')", () => {
    const prefix = 'my-app_';

    test('initDb, every call, an elector, a group, history and both prunes', async () => {
      const other = await db.sibling();
      const ds = await other.connect({ entityPrefix: prefix } as Partial<DataSourceOptions>);
      expect(await tables(ds, db.kind)).toEqual(
        expect.arrayContaining([
          `${prefix}gemstone_election_candidate`,
          `${prefix}gemstone_election_leader`,
          `${prefix}gemstone_election_history`,
          `${prefix}gemstone_election_run`,
        ]),
      );
      await exercise(ds);
      await exerciseMore(ds, prefix);
    });

    test('the migrations, up and down', async () => {
      const other = await db.sibling();
      const ds = other.track(
        new DataSource({
          ...other.options({ entityPrefix: prefix } as Partial<DataSourceOptions>),
          entities: [...GemstoneDB.entities],
          migrations: [...GemstoneDB.migrations],
        } as DataSourceOptions),
      );
      await ds.initialize();
      await ds.runMigrations();
      expect(await tables(ds, db.kind)).toEqual(
        expect.arrayContaining([`${prefix}gemstone_election_leader`, `${prefix}gemstone_election_history`, `${prefix}gemstone_election_run`]),
      );
      await exercise(ds);
      await ds.undoLastMigration(); // the heartbeat step: step 1's candidate index, under the prefix, is back
      expect(await tables(ds, db.kind)).toContain(`${prefix}gemstone_election_run`);
      await exercise(ds);
      await ds.undoLastMigration();
      expect(await tables(ds, db.kind)).not.toContain(`${prefix}gemstone_election_run`);
      await ds.undoLastMigration();
      await ds.undoLastMigration();
      expect(await tables(ds, db.kind)).not.toContain(`${prefix}gemstone_election_leader`);
    });

    (db.shared ? test : test.skip)(`CLI init and status${unshared}`, async () => {
      const other = await db.sibling();
      const init = await runCli(['init', '--url', other.url(), '--entity-prefix', prefix]);
      expect(init.stderr).toBe('');
      expect(init.code).toBe(0);
      const ds = await other.connect({ entityPrefix: prefix } as Partial<DataSourceOptions>);
      const ns = freshNs();
      const id = uuid();
      await new ElectionService(ds).elect(id, { ns });
      const status = await runCli(['status', '--url', other.url(), '--entity-prefix', prefix, '--json', '--ns', ns]);
      expect(status.stderr).toBe('');
      expect(JSON.parse(status.stdout)).toEqual([expect.objectContaining({ ns, leaderId: id, term: 1 })]);
    });
  });

  test('a prefix that makes a table name too long is refused by initDb, naming the option', async () => {
    const other = await db.sibling();
    const error = await other.connect({ entityPrefix: 'a_prefix_long_enough_to_overflow_identifiers_' } as Partial<DataSourceOptions>).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(error).toBeInstanceOf(UnsupportedConfigurationError);
    expect((error as Error).message).toContain('entityPrefix');
  });

  test('migrations create the prefixed tables', async () => {
    const other = await db.sibling();
    const ds = other.track(
      new DataSource({
        ...other.options({ entityPrefix: 'mig_' } as Partial<DataSourceOptions>),
        entities: [...GemstoneDB.entities],
        migrations: [...GemstoneDB.migrations],
      } as DataSourceOptions),
    );
    await ds.initialize();
    await ds.runMigrations();
    expect(await tables(ds, db.kind)).toEqual(
      expect.arrayContaining(['mig_gemstone_election_candidate', 'mig_gemstone_election_leader', 'mig_gemstone_election_history']),
    );
    expect(await tables(ds, db.kind)).not.toContain('gemstone_election_candidate');
    expect(await tables(ds, db.kind)).not.toContain('gemstone_election_history');
    expect(await tables(ds, db.kind)).toContain('mig_gemstone_election_run');
    await exercise(ds);
    await ds.undoLastMigration(); // the heartbeat step
    expect(await tables(ds, db.kind)).toContain('mig_gemstone_election_run');
    await ds.undoLastMigration();
    expect(await tables(ds, db.kind)).not.toContain('mig_gemstone_election_run');
    await ds.undoLastMigration();
    expect(await tables(ds, db.kind)).not.toContain('mig_gemstone_election_history');
    await ds.undoLastMigration();
    expect(await tables(ds, db.kind)).not.toContain('mig_gemstone_election_leader');
  });

  (db.shared ? test : test.skip)(`CLI init and status with --entity-prefix${unshared}`, async () => {
    const other = await db.sibling();
    const init = await runCli(['init', '--url', other.url(), '--entity-prefix', 'cli_']);
    expect(init.stderr).toBe('');
    expect(init.code).toBe(0);
    expect(init.stdout).toContain('cli_gemstone_election_leader');
    const ds = await other.connect({ entityPrefix: 'cli_' } as Partial<DataSourceOptions>);
    expect(await tables(ds, db.kind)).not.toContain('gemstone_election_leader');
    const ns = freshNs();
    const id = uuid();
    await new ElectionService(ds).elect(id, { ns });
    const status = await runCli(['status', '--url', other.url(), '--entity-prefix', 'cli_', '--json', '--ns', ns]);
    expect(status.stderr).toBe('');
    expect(JSON.parse(status.stdout)).toEqual([expect.objectContaining({ ns, leaderId: id, term: 1 })]);
  });
});
