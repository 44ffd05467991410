/**
 * MariaDB with `innodb_snapshot_isolation=ON` (the default from 11.6; settable per session on
 * 10.6.18+/10.11.8+): a REPEATABLE READ transaction that locks a row changed since its snapshot
 * fails with error 1020. The library's own transactions run at READ COMMITTED, where the check
 * does not apply, so racing elects all succeed.
 */
import { DataSource, DataSourceOptions } from 'typeorm';
import { ElectionService } from 'gemstone-utils';
import { describeEachDatabase, MARIADB_SNAPSHOT_ISOLATION, NO_SNAPSHOT_ISOLATION, query, uuid } from '../support/databases';
import { ns as freshNs } from '../support/rows';
import { onEveryConnection } from './pool';

const RACERS = 30;

describeEachDatabase(
  'MariaDB innodb_snapshot_isolation=ON',
  (db) => {
    let ds: DataSource;
    let svc: ElectionService;
    // Known when the file is collected (the global setup probes the server): skipped loudly, never passed empty.
    const it = MARIADB_SNAPSHOT_ISOLATION ? test : test.skip;
    const unless = MARIADB_SNAPSHOT_ISOLATION ? '' : NO_SNAPSHOT_ISOLATION;

    beforeAll(async () => {
      ds = await db.connect({ poolSize: RACERS } as Partial<DataSourceOptions>);
      if (MARIADB_SNAPSHOT_ISOLATION) await onEveryConnection(ds, RACERS, 'SET SESSION innodb_snapshot_isolation = ON');
      svc = new ElectionService(ds);
    });

    async function race(ns: string): Promise<string[]> {
      const ids = Array.from({ length: RACERS }, uuid);
      const results = await Promise.allSettled(ids.map((id) => svc.elect(id, { ns })));
      const errors = results.filter((r): r is PromiseRejectedResult => r.status === 'rejected').map((r) => String(r.reason));
      expect(errors).toEqual([]);
      return results.map((r) => (r as PromiseFulfilledResult<string>).value);
    }

    it(`every connection has the setting${unless}`, async () => {
      const rows = await Promise.all(Array.from({ length: RACERS }, () => ds.query('SELECT @@SESSION.innodb_snapshot_isolation AS v')));
      expect(rows.every((r) => Number(r[0].v) === 1)).toBe(true);
    });

    it(`${RACERS} racing elects for a fresh namespace's first row all succeed${unless}`, async () => {
      for (let round = 0; round < 3; round++) {
        const leaders = await race(freshNs());
        expect(new Set(leaders).size).toBe(1);
      }
    });

    it(`${RACERS} racing elects for an expired lease all succeed${unless}`, async () => {
      for (let round = 0; round < 3; round++) {
        const ns = freshNs();
        await svc.elect(uuid(), { ns });
        await query(ds, 'UPDATE gemstone_election_leader SET lease_expires_at = updated_at - INTERVAL 1 SECOND WHERE ns = ?', [ns]);
        const leaders = await race(ns);
        expect(new Set(leaders).size).toBe(1);
        expect(await svc.getLeader({ ns })).toMatchObject({ leaderId: leaders[0], term: 2 });
      }
    });
  },
  { kinds: ['mariadb'] },
);
