/**
 * History rows of terms ended longer ago than the retention are deleted by the database clock,
 * in bounded batches, never the current term, never taking the leader row's lock; the elector
 * prunes on its own.
 */
import type { DataSource } from 'typeorm';
import { DEFAULT_HISTORY_RETENTION_SECONDS, ElectionService, LeaderElector, pruneHistory, ValidationError } from 'gemstone-utils';
import { describeEachDatabase, inCallerTransaction, query, TestDatabase, uuid } from '../support/databases';
import { ns as freshNs } from '../support/rows';
import { waitFor } from '../elector/helpers';

const TABLE = 'gemstone_election_history';

describeEachDatabase('pruneHistory', (db) => {
  let ds: DataSource;
  let svc: ElectionService;

  beforeAll(async () => {
    ds = await db.connect();
    svc = new ElectionService(ds);
  });

  /** The database-clock instant `seconds` ago, as SQL with one parameter. */
  function ago(kind: TestDatabase['kind']): { expr: string; param: (s: number) => unknown } {
    if (kind === 'postgres') return { expr: 'clock_timestamp() - make_interval(secs => ?)', param: (s) => s };
    if (kind === 'mariadb') return { expr: 'UTC_TIMESTAMP(6) - INTERVAL ? SECOND', param: (s) => s };
    return { expr: "strftime('%Y-%m-%d %H:%M:%f', 'now', ?)", param: (s) => `-${s} seconds` };
  }

  /** Inserts terms `first`.. of `ns` that ended `secondsAgo` seconds ago (or are open, with `null`). */
  async function insertTerms(ns: string, first: number, count: number, secondsAgo: number | null): Promise<void> {
    const { expr, param } = ago(db.kind);
    for (let done = 0; done < count; done += 100) {
      const n = Math.min(100, count - done);
      const ended = secondsAgo === null ? 'NULL' : expr;
      const rows = Array.from({ length: n }, () => `(?, ?, ?, ${expr}, ${ended}, ${secondsAgo === null ? 'NULL' : "'resigned'"})`).join(', ');
      const params = Array.from({ length: n }, (_, i) => [
        ns,
        first + done + i,
        uuid(),
        param((secondsAgo ?? 86_400 * 365) + 60),
        ...(secondsAgo === null ? [] : [param(secondsAgo)]),
      ]).flat();
      await query(ds, `INSERT INTO ${TABLE} (ns, term, leader_id, acquired_at, ended_at, end_reason) VALUES ${rows}`, params);
    }
  }

  async function terms(ns: string): Promise<number[]> {
    const rows = await query<{ term: unknown }>(ds, `SELECT term FROM ${TABLE} WHERE ns = ?`, [ns]);
    return rows.map((r) => Number(r.term)).sort((a, b) => a - b);
  }

  test('the default retention is 30 days', () => {
    expect(DEFAULT_HISTORY_RETENTION_SECONDS).toBe(30 * 86_400);
  });

  test('deletes terms ended beyond the retention; keeps recent ones and the open term, however old; leader row untouched', async () => {
    const ns = freshNs();
    await insertTerms(ns, 1, 2, 7200); // ended two hours ago
    await insertTerms(ns, 3, 1, 10); // ended ten seconds ago
    await insertTerms(ns, 4, 1, null); // open for a year
    const leaders = JSON.stringify(await query(ds, 'SELECT * FROM gemstone_election_leader ORDER BY ns'));
    expect(await pruneHistory(ds, { retentionSeconds: 3600 })).toBe(2);
    expect(await terms(ns)).toEqual([3, 4]);
    expect(JSON.stringify(await query(ds, 'SELECT * FROM gemstone_election_leader ORDER BY ns'))).toBe(leaders);
    // The default (30 days) keeps a term ended two hours ago.
    await insertTerms(ns, 5, 1, 7200);
    expect(await pruneHistory(ds)).toBe(0);
    expect(await pruneHistory(ds, { retentionSeconds: 3600 })).toBe(1);
    expect(await terms(ns)).toEqual([3, 4]);
  });

  test('more than 500 old rows: batches of 500, at most 20 per call', async () => {
    const ns = freshNs();
    await insertTerms(ns, 1, 10_100, 7200);
    expect(await pruneHistory(ds, { retentionSeconds: 3600 })).toBe(10_000);
    expect(await terms(ns)).toHaveLength(100);
    expect(await pruneHistory(ds, { retentionSeconds: 3600 })).toBe(100);
    expect(await terms(ns)).toEqual([]);
  });

  // SQLite has one database write lock, no row locks: nothing to show there.
  if (db.kind !== 'sqlite') {
    test("runs while a transaction holds the leader row's lock (it never takes it)", async () => {
      const ns = freshNs();
      const leader = uuid();
      await svc.elect(leader, { ns });
      await insertTerms(ns, 100, 3, 7200);
      await inCallerTransaction(ds, async (runner) => {
        await svc.assertLeader(leader, { ns, session: runner }); // locks the leader row until the end
        const pruned = await Promise.race([
          pruneHistory(ds, { retentionSeconds: 3600 }),
          new Promise((resolve) => setTimeout(() => resolve('blocked'), 10_000)),
        ]);
        expect(pruned).toBe(3);
      });
      expect(await terms(ns)).toEqual([1]);
    });
  }

  test("inside the caller's transaction with session", async () => {
    const ns = freshNs();
    await insertTerms(ns, 1, 3, 7200);
    expect(await inCallerTransaction(ds, (session) => pruneHistory(ds, { retentionSeconds: 3600, session }))).toBe(3);
    expect(await terms(ns)).toEqual([]);
  });

  test('bad input: ValidationError naming the parameter', async () => {
    await expect(pruneHistory(ds, { retentionSeconds: -1 })).rejects.toMatchObject({ parameter: 'options.retentionSeconds' });
    await expect(pruneHistory(ds, { retentionSeconds: Number.NaN })).rejects.toBeInstanceOf(ValidationError);
    await expect(pruneHistory(ds, { retention: 5 } as never)).rejects.toMatchObject({ parameter: 'options.retention' });
    await expect(pruneHistory({} as DataSource)).rejects.toMatchObject({ parameter: 'dataSource' });
    expect(() => new LeaderElector({ dataSource: ds, historyRetentionSeconds: -5 })).toThrow(
      expect.objectContaining({ parameter: 'options.historyRetentionSeconds' }),
    );
  });

  test('the elector prunes old history on its own, after a tick', async () => {
    // The first elector on this DataSource in this file: it prunes after its first tick.
    const ns = freshNs();
    const other = freshNs();
    await insertTerms(other, 1, 3, 120);
    const elector = new LeaderElector({ dataSource: ds, ns, expireSeconds: 2, intervalMs: 200, historyRetentionSeconds: 60 });
    const errors: unknown[] = [];
    elector.on('error', (error) => errors.push(error));
    try {
      await elector.start();
      expect(elector.isLeader).toBe(true);
      await waitFor('the elector to prune the old terms', async () => (await terms(other)).length === 0);
      expect(await terms(ns)).toEqual([1]); // its own, current term stays
    } finally {
      await elector.stop();
    }
    expect(errors).toEqual([]);
  });
});
