/**
 * The dashboard of an application that did not adopt schedules, on every database: a database
 * from before schedules (its tables made by the earlier releases' migrations: no runs table), or
 * a DataSource that lists the election entities without `ElectionRun`. The schedules endpoint
 * answers 200 with `enabled: false` and a reason that says what to do (not a 500), nothing is
 * reported to `onError`, and the other endpoints answer as before. Only a missing table is
 * mapped: any other error of the runs read stays a 500. Once the table is created the same
 * dashboard shows the runs, without a restart.
 */
import { DataSource, DataSourceOptions } from 'typeorm';
import {
  ElectionCandidate,
  ElectionHistory,
  ElectionLeader,
  ElectionService,
  GemstoneDB,
  GemstoneElectionIdentity1795392000000,
  GemstoneElectionRuns1796256000000,
  GemstoneElectionTables1763683200000,
} from 'gemstone-utils';
import { createDashboard, type Dashboard } from 'gemstone-utils/dashboard';
import { describeEachDatabase, query, TestDatabase } from '../support/databases';
import { ns as freshNs } from '../support/rows';
import { leaderOf, runsStoreOf, pastSlot } from '../schedules/support';
import { getJson, serveDashboard, Served, StatementRecorder } from './support/http';

interface Schedules {
  ns: string;
  enabled: boolean;
  reason: string | null;
  schedules: { name: string; runs: { state: string }[] }[];
  truncated: boolean;
}

/** The migrations of the releases before schedules. */
const MIGRATIONS_BEFORE_SCHEDULES = [GemstoneElectionTables1763683200000, GemstoneElectionIdentity1795392000000];

describeEachDatabase('dashboard: schedules not set up', (db) => {
  const opened: { dashboard: Dashboard; served: Served }[] = [];
  afterAll(async () => {
    for (const { served } of opened) await served.close();
  });

  /** A DataSource of a fresh database whose tables the given migrations made. */
  async function installation(entities: unknown[], migrations: unknown[], extra: Partial<DataSourceOptions> = {}): Promise<{ ds: DataSource; own: TestDatabase }> {
    const own = await db.sibling();
    const ds = db.track(new DataSource({ ...own.options(extra), entities, migrations } as DataSourceOptions));
    await ds.initialize();
    await ds.runMigrations();
    return { ds, own };
  }

  async function dashboardOn(ds: DataSource, reported: unknown[]): Promise<Served> {
    const dashboard = createDashboard({ dataSource: ds, onError: (error) => reported.push(error) });
    const served = await serveDashboard(dashboard);
    opened.push({ dashboard, served });
    return served;
  }

  /** The other endpoints answer as they do with schedules set up. */
  async function otherEndpointsAnswer(served: Served, ns: string): Promise<void> {
    const q = encodeURIComponent(ns);
    for (const path of ['/api/overview', '/api/overview/timeline', `/api/namespace?ns=${q}`, `/api/namespace/timeline?ns=${q}`]) {
      expect({ path, status: (await getJson(`${served.url}${path}`)).status }).toEqual({ path, status: 200 });
    }
    const { body } = await getJson<{ summary: { leaderId: string | null } | null }>(`${served.url}/api/namespace?ns=${q}`);
    expect(body.summary?.leaderId).toEqual(expect.any(String));
  }

  test('the runs table missing (a database from before schedules): 200, enabled false, a reason naming initDb, init and the migration', async () => {
    const { ds } = await installation([...GemstoneDB.entities], MIGRATIONS_BEFORE_SCHEDULES);
    const ns = freshNs();
    await leaderOf(new ElectionService(ds), ns);
    const reported: unknown[] = [];
    const served = await dashboardOn(ds, reported);

    const { status, body } = await getJson<Schedules>(`${served.url}/api/namespace/schedules?ns=${encodeURIComponent(ns)}`);
    expect(status).toBe(200);
    expect(body).toMatchObject({ ns, enabled: false, schedules: [], truncated: false });
    expect(body.reason).toMatch(/gemstone_election_run/);
    expect(body.reason).toMatch(/initDb/);
    expect(body.reason).toMatch(/gemstone-election init/);
    expect(body.reason).toMatch(/GemstoneElectionRuns1796256000000/);
    await otherEndpointsAnswer(served, ns);
    expect(reported).toEqual([]);

    // Another error of the runs read is not "not set up": a table of that name without the columns.
    await query(ds, 'CREATE TABLE gemstone_election_run (ns varchar(100))');
    const broken = await getJson<{ error: string }>(`${served.url}/api/namespace/schedules?ns=${encodeURIComponent(ns)}`);
    expect(broken.status).toBe(500);
    expect(broken.body.error).not.toMatch(/not set up/);
    expect(reported).toHaveLength(1);
    await query(ds, 'DROP TABLE gemstone_election_run');

    // The migration creates the table: the same dashboard shows the runs now.
    const runner = ds.createQueryRunner();
    try {
      await new GemstoneElectionRuns1796256000000().up(runner);
    } finally {
      await runner.release();
    }
    const leader = await leaderOf(new ElectionService(ds), freshNs());
    await runsStoreOf(ds).record([{ ns: leader.ns, name: 'nightly', slot: await pastSlot(ds) }], leader, 'missed');
    const after = await getJson<Schedules>(`${served.url}/api/namespace/schedules?ns=${encodeURIComponent(leader.ns)}`);
    expect(after.status).toBe(200);
    expect(after.body).toMatchObject({ ns: leader.ns, enabled: true, reason: null, truncated: false, schedules: [{ name: 'nightly', runs: [{ state: 'missed' }] }] });
    expect(reported).toHaveLength(1);
  });

  test('ElectionRun not registered on the DataSource: 200, enabled false, a reason naming the entity; decided without a statement on the runs table', async () => {
    // The runs table exists (another application may run schedules on this database): this
    // DataSource cannot read runs all the same, as getRuns refuses to.
    const recorder = new StatementRecorder();
    const { ds } = await installation([ElectionCandidate, ElectionLeader, ElectionHistory], [...GemstoneDB.migrations], {
      logger: recorder,
      logging: true,
    } as Partial<DataSourceOptions>);
    const ns = freshNs();
    await leaderOf(new ElectionService(ds), ns);
    const reported: unknown[] = [];
    const served = await dashboardOn(ds, reported);

    recorder.recording = true;
    const { status, body } = await getJson<Schedules>(`${served.url}/api/namespace/schedules?ns=${encodeURIComponent(ns)}`);
    recorder.recording = false;
    expect(status).toBe(200);
    expect(body).toMatchObject({ ns, enabled: false, schedules: [], truncated: false });
    expect(body.reason).toMatch(/ElectionRun/);
    expect(body.reason).toMatch(/GemstoneDB\.entities/);
    expect(recorder.statements.filter((s) => /gemstone_election_run/.test(s.query))).toEqual([]);
    await otherEndpointsAnswer(served, ns);
    expect(reported).toEqual([]);
  });

  test('a bad ns is still refused naming the parameter, set up or not', async () => {
    const { ds } = await installation([ElectionCandidate, ElectionLeader, ElectionHistory], MIGRATIONS_BEFORE_SCHEDULES);
    const served = await dashboardOn(ds, []);
    const { status, body } = await getJson<{ parameter: string }>(`${served.url}/api/namespace/schedules`);
    expect(status).toBe(400);
    expect(body.parameter).toBe('ns');
  });
});
