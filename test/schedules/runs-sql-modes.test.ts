/**
 * The runs of schedules under every MySQL/MariaDB `sql_mode` (and, on the other databases, with
 * the same hostile values): namespaces and schedule names that break out of a string literal
 * when escaped with backslashes stay values; every call sees its own schedule only, and a
 * bystander's runs stay exactly as they were.
 */
import type { DataSource, DataSourceOptions } from 'typeorm';
import { ElectionService, pruneRuns } from 'gemstone-utils';
import { describeEachDatabase, query, TestDatabase } from '../support/databases';
import { onEveryNewConnection } from '../support/mysql-sessions';
import { databaseNow, leaderOf, runsStoreOf } from './support';

const HOSTILE = ["zz' OR 1=1 -- ", "zz\\' OR 1=1 -- ", 'back\\slash\\', '" OR "1"="1', 'a`b', '%_*', 'zz || 1', 'ünïcödé 😀 名前'];
const BYSTANDER = { ns: 'zz', name: 'zz' };

async function bystander(ds: DataSource): Promise<unknown[]> {
  return query(ds, 'SELECT slot, state, attempt, term, candidate_id, started_at, finished_at FROM gemstone_election_run WHERE ns = ? ORDER BY slot', [BYSTANDER.ns]);
}

/** Each mode on MySQL/MariaDB; one run with the server's defaults elsewhere. */
function modesOf(db: TestDatabase): string[] {
  return db.kind === 'mariadb' ? ['NO_BACKSLASH_ESCAPES', 'ANSI_QUOTES', 'ANSI', 'PIPES_AS_CONCAT', 'TRADITIONAL', ''] : ['(default)'];
}

describeEachDatabase('runs with hostile values, every sql_mode', (db) => {
  for (const mode of modesOf(db)) {
    test(`sql_mode = ${JSON.stringify(mode)}: claim, finish, record, getRuns, lookBack and pruneRuns`, async () => {
      const other = await db.sibling();
      const ds = await other.connect(db.kind === 'mariadb' ? (onEveryNewConnection([['SET SESSION sql_mode = ?', [mode]]]) as Partial<DataSourceOptions>) : {});
      const service = new ElectionService(ds);
      const store = runsStoreOf(ds);
      const base = (await databaseNow(ds)).getTime() - 60_000;
      const zz = await leaderOf(service, BYSTANDER.ns);
      await store.claim({ ...BYSTANDER, slot: new Date(base) }, zz, 3);
      await store.record([{ ...BYSTANDER, slot: new Date(base + 1) }], zz, 'missed');
      const before = await bystander(ds);
      for (const value of HOSTILE) {
        const who = await leaderOf(service, value);
        const key = { ns: value, name: value, slot: new Date(base) };
        expect(await store.claim(key, who, 3)).toMatchObject({ claimed: true, attempt: 1 });
        await store.finish(key, who, 'failed', value);
        await store.record([{ ns: value, name: value, slot: new Date(base + 1) }], who, 'skipped');
        const runs = await service.getRuns({ ns: value, name: value });
        expect(runs.map((r) => [r.ns, r.name, r.state, r.error])).toEqual([
          [value, value, 'skipped', null],
          [value, value, 'failed', value],
        ]);
        expect((await store.lookBack(value, value)).newest).toEqual(new Date(base + 1));
      }
      expect((await service.getRuns({ name: BYSTANDER.name })).map((r) => r.ns)).toEqual([BYSTANDER.ns, BYSTANDER.ns]);
      await pruneRuns(ds, { retentionSeconds: 3600 });
      expect(await bystander(ds)).toEqual(before);
    });
  }
});
