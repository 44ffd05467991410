/**
 * An application DataSource initialized without `...GemstoneDB.entities` (and without initDb):
 * every entry point refuses with EntitiesNotRegisteredError, which says how to fix it, instead of
 * a TypeError from deep inside TypeORM; the elector refuses to start, and a loop whose DataSource
 * loses the entities reports it once, not on every tick.
 */
import { DataSource, DataSourceOptions } from 'typeorm';
import {
  assertLeader,
  elect,
  ElectionService,
  EntitiesNotRegisteredError,
  getLeader,
  heartbeat,
  initDb,
  isLeader,
  LeaderElector,
  LeaderElectorError,
  listCandidates,
  registerCandidate,
  resign,
  unregisterCandidate,
} from 'gemstone-utils';
import { describeEachDatabase, inCallerTransaction, sleep, uuid } from '../support/databases';
import { ns as freshNs } from '../support/rows';

const INTERVAL = 100;

/** Re-initializes `dataSource` with no entities at all (what an app that forgot them has). */
async function withoutEntities(dataSource: DataSource): Promise<void> {
  if (dataSource.isInitialized) await dataSource.destroy();
  dataSource.setOptions({ entities: [] } as Partial<DataSourceOptions>);
  await dataSource.initialize();
}

describeEachDatabase('a DataSource without the gemstone-utils entities', (db) => {
  let bare: DataSource;

  beforeAll(async () => {
    bare = db.track(new DataSource(db.options()));
    await bare.initialize();
  });

  test('every ElectionService method throws EntitiesNotRegisteredError naming the fix', async () => {
    const svc = new ElectionService(bare);
    const id = uuid();
    const opts = { ns: freshNs() };
    const calls: Array<[string, () => Promise<unknown>]> = [
      ['registerCandidate', () => svc.registerCandidate(id, opts)],
      ['heartbeat', () => svc.heartbeat(id, opts)],
      ['elect', () => svc.elect(id, opts)],
      ['electOutcome', () => svc.electOutcome(id, opts)],
      ['isLeader', () => svc.isLeader(id, opts)],
      ['listCandidates', () => svc.listCandidates(opts)],
      ['unregisterCandidate', () => svc.unregisterCandidate(id, opts)],
      ['getLeader', () => svc.getLeader(opts)],
      ['resign', () => svc.resign(id, opts)],
      ['assertLeader', () => inCallerTransaction(bare, (session) => svc.assertLeader(id, { ...opts, session }))],
      ['elect with a session', () => inCallerTransaction(bare, (session) => svc.elect(id, { ...opts, session }))],
      ['getLeader with a session', () => inCallerTransaction(bare, (session) => svc.getLeader({ ...opts, session }))],
    ];
    for (const [name, call] of calls) {
      const error = await call().then(
        () => new Error(`${name} resolved`),
        (e: unknown) => e,
      );
      expect({ name, type: (error as Error).constructor.name }).toEqual({ name, type: 'EntitiesNotRegisteredError' });
      expect((error as Error).message).toMatch(/GemstoneDB\.entities/);
      expect((error as Error).message).toMatch(/ElectionCandidate, ElectionLeader/);
    }
  });

  test('LeaderElector.start() rejects with it and reports nothing, so nothing retries', async () => {
    const elector = new LeaderElector({ dataSource: bare, ns: freshNs(), intervalMs: INTERVAL });
    const errors: LeaderElectorError[] = [];
    elector.on('error', (error) => errors.push(error));
    await expect(elector.start()).rejects.toBeInstanceOf(EntitiesNotRegisteredError);
    expect(elector.running).toBe(false);
    await sleep(INTERVAL * 4);
    expect(errors).toEqual([]);
    await elector.stop();
  });

  test('module functions on a default DataSource that lost the entities throw it; a running elector reports it once', async () => {
    const dataSource = db.track(await initDb(db.options()));
    const ns = freshNs();
    const elector = new LeaderElector({ ns, intervalMs: INTERVAL, expireSeconds: 2 });
    const errors: LeaderElectorError[] = [];
    elector.on('error', (error) => errors.push(error));
    await elector.start();
    expect(elector.isLeader).toBe(true);
    // Let the loop's first candidate pruning (started after the first tick) finish before the
    // DataSource is destroyed under it.
    await sleep(INTERVAL * 3);
    try {
      await withoutEntities(dataSource);
      const id = uuid();
      for (const call of [
        () => registerCandidate(id, { ns }),
        () => heartbeat(id, { ns }),
        () => elect(id, { ns }),
        () => isLeader(id, { ns }),
        () => listCandidates({ ns }),
        () => unregisterCandidate(id, { ns }),
        () => getLeader({ ns }),
        () => resign(id, { ns }),
        () => inCallerTransaction(dataSource, (session) => assertLeader(id, { ns, session })),
      ]) {
        await expect(call()).rejects.toBeInstanceOf(EntitiesNotRegisteredError);
      }
      // Many ticks fail the same way: one report. (A candidate pruning still in flight on a busy
      // machine may report the same cause once under its own phase: that is not a tick.)
      await sleep(INTERVAL * 10);
      const missing = errors.filter((e) => e.phase === 'tick' && e.cause instanceof EntitiesNotRegisteredError);
      expect(missing).toHaveLength(1);
      expect(errors.filter((e) => e.phase === 'tick' && !(e.cause instanceof EntitiesNotRegisteredError) && /constructor/.test(e.message))).toEqual([]);
    } finally {
      await elector.stop();
    }
  });
});
