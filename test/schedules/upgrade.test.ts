/**
 * An application upgraded to the release with schedules, before it changed anything: its
 * DataSource lists the three election entities by hand (not `...GemstoneDB.entities`) and its
 * database has no runs table (neither `initDb` nor the new migration ran). Its elections go on as
 * before, without an error; what reads or writes runs says what is missing.
 */
import { DataSource, DataSourceOptions } from 'typeorm';
import {
  ElectionCandidate,
  ElectionHistory,
  ElectionLeader,
  ElectionService,
  EntitiesNotRegisteredError,
  LeaderElector,
  LeaderElectorGroup,
  pruneRuns,
} from 'gemstone-utils';
import { describeEachDatabase, query } from '../support/databases';
import { ns as freshNs } from '../support/rows';

describeEachDatabase(
  'an application upgraded without touching its entities or tables',
  (db) => {
    let app: DataSource;

    beforeAll(async () => {
      // The tables of the release before: initDb's, less the runs table.
      const setup = await db.connect();
      await query(setup, 'DROP TABLE gemstone_election_run');
      await setup.destroy();
      app = db.track(new DataSource({ ...db.options(), entities: [ElectionCandidate, ElectionLeader, ElectionHistory] } as DataSourceOptions));
      await app.initialize();
    });

    test('an elector and a group elect, renew and prune with no error', async () => {
      const errors: unknown[] = [];
      const elector = new LeaderElector({ dataSource: app, ns: freshNs(), expireSeconds: 2, intervalMs: 100 });
      const group = new LeaderElectorGroup({ dataSource: app, namespaces: [freshNs(), freshNs()], expireSeconds: 2, intervalMs: 100 });
      for (const loop of [elector, group]) loop.on('error', (error) => errors.push(error));
      const ticks = { elector: 0, group: 0 };
      elector.on('tick', () => ticks.elector++);
      group.on('tick', () => ticks.group++);
      await elector.start();
      await group.start();
      try {
        // The first ticks of a process prune (once per interval per DataSource): wait for a few
        // ticks of each loop after it, so that a prune failure would have been reported.
        const until = { elector: ticks.elector + 5, group: ticks.group + 5 };
        for (let waited = 0; ticks.elector < until.elector || ticks.group < until.group; waited += 50) {
          if (waited > 30_000) throw new Error(`ticks: ${JSON.stringify(ticks)}`);
          await new Promise((resolve) => setTimeout(resolve, 50));
        }
        expect(elector.isLeader).toBe(true);
        expect(group.namespaces.every((ns) => group.isLeader(ns))).toBe(true);
        expect(errors).toEqual([]);
      } finally {
        await elector.stop();
        await group.stop();
      }
      expect(errors).toEqual([]);
    });

    test('what reads or writes runs names the missing entity', async () => {
      await expect(new ElectionService(app).getRuns()).rejects.toThrow(EntitiesNotRegisteredError);
      await expect(new ElectionService(app).getRuns()).rejects.toThrow(/ElectionRun/);
      await expect(pruneRuns(app)).rejects.toThrow(/ElectionRun/);
    });
  },
  { sharedOnly: true },
);
