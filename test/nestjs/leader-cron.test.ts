/**
 * `@LeaderCron` in real Nest applications (run in a host process, see support/nest-host.ts): the
 * module finds the decorated method and runs it as a schedule of its elector, each slot once —
 * in one application, and across two applications (two electors) on one database through a
 * hand-over; bad decorator arguments fail when the class is declared; closing the application
 * waits for the running job before the elector hands over, and takes one `stopTimeoutMs` at most
 * when the job ignores its signal; and across two host processes, the leader's SIGKILLed inside
 * a slot's `run.transaction`: every slot between the first and the last has one ledger row.
 */
import type { DataSource } from 'typeorm';
import { ElectionService, type ScheduledRunInfo } from 'gemstone-utils';
import { describeEachDatabase, query, TestDatabase } from '../support/databases';
import { lessClaimLeftAtStop } from '../schedules/helpers';
import { NestHost } from './support/host-client';
import type { AppSpec, HostEvent } from './support/nest-host';

const EXPIRE_SECONDS = 10;
const INTERVAL_MS = 500;
const NAME = 'CronJobs.everySecond';
/** Generous: the slots are a second apart, and the suite must pass beside busy loops. */
const WAIT_MS = 20_000;

const PROBLEMS = ['elector-error', 'own-elector-error', 'nest-log', 'unhandled-rejection'];
/** Expected in a host process with several applications (see election-module.test.ts). */
const EXPECTED_LOG = [/A data source with the \S+ name is already registered/, /^Unable to connect to the database(?: \([^)]*\))?\. Retrying/];

function problems(events: readonly HostEvent[]): HostEvent[] {
  return events.filter((e) => PROBLEMS.includes(e.event) && !EXPECTED_LOG.some((re) => re.test(String(e['message']))));
}

function spec(name: string, ns: string, db: TestDatabase, leaderCron: AppSpec['leaderCron'] = {}): AppSpec {
  return { name, ns, expireSeconds: EXPIRE_SECONDS, intervalMs: INTERVAL_MS, db: db.options(), entities: 'auto', config: 'static', leaderCron };
}

const slotMs = (e: HostEvent): number => Date.parse(String(e['slot']));

/** The rows of `ns`: those of the slots that ran, less the claim a close may leave unrun (see lessClaimLeftAtStop). */
async function rowsOfRanSlots(ds: DataSource, ns: string, ranSlots: readonly number[]): Promise<ScheduledRunInfo[]> {
  const rows = lessClaimLeftAtStop(await new ElectionService(ds).getRuns({ ns, name: NAME }), ranSlots);
  expect(rows.map((r) => r.slot.getTime()).sort()).toEqual([...ranSlots].sort());
  return rows;
}

/** The lease of the SIGKILL case. */
const LEASE_MS = 2000;

describeEachDatabase(
  '@LeaderCron',
  (db) => {
    let host: NestHost;
    let ds: DataSource;
    beforeAll(async () => {
      host = await NestHost.start();
      ds = await db.connect();
    });
    // The database's afterAll closes its connections.
    afterAll(() => host?.stop());

    test('an every-second method runs on its instance, each slot once, in a row', async () => {
      const ns = 'cron-solo';
      const started = await host.startApp(spec('solo', ns, db));
      expect(started.isLeader).toBe(true);
      await host.waitFor(() => host.select('cron-run', 'solo').length >= 3, WAIT_MS, 'three runs');
      await host.send({ cmd: 'close', app: 'solo' });
      const runs = host.select('cron-run', 'solo');
      for (const run of runs) expect(run).toMatchObject({ bound: true, ns, name: NAME, attempt: 1 });
      const slots = runs.map(slotMs);
      for (const slot of slots) expect(slot % 1000).toBe(0);
      // Caught up in order while it leads: consecutive slots, none twice.
      expect(slots).toEqual(slots.map((_, i) => slots[0]! + i * 1000));
      const rows = await rowsOfRanSlots(ds, ns, slots);
      for (const row of rows) expect(row).toMatchObject({ state: 'done', attempt: 1, candidateId: started.candidateId });
      expect(problems(host.events)).toEqual([]);
    });

    test('two applications (two electors) on one database: each slot runs once in all, across a hand-over', async () => {
      const ns = 'cron-pair';
      const started = await Promise.all([host.startApp(spec('a', ns, db)), host.startApp(spec('b', ns, db))]);
      const leader = started[0]!.isLeader ? 'a' : 'b';
      const other = leader === 'a' ? 'b' : 'a';
      expect(started.filter((s) => s.isLeader)).toHaveLength(1);
      await host.waitFor(() => host.select('cron-run', leader).length >= 2, WAIT_MS, 'runs on the leader');
      const closed = await host.send<{ closedAt: number }>({ cmd: 'close', app: leader });
      const before = host.select('cron-run', leader).length;
      await host.waitFor(() => host.select('cron-run', other).length >= 2, WAIT_MS, 'runs on the successor');
      await host.send({ cmd: 'close', app: other });
      // Nothing ran on the closed application after it closed.
      expect(host.select('cron-run', leader)).toHaveLength(before);
      expect(host.select('cron-run', leader).every((e) => e.t <= closed.closedAt)).toBe(true);
      const runs = host.select('cron-run').filter((e) => e['ns'] === ns);
      const slots = runs.map(slotMs);
      expect(new Set(slots).size).toBe(slots.length);
      const rows = await rowsOfRanSlots(ds, ns, slots);
      for (const row of rows) expect(row.state).toBe('done');
      expect(problems(host.events)).toEqual([]);
    });

    test('closing the application cancels the schedule: the running job is aborted and waited for before the hand-over', async () => {
      const ns = 'cron-destroy';
      const cleanupMs = 300;
      await host.startApp(spec('slow', ns, db, { jobMs: 600_000, cleanupMs }));
      await host.waitFor(() => host.select('cron-run', 'slow').length >= 1, WAIT_MS, 'a run');
      const closed = await host.send<{ startedAt: number; closedAt: number }>({ cmd: 'close', app: 'slow' });
      const ends = host.select('cron-run-end', 'slow');
      expect(ends).toEqual([expect.objectContaining({ aborted: true })]);
      expect(ends[0]!.t).toBeLessThanOrEqual(closed.closedAt);
      expect(closed.closedAt - closed.startedAt).toBeGreaterThanOrEqual(cleanupMs - 10);
      // Cancelled in onModuleDestroy with the elector's stop alongside (one bound for both): the
      // leadership ends at once, and the lease is vacated (the leader seen null) only once the job has returned.
      const vacated = (e: HostEvent) => e.event === 'leader' && e['leaderId'] === null;
      const order = host.events.filter((e) => e.app === 'slow' && (e.event === 'cron-run-end' || e.event === 'demoted' || vacated(e))).map((e) => e.event);
      expect(order).toEqual(['demoted', 'cron-run-end', 'leader']);
      expect(problems(host.events)).toEqual([]);
    });

    test.each([
      ['outside a transaction', false],
      ['inside run.transaction, holding it open', true],
    ])('closing the application takes at most one stopTimeoutMs, with a job that ignores its signal %s', async (_what, inTransaction) => {
      const stopTimeoutMs = 2000;
      const ns = `cron-bound-${inTransaction ? 'tx' : 'plain'}`;
      // What closing costs on this machine now, with a job that stops when told: the margin.
      const base = `bound-base-${ns}`;
      await host.startApp({ ...spec(base, `${ns}-base`, db, { jobMs: 600_000 }), stopTimeoutMs, ownElector: false });
      await host.waitFor(() => host.select('cron-run', base).length >= 1, WAIT_MS, 'a run');
      const baseClose = await host.send<{ startedAt: number; closedAt: number }>({ cmd: 'close', app: base });
      const baseMs = baseClose.closedAt - baseClose.startedAt;
      const app = `bound-${ns}`;
      await host.startApp({ ...spec(app, ns, db, { jobMs: 600_000, ignoreSignal: true, inTransaction }), stopTimeoutMs, ownElector: false });
      const running = inTransaction ? 'cron-run-transaction' : 'cron-run';
      await host.waitFor(() => host.select(running, app).length >= 1, WAIT_MS, 'a run');
      const closed = await host.send<{ startedAt: number; closedAt: number }>({ cmd: 'close', app });
      const closeMs = closed.closedAt - closed.startedAt;
      // The job ignores its signal: the cancel of the schedules and the elector's stop each give up
      // on it at their bound (in its transaction it also holds up the stop's unregister). Together
      // they take one bound, not one each (2 × stopTimeoutMs before). The margin: twice what a
      // close took here just now, plus a quarter of the bound for timers late on a busy machine.
      expect(closeMs).toBeLessThan(stopTimeoutMs + 2 * baseMs + stopTimeoutMs / 4);
      expect(host.select('cron-run-end', app)).toEqual([]);
    });

    // Last: Nest logs the failed starts.
    test('on a request-scoped or transient provider: the application does not start, a ValidationError says why', async () => {
      for (const scope of ['request', 'transient'] as const) {
        await expect(host.startApp(spec(`scoped-${scope}`, `cron-${scope}`, db, { scope }))).rejects.toMatchObject({
          name: 'ValidationError',
          message: expect.stringMatching(/request-scoped or transient provider/),
        });
      }
      expect(host.select('cron-run').filter((e) => String(e.app).startsWith('scoped-'))).toEqual([]);
    });
  },
  { sharedOnly: true },
);

describeEachDatabase(
  '@LeaderCron: the leader process SIGKILLed',
  (db) => {
    const hosts: NestHost[] = [];
    let ds: DataSource;
    beforeAll(async () => {
      ds = await db.connect();
    });
    afterAll(() => Promise.all(hosts.map((h) => h.stop())));

    test("killed inside a slot's run.transaction: the other application runs every slot, that one again, each once", async () => {
      const ns = 'cron-kill';
      const ledger = `cron_ledger_${Math.random().toString(36).slice(2, 10)}`;
      await query(ds, `CREATE TABLE ${ledger} (slot_ms BIGINT NOT NULL, term INT NOT NULL, candidate_id VARCHAR(36) NOT NULL)`);
      // A 2 s lease: the outage (lease, then a tick) leaves slots for the successor to catch up.
      const app = (name: string) => ({ ...spec(name, ns, db, { ledger, jobMs: 200 }), expireSeconds: LEASE_MS / 1000, intervalMs: 300, ownElector: false });
      hosts.push(...(await Promise.all([NestHost.start(), NestHost.start()])));
      const [first, second] = hosts as [NestHost, NestHost];
      // The first leads by construction: it starts alone; the second joins once it led.
      const leading = await first.startApp(app('first'));
      expect(leading.isLeader).toBe(true);
      expect((await second.startApp(app('second'))).isLeader).toBe(false);
      await first.waitFor(() => first.select('cron-ledger').length >= 1, WAIT_MS, 'a slot committed on the leader');
      // Killed with a slot's transaction open: its ledger row inserted, not committed.
      const open = first.select('cron-ledger').length;
      await first.waitFor(() => first.select('cron-run-transaction').length > open, WAIT_MS, 'the next slot inside its transaction');
      const inFlight = first.select('cron-run-transaction').at(-1)!;
      expect(await first.signal('SIGKILL')).toMatchObject({ signal: 'SIGKILL' });
      const killedTerm = Number(inFlight['term']);
      // The successor runs the killed slot again, then the outage's slots, then the slots on time.
      const successor = () => second.select('cron-ledger').filter((e) => Number(e['term']) > killedTerm);
      await second.waitFor(() => successor().some((e) => e['slot'] === inFlight['slot']), WAIT_MS, 'the killed slot run again');
      await second.waitFor(() => successor().some((e) => slotMs(e) >= slotMs(inFlight) + 2 * LEASE_MS), WAIT_MS, 'a slot two leases after the killed one');
      await second.send({ cmd: 'close', app: 'second' });

      const rows = (await query<{ slot_ms: unknown; term: unknown; candidate_id: string }>(ds, `SELECT slot_ms, term, candidate_id FROM ${ledger}`)).map((r) => ({
        slot: Number(r.slot_ms),
        term: Number(r.term),
        candidateId: r.candidate_id,
      }));
      const slots = rows.map((r) => r.slot).sort((a, b) => a - b);
      const every = Array.from({ length: (slots.at(-1)! - slots[0]!) / 1000 + 1 }, (_, i) => slots[0]! + i * 1000);
      // Every slot from the first to the last exactly once: 0 duplicates, 0 misses.
      expect(slots).toEqual(every);
      // What the killed leader committed stayed; the slot it was killed in is the successor's.
      expect(rows.filter((r) => r.term === killedTerm)).toHaveLength(first.select('cron-ledger').length);
      const killed = rows.filter((r) => r.slot === slotMs(inFlight));
      expect(killed).toHaveLength(1);
      expect(killed[0]!.term).toBeGreaterThan(killedTerm);
      // The runs table agrees: each slot done under the term of its row; the killed one at attempt 2.
      const runs = new Map((await new ElectionService(ds).getRuns({ ns, name: NAME, limit: 1000 })).map((r) => [r.slot.getTime(), r]));
      for (const row of rows) expect(runs.get(row.slot)).toMatchObject({ state: 'done', term: row.term, candidateId: row.candidateId });
      expect(runs.get(slotMs(inFlight))).toMatchObject({ attempt: 2 });
      expect(problems(second.events)).toEqual([]);
    });
  },
  { kinds: ['postgres'] },
);

describe('@LeaderCron: its arguments are checked when the class is declared', () => {
  let host: NestHost;
  beforeAll(async () => {
    host = await NestHost.start();
  });
  afterAll(() => host?.stop());

  test.each([
    [[42], 'cron'],
    [[{ everyMs: 1000, timeZone: 'UTC' }], 'cron'],
    [[{ everyMs: 500 }], 'options.everyMs'],
    [['not a cron'], 'options.cron'],
    [['* * * * *', 'daily'], 'options'],
    [['* * * * *', { cron: '* * * * *' }], 'options.cron'],
    [['* * * * *', { everyMs: 1000 }], 'options.everyMs'],
    [['* * * * *', { name: '' }], 'options.name'],
    [['* * * * *', { catchUp: 'some' }], 'options.catchUp'],
    [['* * * * *', { timeZone: 'Mars/Olympus' }], 'options.timeZone'],
    [['* * * * *', { maxAttempts: 0 }], 'options.maxAttempts'],
    [['* * * * *', { bogus: 1 }], 'options.bogus'],
  ])('%j: ValidationError naming %s', async (args, parameter) => {
    expect(await host.send({ cmd: 'declare-cron', args })).toMatchObject({ error: 'ValidationError', parameter });
  });

  test('good arguments declare', async () => {
    expect(await host.send({ cmd: 'declare-cron', args: ['0 3 * * *', { timeZone: 'Europe/Berlin', catchUp: 'none', name: 'nightly' }] })).toEqual({ error: null });
    expect(await host.send({ cmd: 'declare-cron', args: [{ everyMs: 60_000 }] })).toEqual({ error: null });
  });
});
