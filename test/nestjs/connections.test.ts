/**
 * ElectionModule on a named @nestjs/typeorm connection (the application's default connection on
 * another database), a connection that lacks the entities, and shutdown by signal with
 * `app.enableShutdownHooks()`.
 */
import { DataSource } from 'typeorm';
import { ElectionService } from 'gemstone-utils';
import { describeEachDatabase, query, TestDatabase } from '../support/databases';
import { NestHost } from './support/host-client';
import type { AppSpec, HostEvent } from './support/nest-host';

const BASE = { expireSeconds: 10, intervalMs: 500, config: 'static', entities: 'auto' } as const;
const SAME_PROCESS_WARNING = /A data source with the \S+ name is already registered/;
// TypeOrmModule retries an open that found the file locked by the other app starting beside it.
const SQLITE_OPEN_RETRY = /^Unable to connect to the database(?: \([^)]*\))?\. Retrying/;

function problems(events: readonly HostEvent[]): HostEvent[] {
  return events.filter(
    (e) =>
      ['elector-error', 'own-elector-error', 'nest-log', 'unhandled-rejection'].includes(e.event) &&
      !SAME_PROCESS_WARNING.test(String(e['message'])) &&
      !SQLITE_OPEN_RETRY.test(String(e['message'])),
  );
}

async function hasElectionTables(db: TestDatabase): Promise<boolean> {
  const dataSource = db.track(new DataSource(db.options()));
  await dataSource.initialize();
  const runner = dataSource.createQueryRunner();
  try {
    return (await runner.hasTable('gemstone_election_leader')) && (await runner.hasTable('gemstone_election_candidate'));
  } finally {
    await runner.release();
    await dataSource.destroy();
  }
}

describeEachDatabase('ElectionModule on a named connection', (db: TestDatabase) => {
  let host: NestHost;
  let appDb: TestDatabase;
  beforeAll(async () => {
    appDb = await db.sibling();
    host = await NestHost.start();
  });
  afterAll(() => host?.stop());

  test('elects on the named connection, with autoLoadEntities or listed entities, static or async options; the default connection is left alone', async () => {
    const electionDb = db.options();
    const specs: AppSpec[] = [
      { ...BASE, name: 'n1', ns: 'named', db: appDb.options(), electionDb },
      { ...BASE, name: 'n2', ns: 'named', db: appDb.options(), electionDb, entities: 'explicit', config: 'async' },
    ];
    const started = await Promise.all(specs.map((spec) => host.startApp(spec)));
    expect(started.filter((s) => s.isLeader)).toHaveLength(1);
    for (const name of ['n1', 'n2']) {
      expect(host.select('module-init-query', name)).toEqual([expect.objectContaining({ ok: true })]);
      expect(host.select('own-started', name)).toHaveLength(1);
    }
    const leader = started[0]!.isLeader ? 'n1' : 'n2';
    await host.waitFor((events) => events.filter((e) => e.event === 'job' && e.app === leader).length >= 3, 10_000, 'jobs on the leader');
    expect(host.select('job').filter((e) => e.app !== leader)).toEqual([]);

    expect(await hasElectionTables(db)).toBe(true);
    expect(await hasElectionTables(appDb)).toBe(false);
    const plain = db.track(await new DataSource(db.options()).initialize());
    const rows = await query<{ leader_id: string }>(plain, 'SELECT leader_id FROM gemstone_election_leader WHERE ns = ?', ['named']);
    expect(rows.map((row) => row.leader_id.toLowerCase())).toEqual([started[leader === 'n1' ? 0 : 1]!.candidateId]);
    expect(problems(host.events)).toEqual([]);
  });

  test('a connection that neither auto-loads nor lists the entities fails the bootstrap, saying how to fix it', async () => {
    const failing = host.startApp({ ...BASE, name: 'bare', ns: 'bare', db: appDb.options(), entities: 'none' });
    await expect(failing).rejects.toMatchObject({ name: 'EntitiesNotRegisteredError', message: expect.stringMatching(/GemstoneDB\.entities/) });
  });

  test('@LeaderOnly() on an instance Nest did not create throws LeaderOnlyWithoutElectorError', async () => {
    expect(await host.send({ cmd: 'unmanaged-job' })).toEqual({
      error: 'LeaderOnlyWithoutElectorError',
      message: expect.stringMatching(/Jobs\.everySecond.*ElectionModule/),
    });
  });

  test('forRoot refuses the options the module owns, and bad bindings, naming them', async () => {
    const cases: Array<[Record<string, unknown>, string]> = [
      [{ handleSignals: true }, 'options.handleSignals'],
      [{ dataSource: {} }, 'options.dataSource'],
      [{ connectionName: '' }, 'options.connectionName'],
      [{ isGlobal: 'yes' }, 'options.isGlobal'],
      [{ logLeadership: 'yes' }, 'options.logLeadership'],
    ];
    for (const [options, parameter] of cases) {
      expect(await host.send({ cmd: 'declare', options })).toEqual({ error: 'ValidationError', parameter });
    }
  });
}, { sharedOnly: true });

describeEachDatabase('ElectionModule and app.enableShutdownHooks()', (db: TestDatabase) => {
  test('SIGTERM closes the application: the leader unregisters and vacates the lease before the process ends', async () => {
    const host = await NestHost.start();
    try {
      const started = await host.startApp({ ...BASE, name: 'signalled', ns: 'signals', db: db.options(), shutdownHooks: true });
      expect(started.isLeader).toBe(true);
      const exit = await host.signal('SIGTERM');
      // Nest re-raises the signal once the hooks have run.
      expect(exit).toEqual({ code: null, signal: 'SIGTERM' });
      expect(host.select('demoted', 'signalled')).toEqual([expect.objectContaining({ reason: 'stopped' })]);
    } finally {
      await host.stop();
    }
    const election = new ElectionService(await db.connect());
    expect(await election.getLeader({ ns: 'signals' })).toBeNull();
    expect(await election.listCandidates({ ns: 'signals' })).toEqual([]);
  });
}, { sharedOnly: true });
