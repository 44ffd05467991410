/**
 * Several processes calling initDb on the same fresh database at the same moment all
 * succeed, and the schema is then exactly what one initDb creates. Also in-process: several
 * DataSources of one database racing.
 */
import { DataSource } from 'typeorm';
import { ElectionService, initDb } from 'gemstone-utils';
import { describeEachDatabase, TestDatabase, uuid } from '../support/databases';
import { ns } from '../support/rows';
import { runTogether } from '../support/children/spawn';
import { ELECTION_TABLES, schemaDump } from './support/schema';

const PROCESSES = 6;
const DATA_SOURCES = 5;

describeEachDatabase(
  'initDb racing on a fresh database',
  (db) => {
    /** The schema a single initDb creates, on a sibling database of the same kind. */
    async function referenceSchema(): Promise<Record<string, unknown>> {
      const reference = await db.sibling();
      return schemaDump(await reference.connect(), ELECTION_TABLES);
    }

    async function connectTo(target: TestDatabase): Promise<DataSource> {
      return target.track(await initDb(target.options(), { createTables: false }));
    }

    test(`${PROCESSES} processes started together all succeed and agree on one leader`, async () => {
      const space = ns();
      const [results, expected] = await Promise.all([
        runTogether('test/support/children/init-db.js', [db.url(), space], PROCESSES),
        referenceSchema(),
      ]);
      const outcomes = results.map((result) => {
        const line = result.stdout.split('\n').find((l) => l.startsWith('{'));
        return line ? JSON.parse(line) : { ok: false, error: `no result; exit ${result.code}; stderr ${result.stderr}` };
      });
      expect(outcomes.filter((o) => !o.ok)).toEqual([]);
      expect(results.map((r) => r.code)).toEqual(Array(PROCESSES).fill(0));
      const leaders = new Set(outcomes.map((o) => o.leader));
      expect(leaders.size).toBe(1);
      expect(outcomes.map((o) => o.self)).toContain([...leaders][0]);

      const ds = await connectTo(db);
      expect(await schemaDump(ds, ELECTION_TABLES)).toEqual(expected);
      const info = await new ElectionService(ds).getLeader({ ns: space });
      expect(info).toMatchObject({ leaderId: [...leaders][0], term: 1 });
      expect(await new ElectionService(ds).listCandidates({ ns: space })).toHaveLength(PROCESSES);
    });

    test(`${DATA_SOURCES} DataSources of one process racing on a fresh database all succeed`, async () => {
      const [fresh, expected] = await Promise.all([db.sibling(), referenceSchema()]);
      const dataSources = Array.from({ length: DATA_SOURCES }, () => fresh.track(new DataSource(fresh.options())));
      const settled = await Promise.allSettled(dataSources.map((ds) => initDb(ds)));
      expect(settled.filter((s) => s.status === 'rejected')).toEqual([]);
      for (const ds of dataSources) expect(await schemaDump(ds, ELECTION_TABLES)).toEqual(expected);

      const space = ns();
      const ids = dataSources.map(() => uuid());
      // one after the other: each DataSource works on the schema the race left
      const leaders: Array<string | null> = [];
      for (const [i, ds] of dataSources.entries()) leaders.push(await new ElectionService(ds).elect(ids[i]!, { ns: space }));
      expect(new Set(leaders).size).toBe(1);
      expect(ids).toContain(leaders[0]);
    });
  },
  { sharedOnly: true },
);
