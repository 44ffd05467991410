/**
 * Upgrading a database created by 0.1.0 while 0.1.0 processes still run against it (a rolling
 * deploy): several `initDb` of the new version at once add the candidate columns (old rows get
 * priority 0, eligible true, no metadata) and the history table, leave every old row as it was,
 * and a 0.1.0 process electing all along (its own statements, `support/v010.ts`) never fails nor
 * loses its lease. Afterwards old and new processes elect together: the lease passes from old
 * to new and back. The migration path too: a database migrated by 0.1.0's one migration runs
 * only the second one.
 */
import { DataSource, DataSourceOptions } from 'typeorm';
import { ElectionService, GemstoneDB, GemstoneElectionTables1763683200000, initDb, LeaderElector } from 'gemstone-utils';
import { describeEachDatabase, query, TestDatabase, uuid } from '../support/databases';
import { ns as freshNs } from '../support/rows';
import { QueryLog } from './support/query-log';
import { schemaDump, tableNames, ELECTION_TABLES } from './support/schema';
import { v010Ddl, v010Elect, v010Unregister } from './support/v010';
import { waitFor } from '../elector/helpers';

const EXPIRE = 5;
const UPGRADERS = 3;

/** Every column the 0.1.0 rows had, in a stable order. */
async function oldRows(ds: DataSource): Promise<string> {
  const candidates = await query(ds, 'SELECT ns, candidate_id, last_heartbeat_at, expires_at FROM gemstone_election_candidate ORDER BY ns, candidate_id');
  const leaders = await query(ds, 'SELECT ns, leader_id, lease_expires_at, updated_at, term FROM gemstone_election_leader ORDER BY ns');
  return JSON.stringify({ candidates, leaders });
}

describeEachDatabase(
  'upgrade from 0.1.0',
  (db) => {
    let reference: Record<string, unknown>;

    beforeAll(async () => {
      const fresh = await db.sibling();
      reference = await schemaDump(await fresh.connect(), ELECTION_TABLES); // what a new database gets
    });

    /** A database with 0.1.0's tables and rows, and a connection of a "0.1.0 process". */
    async function v010Database(): Promise<{ target: TestDatabase; old: DataSource }> {
      const target = await db.sibling();
      const old = await target.connect({}, { createTables: false });
      for (const statement of v010Ddl(db.kind)) await query(old, statement);
      return { target, old };
    }

    test(`${UPGRADERS} concurrent initDb upgrade the tables while a 0.1.0 process keeps electing; both versions elect afterwards`, async () => {
      const { target, old } = await v010Database();
      const [ns, vacantNs] = [freshNs(), freshNs()];
      const [oldA, oldB] = [uuid(), uuid()];
      expect(await v010Elect(old, db.kind, ns, oldA, EXPIRE)).toEqual({ leaderId: oldA, term: 1 });
      expect(await v010Elect(old, db.kind, ns, oldB, EXPIRE)).toEqual({ leaderId: oldA, term: 1 });
      expect(await v010Elect(old, db.kind, vacantNs, oldB, EXPIRE)).toEqual({ leaderId: oldB, term: 1 });
      await v010Unregister(old, db.kind, vacantNs, oldB);
      const rowsBefore = await oldRows(old);

      // The 0.1.0 leader renews every 50 ms throughout the upgrade.
      let electing = true;
      const seen: Array<{ leaderId: string; term: number }> = [];
      const failures: unknown[] = [];
      const loop = (async () => {
        while (electing) {
          await v010Elect(old, db.kind, ns, oldA, EXPIRE).then(
            (result) => seen.push(result),
            (error: unknown) => failures.push(error),
          );
          await new Promise((resolve) => setTimeout(resolve, 50));
        }
      })();
      const logs = Array.from({ length: UPGRADERS }, () => new QueryLog());
      const upgraded = await Promise.allSettled(logs.map((logger) => initDb(target.options({ logger }))));
      // It goes on renewing after the upgrade, three renewals at least in all: on a loaded machine
      // the upgrade can be over before a few 50 ms rounds were (a CI run beside a busy loop: 2).
      const atUpgrade = seen.length;
      await waitFor('the 0.1.0 process to renew after the upgrade', () => failures.length > 0 || seen.length > Math.max(2, atUpgrade), 10_000);
      electing = false;
      await loop;
      expect(upgraded.filter((result) => result.status === 'rejected')).toEqual([]);
      const dataSources = upgraded.map((result) => target.track((result as PromiseFulfilledResult<DataSource>).value));
      expect(failures).toEqual([]);
      expect(seen.length).toBeGreaterThan(2);
      expect(new Set(seen.map((s) => JSON.stringify(s)))).toEqual(new Set([JSON.stringify({ leaderId: oldA, term: 1 })]));
      expect(logs.flatMap((log) => log.ddl()).some((statement) => /ADD COLUMN/i.test(statement))).toBe(true);

      // The new schema, exactly as a fresh database gets it; the old rows as they were, with defaults.
      const ds = dataSources[0]!;
      expect(await schemaDump(ds, ELECTION_TABLES)).toEqual(reference);
      expect(await tableNames(ds)).toEqual(expect.arrayContaining([...ELECTION_TABLES]));
      const service = new ElectionService(ds, { expireSeconds: EXPIRE });
      expect(JSON.parse(await oldRows(ds)).leaders.find((row: { ns: string }) => row.ns === vacantNs)).toEqual(
        JSON.parse(rowsBefore).leaders.find((row: { ns: string }) => row.ns === vacantNs),
      );
      expect(JSON.parse(await oldRows(ds)).candidates.map((row: { candidate_id: string }) => row.candidate_id).sort()).toEqual([oldA, oldB].sort());
      const candidates = await service.getCandidates({ ns });
      expect(candidates.map(({ candidateId, priority, eligible, metadata }) => ({ candidateId, priority, eligible, metadata }))).toEqual(
        [oldA, oldB].sort().map((candidateId) => ({ candidateId, priority: 0, eligible: true, metadata: null })),
      );
      expect(await service.getLeader({ ns })).toMatchObject({ leaderId: oldA, term: 1, metadata: null });

      // Mixed: a new elector follows the old leader, takes over when it leaves, an old process follows it.
      const elector = new LeaderElector({ dataSource: ds, ns, expireSeconds: EXPIRE, intervalMs: 300, metadata: { version: 'new' } });
      const errors: unknown[] = [];
      elector.on('error', (error) => errors.push(error));
      try {
        await elector.start();
        expect(elector.isLeader).toBe(false);
        expect(elector.leaderId).toBe(oldA);
        await v010Unregister(old, db.kind, ns, oldA);
        await waitFor('the new elector to take over', () => elector.isLeader, 5_000);
        expect(elector.term).toBe(2);
        expect(await v010Elect(old, db.kind, ns, oldB, EXPIRE)).toEqual({ leaderId: elector.candidateId, term: 2 });
        expect((await service.getLeader({ ns }))?.metadata).toEqual({ version: 'new' });
      } finally {
        await elector.stop();
      }
      // The new elector left: the old process takes the vacant lease, the new service sees it.
      expect(await v010Elect(old, db.kind, ns, oldB, EXPIRE)).toEqual({ leaderId: oldB, term: 3 });
      expect(await service.getLeader({ ns })).toMatchObject({ leaderId: oldB, term: 3, metadata: null });
      expect(await service.elect(uuid(), { ns, priority: 9 })).toBe(oldB); // never preempted, whatever the priority
      expect(errors).toEqual([]);

      // Upgraded: initDb again runs no DDL at all.
      const again = new QueryLog();
      target.track(await initDb(target.options({ logger: again })));
      expect(again.ddl()).toEqual([]);
    });

    test('a database migrated by the 0.1.0 migration runs only the new one; its rows stay', async () => {
      const target = await db.sibling();
      const first = target.track(
        new DataSource({ ...target.options(), migrations: [GemstoneElectionTables1763683200000] } as DataSourceOptions),
      );
      await initDb(first, { createTables: false });
      expect((await first.runMigrations()).map((m) => m.name)).toEqual(['GemstoneElectionTables1763683200000']);
      const ns = freshNs();
      const oldA = uuid();
      expect(await v010Elect(first, db.kind, ns, oldA, EXPIRE)).toEqual({ leaderId: oldA, term: 1 });
      const rowsBefore = await oldRows(first);

      const current = target.track(new DataSource({ ...target.options(), migrations: [...GemstoneDB.migrations] } as DataSourceOptions));
      await initDb(current, { createTables: false });
      expect((await current.runMigrations()).map((m) => m.name)).toEqual(['GemstoneElectionIdentity1795392000000', 'GemstoneElectionRuns1796256000000', 'GemstoneElectionLeanHeartbeat1797120000000']);
      expect(await schemaDump(current, ELECTION_TABLES)).toEqual(reference);
      expect(await oldRows(current)).toEqual(rowsBefore);
      expect((await new ElectionService(current).getCandidates({ ns }))[0]).toMatchObject({ candidateId: oldA, priority: 0, eligible: true, metadata: null });
      expect(await v010Elect(first, db.kind, ns, oldA, EXPIRE)).toEqual({ leaderId: oldA, term: 1 });
    });
  },
  { sharedOnly: true },
);
