/**
 * ElectionModule in real Nest applications (three side by side in one host process, each with
 * its own DataSource on the same fresh database): the schema is ready before any application hook,
 * one application leads, `@LeaderOnly()` jobs run only there, `app.close()` hands over, and the
 * health indicator reports each role. On `:memory:` SQLite (one database per DataSource) a single
 * application runs.
 */
import * as fs from 'fs';
import * as path from 'path';
import type { DataSourceOptions } from 'typeorm';
import { REPO_ROOT } from '../support/children/spawn';
import { describeEachDatabase, TestDatabase } from '../support/databases';
import { NestHost } from './support/host-client';
import type { AppSpec, HostEvent } from './support/nest-host';

const EXPIRE_SECONDS = 10;
const INTERVAL_MS = 500;
/** A hand-over must beat the lease by far: otherwise the lease merely expired. */
const HANDOVER_BOUND_MS = 4_000;

const PROBLEMS = ['elector-error', 'own-elector-error', 'nest-log', 'unhandled-rejection'];

function spec(name: string, db: DataSourceOptions, extra: Partial<AppSpec> = {}): AppSpec {
  return { name, ns: 'nest-jobs', expireSeconds: EXPIRE_SECONDS, intervalMs: INTERVAL_MS, db, entities: 'auto', config: 'static', ...extra };
}

function jobs(host: NestHost, app?: string, kind?: string): HostEvent[] {
  return host.select('job', app).filter((e) => kind === undefined || e['kind'] === kind);
}

/** Every job ran under a lease whose term never goes back: at no time did two leaders run jobs. */
function expectTermsInOrder(events: readonly HostEvent[]): void {
  const terms = events.filter((e) => e.event === 'job').map((e) => e['term'] as number);
  expect(terms).toEqual([...terms].sort((a, b) => a - b));
}

/**
 * @nestjs/typeorm keeps a process-wide set of connection names and warns when a second
 * application in the same process registers the same name; each application's DataSource is its
 * own all the same (TypeORM keeps no registry of DataSources), so that warning is expected here.
 */
const SAME_PROCESS_WARNING = /A data source with the \S+ name is already registered/;

/** @nestjs/typeorm retrying a SQLite DataSource's initialize() (see nest-host.ts): expected on sqlite3. */
const SQLITE_OPEN_RETRY = /^Unable to connect to the database(?: \([^)]*\))?\. Retrying/;

function problems(events: readonly HostEvent[]): HostEvent[] {
  return events.filter(
    (e) => PROBLEMS.includes(e.event) && !SAME_PROCESS_WARNING.test(String(e['message'])) && !SQLITE_OPEN_RETRY.test(String(e['message'])),
  );
}

function expectNoProblems(host: NestHost): void {
  expect(problems(host.events)).toEqual([]);
}

type Health = { status: string; details: Record<string, { status: string; role: string; ns: string; problem: string | null }> };

/** The Nest major of this run: the repository's (current), or with GEMSTONE_NEST_LINE=11 test/nest11's. */
const NEST_MAJOR =
  process.env['GEMSTONE_NEST_LINE'] ??
  (JSON.parse(fs.readFileSync(path.join(REPO_ROOT, 'node_modules', '@nestjs', 'core', 'package.json'), 'utf8')) as { version: string }).version.split('.')[0];

describeEachDatabase('ElectionModule: three Nest applications on one fresh database', (db: TestDatabase) => {
  let host: NestHost;
  beforeAll(async () => {
    host = await NestHost.start();
  });
  afterAll(() => host?.stop());

  test(`the host runs Nest ${NEST_MAJOR}`, () => {
    expect(host.nestVersion.split('.')[0]).toBe(NEST_MAJOR);
  });

  test('the tables exist before any hook; one leads; @LeaderOnly jobs run there only; close() hands over', async () => {
    const options = db.options();
    const names = ['a', 'b', 'c'];
    // a: forRoot with autoLoadEntities; b: entities listed explicitly; c: forRootAsync from a config service.
    const started = await Promise.all([
      host.startApp(spec('a', options)),
      host.startApp(spec('b', options, { entities: 'explicit' })),
      host.startApp(spec('c', options, { config: 'async' })),
    ]);
    expect(started.map((s) => s.ns)).toEqual(['nest-jobs', 'nest-jobs', 'nest-jobs']);
    expect(started.map((s) => s.intervalMs)).toEqual([INTERVAL_MS, INTERVAL_MS, INTERVAL_MS]);

    // Each application's own hooks found the schema ready: a query in onModuleInit, an elector
    // of its own started in onApplicationBootstrap without a failing first tick.
    for (const app of names) {
      expect(host.select('module-init-query', app)).toEqual([expect.objectContaining({ ok: true })]);
      expect(host.select('own-started', app)).toHaveLength(1);
    }
    expect(host.select('own-started').filter((e) => e['isLeader'])).toHaveLength(1);

    // Each elector's first tick ran by the end of bootstrap: exactly one leader.
    const leaders = names.filter((_, i) => started[i]!.isLeader);
    expect(leaders).toHaveLength(1);
    const leader = leaders[0]!;
    const leaderIndex = names.indexOf(leader);

    await host.waitFor(() => jobs(host, leader, 'interval').length >= 5 && jobs(host, leader, 'cron').length >= 1, 10_000, 'jobs on the leader');
    const firstTerm = host.select('elected', leader)[0]!['term'] as number;
    for (const job of jobs(host)) {
      expect(job).toMatchObject({ app: leader, candidateId: started[leaderIndex]!.candidateId, term: firstTerm, aborted: false });
    }
    // A subscriber in onApplicationBootstrap comes after the module's own hook elected:
    // on('elected') misses the first term, onLeadership() is called with it at once.
    expect(host.select('late-leadership', leader)).toEqual([expect.objectContaining({ term: firstTerm, aborted: false })]);
    expect(host.select('late-elected', leader)).toEqual([]);
    // The module's leadership log (logLeadership, on by default): the leader says it leads, the
    // others whom they follow, each naming itself.
    const candidate = (app: string) => started[names.indexOf(app)]!.candidateId;
    const logLines = () => host.select('module-log').map((e) => String(e['message']));
    expect(logLines()).toContain(`leading "nest-jobs", term ${firstTerm} (candidate ${candidate(leader)})`);
    await host.waitFor(
      () => names.filter((n) => n !== leader).every((n) => logLines().includes(`"nest-jobs" is led by ${candidate(leader)}, term ${firstTerm} (candidate ${candidate(n)})`)),
      10_000,
      'the followers to log the leader',
    );

    // The lease is appended after the caller's arguments: @Interval passes none, @Cron one.
    for (const job of jobs(host, leader, 'interval')) expect(job).toMatchObject({ leaseIndex: 0, argCount: 1 });
    for (const job of jobs(host, leader, 'cron')) expect(job).toMatchObject({ leaseIndex: 1, argCount: 2 });

    const leaderHealth = await host.send<Health>({ cmd: 'health', app: leader });
    expect(leaderHealth.status).toBe('ok');
    expect(leaderHealth.details['election']).toMatchObject({ status: 'up', role: 'leader', ns: 'nest-jobs', problem: null });
    const follower = names.find((n) => n !== leader)!;
    const followerHealth = await host.send<Health>({ cmd: 'health', app: follower });
    expect(followerHealth.details['election']).toMatchObject({ status: 'up', role: 'follower' });

    // app.close() on the leader: its elector stops before the DataSource closes and vacates the lease.
    const beforeClose = host.events.length;
    const closed = await host.send<{ startedAt: number; closedAt: number }>({ cmd: 'close', app: leader });
    await host.waitFor((events) => events.slice(beforeClose).some((e) => e.event === 'elected'), HANDOVER_BOUND_MS, 'a new leader');
    const successor = host.events.slice(beforeClose).find((e) => e.event === 'elected')!;
    expect(successor.app).not.toBe(leader);
    expect(successor.t - closed.startedAt).toBeLessThan(HANDOVER_BOUND_MS);
    expect(host.select('demoted', leader)).toEqual([expect.objectContaining({ reason: 'stopped' })]);

    const newLeader = successor.app!;
    expect(logLines()).toContain(`stopped leading "nest-jobs", term ${firstTerm}: stopped (candidate ${candidate(leader)})`);
    // A late subscriber of a follower hears of the leadership it takes over later, once.
    const successorTerm = successor['term'] as number;
    // Reported by the listeners after 'elected', in later messages of the host.
    await host.waitFor(() => host.select('late-leadership', newLeader).length > 0 && host.select('late-elected', newLeader).length > 0, 5_000, 'the late subscribers');
    expect(host.select('late-leadership', newLeader)).toEqual([expect.objectContaining({ term: successorTerm })]);
    expect(host.select('late-elected', newLeader)).toEqual([expect.objectContaining({ term: successorTerm })]);
    expect(logLines()).toContain(`leading "nest-jobs", term ${successorTerm} (candidate ${candidate(newLeader)})`);
    await host.waitFor(() => jobs(host, newLeader, 'interval').length >= 3, 10_000, 'jobs on the new leader');
    const afterClose = host.events.filter((e) => e.t > closed.closedAt);
    expect(afterClose.filter((e) => e.event === 'job' && e.app === leader)).toEqual([]);
    for (const job of jobs(host, newLeader)) expect(job['term']).toBeGreaterThan(firstTerm);
    const third = names.find((n) => n !== leader && n !== newLeader)!;
    expect(jobs(host, third)).toEqual([]);
    expectTermsInOrder(host.events);

    expectNoProblems(host);

    // A stopped elector is down (role stopped): the liveness probe of an application whose elector died.
    const beforeStop = host.events.length;
    await host.send({ cmd: 'stop-elector', app: third });
    const stoppedHealth = await host.send<Health>({ cmd: 'health', app: third });
    expect(stoppedHealth.status).toBe('error');
    expect(stoppedHealth.details['election']).toMatchObject({ status: 'down', role: 'stopped' });
    expect(stoppedHealth.details['election']!.problem).toEqual(expect.any(String));
    // terminus logs the failed check; nothing else went wrong.
    expect(problems(host.events.slice(beforeStop))).toEqual([expect.objectContaining({ level: 'error', message: expect.stringMatching(/^Health Check has failed/) })]);
  });

  test('logLeadership: false logs nothing of its leadership', async () => {
    const started = await host.startApp(spec('quiet', db.options(), { ns: 'quiet-jobs', logLeadership: false }));
    expect(started.isLeader).toBe(true);
    const before = host.events.length;
    await host.send({ cmd: 'close', app: 'quiet' });
    expect(host.select('demoted', 'quiet')).toEqual([expect.objectContaining({ reason: 'stopped' })]);
    const mentions = host.events.filter((e) => e.event === 'module-log' && String(e['message']).includes(started.candidateId));
    expect(mentions).toEqual([]);
    expect(problems(host.events.slice(before))).toEqual([]);
  });
}, { sharedOnly: true });

describeEachDatabase('ElectionModule: one Nest application on a fresh in-memory database', (db: TestDatabase) => {
  let host: NestHost;
  beforeAll(async () => {
    host = await NestHost.start();
  });
  afterAll(() => host?.stop());

  test('the tables exist before any hook; it leads, runs its jobs, reports up, and closes cleanly', async () => {
    const started = await host.startApp(spec('solo', db.options()));
    expect(started.isLeader).toBe(true);
    expect(host.select('module-init-query', 'solo')).toEqual([expect.objectContaining({ ok: true })]);
    expect(host.select('own-started', 'solo')).toEqual([expect.objectContaining({ isLeader: true })]);
    await host.waitFor(() => jobs(host, 'solo', 'interval').length >= 3, 10_000, 'jobs');
    const health = await host.send<Health>({ cmd: 'health', app: 'solo' });
    expect(health.details['election']).toMatchObject({ status: 'up', role: 'leader' });
    await host.send({ cmd: 'close', app: 'solo' });
    expect(host.select('demoted', 'solo')).toEqual([expect.objectContaining({ reason: 'stopped' })]);
    expectNoProblems(host);
  });
}, { unsharedOnly: true });
