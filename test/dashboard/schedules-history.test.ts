/**
 * The schedules of a namespace whose busiest schedule kept 20,000 runs, on every database: the
 * answer is right (its newest runs, newest first; the other schedules by name), and what a request
 * sends does not grow with the history: one index seek per name (and one past the last), one read
 * of each name's newest runs, none of them sorted by the database (each plan walks the primary
 * key, so each reads no more rows than it returns). `getRuns` over the same history: its pages
 * follow on, each read from an index in its order, never sorted.
 */
import type { DataSource, DataSourceOptions } from 'typeorm';
import { ElectionService, type GetRunsOptions } from 'gemstone-utils';
import { contextOf } from '../../dist/src/db/context';
import { render } from '../../dist/src/db/sql';
import { runStatementsOf } from '../../dist/src/schedules/statements';
import { checkRunsOptions } from '../../dist/src/schedules/validate';
import { createDashboard, MAX_SCHEDULES_SHOWN, RUNS_SHOWN_PER_SCHEDULE, type Dashboard } from 'gemstone-utils/dashboard';
import { describeEachDatabase, query } from '../support/databases';
import { ns as freshNs } from '../support/rows';
import { agoSql } from './support/sql';
import { getJson, serveDashboard, Served, StatementRecorder } from './support/http';

const HISTORY = 20_000;
const CHUNK = 500;
const RUN = /\bgemstone_election_run\b/;
/** MariaDB: one statement bounded by `max_statement_time`. */
const BOUNDED = /^SET STATEMENT max_statement_time = \d+(\.\d+)? FOR\s+/i;
const NAME_SEEK = /^SELECT name FROM \S+ WHERE ns = \S+( AND name > \S+)? ORDER BY name LIMIT \S+( OFFSET \S+)?$/i;
const NEWEST_RUNS = /FROM \S+ r WHERE r\.ns = \S+ AND r\.name = \S+ ORDER BY r\.slot DESC LIMIT \S+( OFFSET \S+)?$/i;

interface Schedules {
  ns: string;
  schedules: { name: string; runs: { slot: number; state: string; attempt: number; term: number }[] }[];
  truncated: boolean;
}

/** Runs of `name`, attempt `i` (and term `i`) for the i-th oldest, a second apart, the newest `newestAgo` seconds ago. */
async function insertRuns(ds: DataSource, ns: string, name: string, count: number, newestAgo: number): Promise<void> {
  for (let first = 1; first <= count; first += CHUNK) {
    const indexes = Array.from({ length: Math.min(CHUNK, count - first + 1) }, (_, k) => first + k);
    // Slots in whole milliseconds, as the library writes them: a page's start is a slot read back.
    const rows = indexes.map((i) => `(?, ?, ${agoSql(ds, newestAgo + count - i, true)}, 'done', ?, ?, 'cand', ${agoSql(ds, newestAgo + count - i)}, ${agoSql(ds, newestAgo + count - i)}, NULL)`);
    await query(
      ds,
      `INSERT INTO gemstone_election_run (ns, name, slot, state, attempt, term, candidate_id, started_at, finished_at, error) VALUES ${rows.join(', ')}`,
      indexes.flatMap((i) => [ns, name, i, i]),
    );
  }
}

/** The plan of `statement` as text, whether the database sorts rows for it, and whether it sorts or scans a whole table or index. */
async function plan(ds: DataSource, statement: string, parameters: unknown[]): Promise<{ text: string; sorts: boolean; sortsOrScans: boolean }> {
  const text = statement.replace(BOUNDED, '');
  switch (ds.options.type) {
    case 'postgres': {
      const rows = await ds.query(`EXPLAIN ${text}`, parameters);
      const lines = rows.map((r: Record<string, unknown>) => String(r['QUERY PLAN']));
      const sorts = lines.some((l: string) => /\bSort\b/.test(l));
      return { text: lines.join('\n'), sorts, sortsOrScans: sorts || lines.some((l: string) => /Seq Scan/.test(l)) };
    }
    case 'mysql':
    case 'mariadb': {
      // The dashboard sends LIMIT's count as text to a prepared statement; interpolated here, it must be a number.
      const values = parameters.map((v) => (typeof v === 'string' && /^\d+$/.test(v) ? Number(v) : v));
      const rows = await ds.query(`EXPLAIN ${text}`, values);
      const json = JSON.stringify(rows);
      const sorts = /filesort|temporary/i.test(json);
      return { text: json, sorts, sortsOrScans: sorts || /"type":"(ALL|index)"/i.test(json) };
    }
    default: {
      const rows = await ds.query(`EXPLAIN QUERY PLAN ${text}`, parameters);
      const json = JSON.stringify(rows);
      const sorts = /TEMP B-TREE/i.test(json);
      return { text: json, sorts, sortsOrScans: sorts || /"detail":"SCAN\b/i.test(json) };
    }
  }
}

/**
 * The most rows any step of `statement` read, as the database counted them running it (PostgreSQL
 * `EXPLAIN ANALYZE`, MariaDB `ANALYZE`); undefined on SQLite, which does not count them.
 */
async function rowsRead(ds: DataSource, statement: string, parameters: unknown[]): Promise<number | undefined> {
  const text = statement.replace(BOUNDED, '');
  switch (ds.options.type) {
    case 'postgres': {
      const rows = await ds.query(`EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF) ${text}`, parameters);
      const counts = rows.flatMap((r: Record<string, unknown>) => [...String(r['QUERY PLAN']).matchAll(/actual rows=(\d+)/g)].map((m) => Number(m[1])));
      return Math.max(...counts);
    }
    case 'mysql':
    case 'mariadb': {
      const values = parameters.map((v) => (typeof v === 'string' && /^\d+$/.test(v) ? Number(v) : v));
      const rows: Record<string, unknown>[] = await ds.query(`ANALYZE ${text}`, values);
      return Math.max(...rows.map((r) => Number(r.r_rows)));
    }
    default:
      return undefined;
  }
}

describeEachDatabase('dashboard: schedules of a long history', (db) => {
  // One DataSource (its logger records only while a request is under way): `:memory:` is one per connection.
  let ds: DataSource;
  let dashboard: Dashboard;
  let served: Served;
  const recorder = new StatementRecorder();
  const ns = freshNs();

  beforeAll(async () => {
    ds = await db.connect({ logger: recorder, logging: true } as Partial<DataSourceOptions>);
    await insertRuns(ds, ns, 'every-second', HISTORY, 60);
    await insertRuns(ds, ns, 'alpha', 3, 120);
    await insertRuns(ds, ns, 'zulu', 1, 120);
    // The statistics the database keeps of a table in use (autovacuum, InnoDB's, SQLite's ANALYZE): plans are chosen by them.
    await query(ds, ds.options.type === 'postgres' ? 'ANALYZE gemstone_election_run' : ds.options.type === 'mariadb' || ds.options.type === 'mysql' ? 'ANALYZE TABLE gemstone_election_run' : 'ANALYZE');
    dashboard = createDashboard({ dataSource: ds, onError: () => undefined });
    served = await serveDashboard(dashboard);
  }, 300_000);
  afterAll(async () => {
    await served?.close();
    await dashboard?.close();
  });

  test(`${HISTORY} runs of one schedule: its newest ${RUNS_SHOWN_PER_SCHEDULE}, read by bounded statements only`, async () => {
    const [stored] = await query<{ n: unknown }>(ds, 'SELECT COUNT(*) AS n FROM gemstone_election_run WHERE ns = ? AND name = ?', [ns, 'every-second']);
    expect(Number(stored!.n)).toBe(HISTORY);

    recorder.recording = true;
    const from = recorder.statements.length;
    const { status, body } = await getJson<Schedules>(`${served.url}/api/namespace/schedules?ns=${encodeURIComponent(ns)}`);
    recorder.recording = false;
    expect(status).toBe(200);
    expect(body.truncated).toBe(false);
    expect(body.schedules.map((s) => s.name)).toEqual(['alpha', 'every-second', 'zulu']);
    const busy = body.schedules[1]!.runs;
    // attempt i is the i-th oldest: the newest are HISTORY, HISTORY - 1, …
    expect(busy.map((r) => r.attempt)).toEqual(Array.from({ length: RUNS_SHOWN_PER_SCHEDULE }, (_, k) => HISTORY - k));
    expect(busy.every((r, k) => k === 0 || r.slot < busy[k - 1]!.slot)).toBe(true);
    expect(body.schedules[0]!.runs.map((r) => r.attempt)).toEqual([3, 2, 1]);
    expect(body.schedules[2]!.runs.map((r) => r.attempt)).toEqual([1]);

    const sent = recorder.statements.slice(from).filter((s) => RUN.test(s.query));
    const shapes = sent.map((s) => s.query.replace(BOUNDED, '').replace(/\s+/g, ' ').trim());
    // Three names found, then one seek that finds none; one read of each name's newest runs.
    expect(shapes.filter((q) => NAME_SEEK.test(q))).toHaveLength(4);
    expect(shapes.filter((q) => NEWEST_RUNS.test(q))).toHaveLength(3);
    expect(shapes.filter((q) => !NAME_SEEK.test(q) && !NEWEST_RUNS.test(q))).toEqual([]);
    expect(sent.length).toBeLessThanOrEqual(2 * MAX_SCHEDULES_SHOWN + 1);

    for (const statement of sent) {
      const { text, sortsOrScans } = await plan(ds, statement.query, [...(statement.parameters ?? [])]);
      expect({ statement: statement.query, plan: text, sortsOrScans }).toEqual({ statement: statement.query, plan: text, sortsOrScans: false });
      const read = await rowsRead(ds, statement.query, [...(statement.parameters ?? [])]);
      // Measured: a name seek reads one index entry (none past the last name), a run read the runs it returns.
      const bound = NAME_SEEK.test(statement.query.replace(BOUNDED, '').replace(/\s+/g, ' ').trim()) ? 1 : RUNS_SHOWN_PER_SCHEDULE;
      // The statement, the rows it read and its bound show in a failure.
      if (read !== undefined) expect({ statement: statement.query, read, bound, within: read <= bound }).toMatchObject({ within: true });
    }
  });

  test(`getRuns over ${HISTORY} runs: pages that start after the last run got follow on; each read walks an index in its order, unsorted`, async () => {
    const service = new ElectionService(ds);
    const first = await service.getRuns({ limit: 100 });
    const cursor = first[first.length - 1]!;
    const second = await service.getRuns({ limit: 100, before: cursor });
    expect([...first, ...second]).toEqual(await service.getRuns({ limit: 200 }));
    expect(second.every((run) => run.slot.getTime() <= cursor.slot.getTime())).toBe(true);
    expect((await service.getRuns({ ns, name: 'every-second', limit: 3 })).map((r) => r.attempt)).toEqual([HISTORY, HISTORY - 1, HISTORY - 2]);

    // The statements getRuns sends for each filter, with a page's start and without.
    const context = contextOf(ds);
    const asked: GetRunsOptions[] = [{}, { before: cursor }, { ns }, { ns, before: cursor }, { name: 'every-second', before: cursor }, { ns, name: 'every-second', before: cursor }, { before: cursor.slot }];
    for (const options of asked) {
      const { text: statement, values } = render(runStatementsOf(context).selectRuns(checkRunsOptions({ ...options, limit: 100 })), context.dialect.placeholders);
      const parameters = [...values];
      const { text, sorts } = await plan(ds, statement, parameters);
      expect({ options, plan: text, sorts }).toEqual({ options, plan: text, sorts: false });
      // Measured: a page reads the rows it returns, and those of its first slot that an earlier page returned.
      const read = await rowsRead(ds, statement, parameters);
      if (read !== undefined) expect({ options, read, within: read <= 101 }).toMatchObject({ within: true });
    }
  });
});
