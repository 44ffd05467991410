/**
 * Two (three) DataSources on one PostgreSQL database with different `schema` options are
 * separate elections, NOTIFY included: a leadership change in one schema never demotes, aborts or
 * misinforms an elector of another.
 */
import { DataSource, DataSourceOptions } from 'typeorm';
import { ElectionService, LeaderElector, Lease } from 'gemstone-utils';
import { describeEachDatabase, query, sleep, TestDatabase, uuid } from '../support/databases';
import { ns as freshNs } from '../support/rows';
import { waitFor } from '../elector/helpers';

describeEachDatabase(
  'PostgreSQL schemas',
  (db) => {
    let other: TestDatabase;
    let plain: DataSource;
    let s1: DataSource;
    let s2: DataSource;

    beforeAll(async () => {
      other = await db.sibling();
      plain = await other.connect();
      await plain.query('CREATE SCHEMA gem_one');
      await plain.query('CREATE SCHEMA gem_two');
      s1 = await other.connect({ schema: 'gem_one' } as Partial<DataSourceOptions>);
      s2 = await other.connect({ schema: 'gem_two' } as Partial<DataSourceOptions>);
    });

    test('initDb creates the tables in each schema', async () => {
      const rows = await query<{ schema: string; name: string }>(
        plain,
        "SELECT table_schema AS schema, table_name AS name FROM information_schema.tables WHERE table_name LIKE 'gemstone_election_%' ORDER BY 1, 2",
      );
      expect(rows.map((r) => `${r.schema}.${r.name}`)).toEqual([
        'gem_one.gemstone_election_candidate',
        'gem_one.gemstone_election_history',
        'gem_one.gemstone_election_leader',
        'gem_one.gemstone_election_run',
        'gem_two.gemstone_election_candidate',
        'gem_two.gemstone_election_history',
        'gem_two.gemstone_election_leader',
        'gem_two.gemstone_election_run',
        'public.gemstone_election_candidate',
        'public.gemstone_election_history',
        'public.gemstone_election_leader',
        'public.gemstone_election_run',
      ]);
    });

    test('elections per schema: getLeader answers for its own schema', async () => {
      const ns = freshNs();
      const ids = [uuid(), uuid(), uuid()];
      const services = [plain, s1, s2].map((ds) => new ElectionService(ds));
      for (const [i, svc] of services.entries()) expect(await svc.elect(ids[i]!, { ns })).toBe(ids[i]);
      for (const [i, svc] of services.entries()) {
        expect(await svc.getLeader({ ns })).toMatchObject({ leaderId: ids[i], term: 1 });
        expect(await svc.listCandidates({ ns })).toEqual([ids[i]]);
      }
    });

    test("leadership changes in one schema never reach another schema's electors", async () => {
      const ns = freshNs();
      const electors = [plain, s1].map((ds) => new LeaderElector({ dataSource: ds, ns, expireSeconds: 5, intervalMs: 1_000 }));
      const demoted: string[] = [];
      const aborted: Lease[] = [];
      const seen: Array<string | null> = [];
      for (const elector of electors) {
        elector.on('demoted', (_lease: Lease, reason: string) => demoted.push(`${elector.candidateId}: ${reason}`));
        elector.on('elected', (lease: Lease) => lease.signal.addEventListener('abort', () => aborted.push(lease)));
        elector.on('leader', (leaderId: string | null) => seen.push(leaderId));
      }
      try {
        for (const elector of electors) await elector.start();
        await waitFor('both electors to lead', () => electors.every((e) => e.isLeader), 5_000);
        const own = new Set(electors.map((e) => e.candidateId));
        // Churn in the other schema: every call hands the same namespace's lease over (NOTIFY).
        const svc = new ElectionService(s2);
        for (let i = 0; i < 15; i++) {
          const id = uuid();
          await svc.elect(id, { ns });
          await svc.resign(id, { ns });
        }
        await sleep(500); // notifications are delivered asynchronously
        expect(demoted).toEqual([]);
        expect(aborted).toEqual([]);
        expect(electors.every((e) => e.isLeader)).toBe(true);
        for (const elector of electors) expect(elector.leaderId).toBe(elector.candidateId);
        expect(seen.filter((id) => id === null || !own.has(id))).toEqual([]);
        expect((await new ElectionService(s1).getLeader({ ns }))?.leaderId).toBe(electors[1]!.candidateId);
        expect((await new ElectionService(plain).getLeader({ ns }))?.leaderId).toBe(electors[0]!.candidateId);
      } finally {
        for (const elector of electors) await elector.stop();
      }
    });

    test('a handover in its own schema still reaches the elector through NOTIFY', async () => {
      const ns = freshNs();
      const elector = new LeaderElector({ dataSource: s1, ns, expireSeconds: 20, intervalMs: 5_000 });
      try {
        await elector.start();
        await waitFor('the elector to lead', () => elector.isLeader, 5_000);
        const svc = new ElectionService(s1);
        // Take the lease away behind its back: only a notification can tell it before its next tick.
        await query(s1, 'UPDATE gem_one.gemstone_election_leader SET lease_expires_at = clock_timestamp() WHERE ns = ?', [ns]);
        const other = uuid();
        expect(await svc.elect(other, { ns })).toBe(other);
        await waitFor('the elector to learn of the new leader', () => elector.leaderId === other, 2_000);
      } finally {
        await elector.stop();
      }
    });
  },
  { kinds: ['postgres'] },
);
