/**
 * An installation from before schedules (the first two migrations' schema, with rows) gets the
 * runs table from the third migration alone, or from `initDb`: the same schema a fresh database
 * gets, its rows untouched, and the runs work at once. Undoing the migration drops only the runs.
 */
import { DataSource, DataSourceOptions } from 'typeorm';
import {
  ElectionService,
  GemstoneDB,
  GemstoneElectionIdentity1795392000000,
  GemstoneElectionTables1763683200000,
  initDb,
  TablesMissingError,
} from 'gemstone-utils';
import { describeEachDatabase, snapshot, TestDatabase } from '../support/databases';
import { ns as freshNs } from '../support/rows';
import { ELECTION_TABLES, schemaDump, tableNames } from '../db/support/schema';
import { databaseNow, leaderOf, runsStoreOf } from './support';

const BEFORE_SCHEDULES = [GemstoneElectionTables1763683200000, GemstoneElectionIdentity1795392000000];

describeEachDatabase(
  'the runs migration on an existing installation',
  (db) => {
    let reference: Record<string, unknown>;

    beforeAll(async () => {
      reference = await schemaDump(await (await db.sibling()).connect(), ELECTION_TABLES); // what a new database gets
    });

    /** A database migrated by the two migrations before schedules, with an election in it. */
    async function existingInstall(): Promise<{ target: TestDatabase; rows: string; ns: string }> {
      const target = await db.sibling();
      const old = target.track(new DataSource({ ...target.options(), migrations: BEFORE_SCHEDULES } as DataSourceOptions));
      await initDb(old, { createTables: false });
      expect((await old.runMigrations()).map((m) => m.name)).toEqual(BEFORE_SCHEDULES.map((m) => m.name));
      expect(await tableNames(old)).not.toContain('gemstone_election_run');
      const ns = freshNs();
      await leaderOf(new ElectionService(old), ns);
      const rows = await snapshot(old);
      await old.destroy();
      return { target, rows, ns };
    }

    /** The runs work on `ds`: a claim by the current leader, read back. */
    async function runsWork(ds: DataSource): Promise<void> {
      const service = new ElectionService(ds);
      const ns = freshNs();
      const who = await leaderOf(service, ns);
      const slot = new Date((await databaseNow(ds)).getTime() - 1000);
      expect(await runsStoreOf(ds).claim({ ns, name: 'after-upgrade', slot }, who, 3)).toMatchObject({ claimed: true, attempt: 1 });
      expect((await service.getRuns({ ns })).map((r) => r.state)).toEqual(['running']);
    }

    test('runMigrations runs only the runs and later migrations; the schema is a fresh one, the rows stay; undo drops only the runs', async () => {
      const { target, rows } = await existingInstall();
      const ds = target.track(new DataSource({ ...target.options(), migrations: [...GemstoneDB.migrations] } as DataSourceOptions));
      await initDb(ds, { createTables: false });
      expect((await ds.runMigrations()).map((m) => m.name)).toEqual(['GemstoneElectionRuns1796256000000', 'GemstoneElectionLeanHeartbeat1797120000000']);
      expect(await schemaDump(ds, ELECTION_TABLES)).toEqual(reference);
      expect(await snapshot(ds)).toEqual(rows);
      await runsWork(ds);
      await ds.undoLastMigration(); // the heartbeat step: the candidate index is back
      expect(await tableNames(ds)).toContain('gemstone_election_run');
      await ds.undoLastMigration();
      expect(await tableNames(ds)).not.toContain('gemstone_election_run');
      expect(await tableNames(ds)).toEqual(expect.arrayContaining(['gemstone_election_candidate', 'gemstone_election_history', 'gemstone_election_leader']));
    });

    test('without the runs table (createTables: false, migration not run) the runs calls say what to do, and elections go on', async () => {
      const { target, ns } = await existingInstall();
      const ds = await target.connect({}, { createTables: false });
      const service = new ElectionService(ds);
      const who = await leaderOf(service, freshNs());
      const slot = new Date(86_400_000); // past by any clock: the store's own clock read needs the table
      const store = runsStoreOf(ds);
      for (const call of [
        () => store.claim({ ns: who.ns, name: 'x', slot }, who, 3),
        () => store.record([{ ns: who.ns, name: 'x', slot }], who, 'missed'),
        () => store.lookBack(who.ns, 'x'),
        () => service.getRuns({ ns }),
      ]) {
        const error = await call().catch((e: unknown) => e);
        expect(error).toBeInstanceOf(TablesMissingError);
      }
      expect(await tableNames(ds)).not.toContain('gemstone_election_run');
      expect(await service.elect(who.candidateId, { ns: who.ns })).toBe(who.candidateId);
    });

    test('initDb on the existing installation creates the runs table; the rest stays as it was', async () => {
      const { target, rows } = await existingInstall();
      const ds = await target.connect();
      expect(await schemaDump(ds, ELECTION_TABLES)).toEqual(reference);
      expect(await snapshot(ds)).toEqual(rows);
      await runsWork(ds);
    });
  },
  { sharedOnly: true },
);
