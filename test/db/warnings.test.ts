/**
 * What is allowed but easy to get wrong is said, once, as a process warning (code on the
 * warning): a loop electing on an embedded SQLite database (only processes sharing that file
 * take part), and an initDb that replaces a different, live default DataSource.
 */
import { DataSource } from 'typeorm';
import {
  DEFAULT_REPLACED_WARNING,
  getDataSource,
  initDb,
  LeaderElector,
  LeaderElectorGroup,
  SQLITE_LOCAL_ELECTION_WARNING,
} from 'gemstone-utils';
import { describeEachDatabase } from '../support/databases';
import { ns } from '../support/rows';

/**
 * The process warnings with `code` emitted while `work` runs, as `{ name, message }`. Observed on
 * `process.emitWarning` (called through): jest gives each test file a `process` of its own, whose
 * `'warning'` listeners Node's real warning delivery does not reach.
 */
async function warningsDuring(code: string, work: () => Promise<void>): Promise<{ name: string; message: string }[]> {
  const spy = jest.spyOn(process, 'emitWarning');
  try {
    await work();
    return spy.mock.calls
      .map(([message, options]) => ({ message: String(message), options: options as { type?: string; code?: string } | undefined }))
      .filter(({ options }) => options?.code === code)
      .map(({ message, options }) => ({ name: options?.type ?? '', message }));
  } finally {
    spy.mockRestore();
  }
}

describeEachDatabase('a loop on an embedded database', (db) => {
  test('says once per DataSource, for electors and groups alike, that only processes sharing the file take part', async () => {
    const dataSource = await db.connect();
    const other = await db.connect();
    const warnings = await warningsDuring(SQLITE_LOCAL_ELECTION_WARNING, async () => {
      const first = new LeaderElector({ dataSource, ns: ns(), expireSeconds: 3 });
      const second = new LeaderElector({ dataSource, ns: ns(), expireSeconds: 3 });
      const group = new LeaderElectorGroup({ dataSource: other, namespaces: [ns()], expireSeconds: 3 });
      for (const loop of [first, second, group]) await loop.start();
      for (const loop of [first, second, group]) await loop.stop();
      await first.start(); // a restart on the same DataSource: said already
      await first.stop();
    });
    expect(warnings).toHaveLength(2);
    for (const warning of warnings) {
      expect(warning.name).toBe('GemstoneWarning');
      expect(warning.message).toMatch(/only processes on this machine that open this same file take part/);
    }
  });
}, { kinds: ['sqlite'] });

describeEachDatabase('a loop on a server database', (db) => {
  test('says nothing about embedded databases', async () => {
    const dataSource = await db.connect();
    const warnings = await warningsDuring(SQLITE_LOCAL_ELECTION_WARNING, async () => {
      const elector = new LeaderElector({ dataSource, ns: ns(), expireSeconds: 3 });
      await elector.start();
      await elector.stop();
    });
    expect(warnings).toEqual([]);
  });

  test('initDb replacing a different live default names both; the same one or a destroyed one is replaced silently', async () => {
    const first = await db.connect();
    const second = db.track(new DataSource(db.options()));
    let warnings = await warningsDuring(DEFAULT_REPLACED_WARNING, async () => {
      await initDb(first); // the same default again
      await initDb(second);
    });
    expect(getDataSource()).toBe(second);
    expect(warnings).toHaveLength(1);
    expect(warnings[0]!.message).toMatch(/initDb replaced the default DataSource/);
    expect(warnings[0]!.message).toContain(new URL(db.url()).host);
    expect(warnings[0]!.message).toMatch(/Pass `dataSource` explicitly/);

    await second.destroy();
    warnings = await warningsDuring(DEFAULT_REPLACED_WARNING, async () => {
      await initDb(first);
    });
    expect(warnings).toEqual([]);
    expect(getDataSource()).toBe(first);
  });
}, { kinds: ['postgres', 'mariadb'] });
