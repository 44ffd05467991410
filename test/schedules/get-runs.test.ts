/**
 * `getRuns`: newest slot first across schedules and namespaces, narrowed by `ns` and `name`,
 * paged by `before` (a run: each run once, also among schedules that share a slot; or a Date), bounded by `limit`, bad options refused naming them; and pruning, which
 * deletes finished runs past the retention and never a running one.
 */
import { DataSource, DataSourceOptions, DefaultNamingStrategy } from 'typeorm';
import { ElectionService, LeaderElector, LeaderElectorGroup, pruneRuns, type ScheduledRunInfo, ValidationError, DEFAULT_RUNS_LIMIT, DEFAULT_RUN_RETENTION_SECONDS, MAX_RUNS_LIMIT } from 'gemstone-utils';
import { waitFor } from '../elector/helpers';
import { describeEachDatabase, query } from '../support/databases';
import { ns as freshNs } from '../support/rows';
import { databaseNow, leaderOf, runsStoreOf } from './support';

describeEachDatabase('getRuns and pruneRuns', (db) => {
  let ds: DataSource;
  let service: ElectionService;

  beforeAll(async () => {
    ds = await db.connect();
    service = new ElectionService(ds);
  });

  test('newest slot first; ns and name narrow it; before pages backwards; limit bounds it', async () => {
    const [nsA, nsB] = [freshNs(), freshNs()];
    const [a, b] = [await leaderOf(service, nsA), await leaderOf(service, nsB)];
    const store = runsStoreOf(ds);
    const base = (await databaseNow(ds)).getTime() - 3_600_000;
    const at = (minute: number) => new Date(base + minute * 60_000);
    await store.record([1, 3, 5].map((m) => ({ ns: nsA, name: 'alpha', slot: at(m) })), a, 'missed');
    await store.record([2, 4].map((m) => ({ ns: nsA, name: 'beta', slot: at(m) })), a, 'skipped');
    await store.claim({ ns: nsB, name: 'alpha', slot: at(4) }, b, 3);

    const inA = await service.getRuns({ ns: nsA });
    expect(inA.map((r) => [r.name, r.slot.getTime() - base])).toEqual([
      ['alpha', 5 * 60_000],
      ['beta', 4 * 60_000],
      ['alpha', 3 * 60_000],
      ['beta', 2 * 60_000],
      ['alpha', 1 * 60_000],
    ]);
    expect((await service.getRuns({ ns: nsA, name: 'beta' })).map((r) => r.state)).toEqual(['skipped', 'skipped']);
    const alphaEverywhere = (await service.getRuns({ name: 'alpha' })).filter((r) => r.ns === nsA || r.ns === nsB);
    expect(alphaEverywhere.map((r) => [r.ns, r.slot.getTime() - base])).toEqual([
      [nsA, 5 * 60_000],
      [nsB, 4 * 60_000],
      [nsA, 3 * 60_000],
      [nsA, 1 * 60_000],
    ]);
    const page = await service.getRuns({ ns: nsA, limit: 2 });
    expect(page.map((r) => r.slot)).toEqual([at(5), at(4)]);
    const next = await service.getRuns({ ns: nsA, limit: 2, before: page[1]!.slot });
    expect(next.map((r) => r.slot)).toEqual([at(3), at(2)]);
    expect(await service.getRuns({ ns: nsA, before: at(1) })).toEqual([]);
    // Two schedules with one slot come in a stable order: by namespace, then name.
    const both = (await service.getRuns({ before: at(5) })).filter((r) => r.slot.getTime() === at(4).getTime() && (r.ns === nsA || r.ns === nsB));
    const expected = [[nsA, 'beta'], [nsB, 'alpha']].sort((x, y) => (x[0]! < y[0]! ? -1 : 1));
    expect(both.map((r) => [r.ns, r.name])).toEqual(expected);
  });

  test('pages that start after the last run got: every run once, in one order, also where schedules share their slots', async () => {
    const [nsA, nsB] = [freshNs(), freshNs()];
    const [a, b] = [await leaderOf(service, nsA), await leaderOf(service, nsB)];
    const base = (await databaseNow(ds)).getTime() - 3_600_000;
    const at = (minute: number) => new Date(base + minute * 60_000);
    // Five schedules in each namespace, due at the same three minutes (as every-minute schedules are).
    const names = ['s1', 's2', 's3', 's4', 's5'];
    const slots = (ns: string) => names.flatMap((name) => [1, 2, 3].map((m) => ({ ns, name, slot: at(m) })));
    await runsStoreOf(ds).record(slots(nsA), a, 'missed');
    await runsStoreOf(ds).record(slots(nsB), b, 'skipped');
    const key = (r: { ns: string; name: string; slot: Date }) => `${r.ns}/${r.name}/${r.slot.getTime()}`;
    // Pages of 4 cut through the runs of one slot; each starts after the last run of the one before.
    const walk = async (options: { ns?: string; name?: string }) => {
      const seen: ScheduledRunInfo[] = [];
      for (let page = await service.getRuns({ ...options, limit: 4 }); page.length > 0; ) {
        seen.push(...page);
        page = await service.getRuns({ ...options, limit: 4, before: page[page.length - 1]! });
      }
      return seen;
    };
    const inA = await walk({ ns: nsA });
    expect(inA.map(key)).toEqual((await service.getRuns({ ns: nsA, limit: 1000 })).map(key));
    expect(new Set(inA.map(key)).size).toBe(15);
    // Newest slot first, then by name (plain ASCII: every database orders them alike).
    expect(inA.map((r) => [r.slot.getTime() - base, r.name])).toEqual([3, 2, 1].flatMap((m) => names.map((name) => [m * 60_000, name])));
    // Across namespaces, one name: both namespaces' runs of each slot, none twice, none left out.
    const s3 = (await walk({ name: 's3' })).filter((r) => r.ns === nsA || r.ns === nsB);
    expect(s3.map(key).sort()).toEqual(slots(nsA).concat(slots(nsB)).filter((r) => r.name === 's3').map(key).sort());
    expect(s3.map(key)).toEqual((await service.getRuns({ name: 's3', limit: 1000 })).filter((r) => r.ns === nsA || r.ns === nsB).map(key));
    // A Date starts before a slot: the runs of that slot are all left out.
    expect((await service.getRuns({ ns: nsA, before: at(3) })).map((r) => r.slot.getTime())).toEqual(inA.slice(5).map((r) => r.slot.getTime()));
  });

  test('the default limit is 100, at most 1000', async () => {
    const ns = freshNs();
    const who = await leaderOf(service, ns);
    const base = (await databaseNow(ds)).getTime() - 86_400_000;
    await runsStoreOf(ds).record(Array.from({ length: 120 }, (_, i) => ({ ns, name: 'many', slot: new Date(base + i * 1000) })), who, 'missed');
    expect(DEFAULT_RUNS_LIMIT).toBe(100);
    expect(MAX_RUNS_LIMIT).toBe(1000);
    expect(await service.getRuns({ ns })).toHaveLength(100);
    expect(await service.getRuns({ ns, limit: 1000 })).toHaveLength(120);
  });

  test('bad options are ValidationErrors naming the option', async () => {
    const cases: Array<[unknown, string]> = [
      [{ limit: 0 }, 'options.limit'],
      [{ limit: 1001 }, 'options.limit'],
      [{ limit: 1.5 }, 'options.limit'],
      [{ before: 5 }, 'options.before'],
      [{ before: new Date(Number.NaN) }, 'options.before'],
      [{ before: { ns: 'a', name: 'b' } }, 'options.before.slot'],
      [{ before: { slot: new Date(0), name: 'b' } }, 'options.before.ns'],
      [{ before: { slot: new Date(0), ns: 'a', name: '' } }, 'options.before.name'],
      [{ ns: '' }, 'options.ns'],
      [{ name: 'x'.repeat(101) }, 'options.name'],
      [{ name: 7 }, 'options.name'],
      [{ limt: 3 }, 'options.limt'],
      ['all', 'options'],
    ];
    for (const [options, parameter] of cases) {
      const error = await service.getRuns(options as never).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(ValidationError);
      expect((error as ValidationError).parameter).toBe(parameter);
    }
  });

  test('pruneRuns deletes finished runs past the retention, never a running one', async () => {
    const ns = freshNs();
    const who = await leaderOf(service, ns);
    const store = runsStoreOf(ds);
    const base = (await databaseNow(ds)).getTime() - 600_000;
    const slot = (i: number) => new Date(base + i * 1000);
    await store.claim({ ns, name: 'keep-running', slot: slot(0) }, who, 3);
    await store.claim({ ns, name: 'done', slot: slot(1) }, who, 3);
    await store.finish({ ns, name: 'done', slot: slot(1) }, who, 'done');
    await store.record([{ ns, name: 'missed', slot: slot(2) }], who, 'missed');
    // Everything finished just now: a retention of an hour keeps it all.
    await pruneRuns(ds, { retentionSeconds: 3600 });
    expect((await service.getRuns({ ns })).map((r) => r.name).sort()).toEqual(['done', 'keep-running', 'missed']);
    // Once the finished rows are older than the retention by the database clock, they go.
    const finished = Math.max(...(await service.getRuns({ ns })).map((r) => r.finishedAt?.getTime() ?? 0));
    while ((await databaseNow(ds)).getTime() <= finished + 1000) await new Promise((resolve) => setTimeout(resolve, 100));
    expect(await pruneRuns(ds, { retentionSeconds: 1 })).toBeGreaterThanOrEqual(2);
    expect((await service.getRuns({ ns })).map((r) => r.name)).toEqual(['keep-running']);
    const bad = await pruneRuns(ds, { retentionSeconds: -1 }).catch((e: unknown) => e);
    expect((bad as ValidationError).parameter).toBe('options.retentionSeconds');
  });
});

/** Renames every table of the DataSource to `app_<name>`. */
class AppTablesStrategy extends DefaultNamingStrategy {
  override tableName(className: string, customName: string | undefined): string {
    return `app_${customName ?? className}`;
  }
}

describeEachDatabase('the loops prune finished runs', (db) => {
  test('an elector with schedules and runRetentionSeconds deletes old finished runs after a tick, never a running one; one without schedules none; bad values refused', async () => {
    // A DataSource of its own: the loops prune at most once per interval per DataSource.
    const ds = await (await db.sibling()).connect();
    const service = new ElectionService(ds);
    const ns = freshNs();
    const who = await leaderOf(service, ns);
    const store = runsStoreOf(ds);
    const base = (await databaseNow(ds)).getTime() - 60_000;
    await store.claim({ ns, name: 'running', slot: new Date(base) }, who, 3);
    await store.record([{ ns, name: 'missed', slot: new Date(base) }], who, 'missed');
    const [missed] = await service.getRuns({ ns, name: 'missed' });
    while ((await databaseNow(ds)).getTime() <= missed!.finishedAt!.getTime() + 1000) await new Promise((resolve) => setTimeout(resolve, 100));
    expect(DEFAULT_RUN_RETENTION_SECONDS).toBe(30 * 86_400);
    expect(() => new LeaderElector({ dataSource: ds, runRetentionSeconds: -1 })).toThrow(expect.objectContaining({ parameter: 'options.runRetentionSeconds' }));
    expect(() => new LeaderElectorGroup({ dataSource: ds, runRetentionSeconds: Number.NaN })).toThrow(
      expect.objectContaining({ parameter: 'options.runRetentionSeconds' }),
    );
    const errors: unknown[] = [];
    // A loop without schedules leaves the runs alone (its first tick prunes the election's tables).
    const plain = new LeaderElector({ dataSource: ds, ns: freshNs(), expireSeconds: 2, intervalMs: 100, runRetentionSeconds: 1 });
    plain.on('error', (error) => errors.push(error));
    let ticks = 0;
    plain.on('tick', () => ticks++);
    try {
      await plain.start();
      await waitFor('a few ticks of the loop without schedules', () => ticks >= 4);
    } finally {
      await plain.stop();
    }
    expect((await service.getRuns({ ns })).map((r) => r.name).sort()).toEqual(['missed', 'running']);
    // One with a schedule (whose slots are an hour apart) prunes them.
    const elector = new LeaderElector({ dataSource: ds, ns: freshNs(), expireSeconds: 2, intervalMs: 200, runRetentionSeconds: 1 });
    elector.schedule({ name: 'hourly', everyMs: 3_600_000 }, () => undefined);
    elector.on('error', (error) => errors.push(error));
    try {
      await elector.start();
      await waitFor('the elector to prune the finished run', async () => (await service.getRuns({ ns, name: 'missed' })).length === 0);
    } finally {
      await elector.stop();
    }
    expect((await service.getRuns({ ns })).map((r) => r.name)).toEqual(['running']);
    expect(errors).toEqual([]);
  });
});

describeEachDatabase('runs under renamed tables', (db) => {
  test('a naming strategy that renames tables: the runs use the renamed table', async () => {
    const ds = await (await db.sibling()).connect({ namingStrategy: new AppTablesStrategy() } as Partial<DataSourceOptions>);
    const service = new ElectionService(ds);
    const ns = freshNs();
    const who = await leaderOf(service, ns);
    const slot = new Date((await databaseNow(ds)).getTime() - 1000);
    expect(await runsStoreOf(ds).claim({ ns, name: 'n', slot }, who, 3)).toMatchObject({ claimed: true });
    expect((await service.getRuns({ ns })).map((r) => r.name)).toEqual(['n']);
    expect(await query(ds, 'SELECT name FROM app_gemstone_election_run WHERE ns = ?', [ns])).toEqual([{ name: 'n' }]);
  });

  test("entityPrefix 'my-app_': every call uses the prefixed table", async () => {
    const ds = await db.connect({ entityPrefix: 'my-app_' });
    const service = new ElectionService(ds);
    const ns = freshNs();
    const who = await leaderOf(service, ns);
    const store = runsStoreOf(ds);
    const slot = new Date((await databaseNow(ds)).getTime() - 1000);
    expect(await store.claim({ ns, name: 'p', slot }, who, 3)).toMatchObject({ claimed: true, attempt: 1 });
    await store.finish({ ns, name: 'p', slot }, who, 'done');
    await store.record([{ ns, name: 'q', slot }], who, 'skipped');
    expect((await service.getRuns({ ns })).map((r) => [r.name, r.state])).toEqual([
      ['p', 'done'],
      ['q', 'skipped'],
    ]);
    expect((await store.lookBack(ns, 'p')).newest).toEqual(slot);
    const table = db.kind === 'mariadb' ? '`my-app_gemstone_election_run`' : '"my-app_gemstone_election_run"';
    expect(await query(ds, `SELECT name, state FROM ${table} WHERE ns = ? ORDER BY name`, [ns])).toEqual([
      { name: 'p', state: 'done' },
      { name: 'q', state: 'skipped' },
    ]);
    const unprefixed = await query<{ n: unknown }>(ds, 'SELECT COUNT(*) AS n FROM gemstone_election_run').catch(() => [{ n: 0 }]);
    expect(Number(unprefixed[0]!.n)).toBe(0);
  });

  if (db.kind === 'postgres') {
    test("PostgreSQL schema: the runs live in the DataSource's schema", async () => {
      const admin = await db.connect({}, { createTables: false });
      await query(admin, 'CREATE SCHEMA sched');
      const ds = await db.connect({ schema: 'sched' });
      const service = new ElectionService(ds);
      const ns = freshNs();
      const who = await leaderOf(service, ns);
      const slot = new Date((await databaseNow(ds)).getTime() - 1000);
      expect(await runsStoreOf(ds).claim({ ns, name: 's', slot }, who, 3)).toMatchObject({ claimed: true });
      expect((await service.getRuns({ ns })).map((r) => r.name)).toEqual(['s']);
      expect(await query(admin, 'SELECT name, state FROM sched.gemstone_election_run WHERE ns = ?', [ns])).toEqual([{ name: 's', state: 'running' }]);
    });
  }
});
