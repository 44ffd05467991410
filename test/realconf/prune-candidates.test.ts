/**
 * Candidate rows expired for longer than the retention are deleted by the database clock, in
 * bounded batches, without touching the leader row; the elector prunes on its own.
 */
import type { DataSource } from 'typeorm';
import {
  DEFAULT_CANDIDATE_RETENTION_SECONDS,
  ElectionService,
  LeaderElector,
  pruneExpiredCandidates,
  ValidationError,
} from 'gemstone-utils';
import { describeEachDatabase, inCallerTransaction, query, TestDatabase, uuid } from '../support/databases';
import { ns as freshNs } from '../support/rows';
import { waitFor } from '../elector/helpers';

const TABLE = 'gemstone_election_candidate';

describeEachDatabase('pruneExpiredCandidates', (db) => {
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

  /** Inserts `count` candidate rows of `ns` that expired `secondsAgo` seconds ago. */
  async function insertExpired(ns: string, count: number, secondsAgo: number): Promise<void> {
    const { expr, param } = ago(db.kind);
    for (let done = 0; done < count; done += 100) {
      const n = Math.min(100, count - done);
      const rows = Array.from({ length: n }, () => `(?, ?, ${expr}, ${expr})`).join(', ');
      const params = Array.from({ length: n }, () => [ns, uuid(), param(secondsAgo + 60), param(secondsAgo)]).flat();
      await query(ds, `INSERT INTO ${TABLE} (ns, candidate_id, last_heartbeat_at, expires_at) VALUES ${rows}`, params);
    }
  }

  async function backdate(ns: string, id: string, secondsAgo: number): Promise<void> {
    const { expr, param } = ago(db.kind);
    await query(ds, `UPDATE ${TABLE} SET expires_at = ${expr} WHERE ns = ? AND candidate_id = ?`, [param(secondsAgo), ns, id]);
  }

  async function ids(ns: string): Promise<string[]> {
    const rows = await query<{ candidate_id: string }>(ds, `SELECT candidate_id FROM ${TABLE} WHERE ns = ?`, [ns]);
    return rows.map((r) => String(r.candidate_id).toLowerCase()).sort();
  }

  async function leaderRows(): Promise<string> {
    return JSON.stringify(await query(ds, 'SELECT * FROM gemstone_election_leader ORDER BY ns'));
  }

  test('the default retention is one day', () => {
    expect(DEFAULT_CANDIDATE_RETENTION_SECONDS).toBe(86_400);
  });

  test('deletes rows expired beyond the retention; keeps live and recently expired ones; leader row untouched', async () => {
    const ns = freshNs();
    const [leader, live, recent, old] = [uuid(), uuid(), uuid(), uuid()];
    expect(await svc.elect(leader, { ns })).toBe(leader);
    for (const id of [live, recent, old]) await svc.registerCandidate(id, { ns });
    await backdate(ns, recent, 10);
    await backdate(ns, old, 7200);
    const before = await leaderRows();
    const deleted = await pruneExpiredCandidates(ds, { retentionSeconds: 3600 });
    expect(deleted).toBe(1);
    expect(await ids(ns)).toEqual([leader, live, recent].sort());
    expect(await leaderRows()).toBe(before);
    // Default retention (one day): a row expired two hours ago stays.
    await backdate(ns, recent, 7200);
    expect(await pruneExpiredCandidates(ds)).toBe(0);
    expect(await ids(ns)).toContain(recent);
    // Pruning spans every namespace: leave nothing expired behind for the next tests.
    expect(await pruneExpiredCandidates(ds, { retentionSeconds: 3600 })).toBe(1);
  });

  test('more than 500 expired rows: batches of 500, at most 20 per call', async () => {
    const ns = freshNs();
    await insertExpired(ns, 10_100, 7200);
    // 20 statements of 500 rows; the 100 left over wait for the next call.
    expect(await pruneExpiredCandidates(ds, { retentionSeconds: 3600 })).toBe(10_000);
    expect(await ids(ns)).toHaveLength(100);
    expect(await pruneExpiredCandidates(ds, { retentionSeconds: 3600 })).toBe(100);
    expect(await ids(ns)).toEqual([]);
  });

  test("inside the caller's transaction with session", async () => {
    const ns = freshNs();
    await insertExpired(ns, 3, 7200);
    const deleted = await inCallerTransaction(ds, (session) => pruneExpiredCandidates(ds, { retentionSeconds: 3600, session }));
    expect(deleted).toBe(3);
    expect(await ids(ns)).toEqual([]);
  });

  test('bad input: ValidationError naming the parameter', async () => {
    await expect(pruneExpiredCandidates(ds, { retentionSeconds: -1 })).rejects.toMatchObject({ parameter: 'options.retentionSeconds' });
    await expect(pruneExpiredCandidates(ds, { retentionSeconds: Number.NaN })).rejects.toBeInstanceOf(ValidationError);
    await expect(pruneExpiredCandidates({} as DataSource)).rejects.toMatchObject({ parameter: 'dataSource' });
    expect(() => new LeaderElector({ dataSource: ds, candidateRetentionSeconds: -5 })).toThrow(
      expect.objectContaining({ parameter: 'options.candidateRetentionSeconds' }),
    );
  });

  test('the elector prunes on its own, after a tick, with a small retention', async () => {
    const ns = freshNs();
    const other = freshNs();
    await insertExpired(other, 3, 120);
    const elector = new LeaderElector({ dataSource: ds, ns, expireSeconds: 2, intervalMs: 200, candidateRetentionSeconds: 60 });
    const errors: unknown[] = [];
    elector.on('error', (error) => errors.push(error));
    try {
      await elector.start();
      expect(elector.isLeader).toBe(true);
      await waitFor('the elector to prune the expired rows', async () => (await ids(other)).length === 0);
      expect(await ids(ns)).toEqual([elector.candidateId]);
    } finally {
      await elector.stop();
    }
    expect(errors).toEqual([]);
  });
});
