/**
 * PostgreSQL: a heartbeat and a renewal write no index entry. Neither changes an indexed column
 * (the candidate table's only index is its primary key; the leader's too), and each page of both
 * tables keeps room for the next version of its rows (`fillfactor`), so each update is HOT: a new
 * row version on the same page, reached through the old one. Counted by the server itself, for the
 * updates of one transaction (`pg_stat_xact_user_tables`), on a few rows and on 10,000 candidates
 * packed into full pages, where an update without room would move the row and index it anew.
 */
import type { DataSource, QueryRunner } from 'typeorm';
import { ElectionService } from 'gemstone-utils';
import { describeEachDatabase, query, uuid } from '../support/databases';
import { ns as freshNs } from '../support/rows';

const TABLES = ['gemstone_election_candidate', 'gemstone_election_leader'] as const;
type Counts = Record<(typeof TABLES)[number], { updates: number; hot: number }>;

/** This transaction's updates and HOT updates of the election tables, as the server counted them. */
async function updatesIn(runner: QueryRunner): Promise<Counts> {
  const rows: Array<{ relname: string; n_tup_upd: string; n_tup_hot_upd: string }> = await runner.query(
    'SELECT relname, n_tup_upd, n_tup_hot_upd FROM pg_stat_xact_user_tables WHERE relname = ANY ($1) AND schemaname = current_schema()',
    [[...TABLES]],
  );
  const counts = { gemstone_election_candidate: { updates: 0, hot: 0 }, gemstone_election_leader: { updates: 0, hot: 0 } };
  for (const row of rows) counts[row.relname as (typeof TABLES)[number]] = { updates: Number(row.n_tup_upd), hot: Number(row.n_tup_hot_upd) };
  return counts;
}

/** Runs `work` in a transaction of its own on one connection; its counts, then a rollback. */
async function counted(ds: DataSource, work: (runner: QueryRunner) => Promise<void>): Promise<Counts> {
  const runner = ds.createQueryRunner();
  await runner.connect();
  try {
    await runner.startTransaction();
    await work(runner);
    return await updatesIn(runner);
  } finally {
    if (runner.isTransactionActive) await runner.rollbackTransaction();
    await runner.release();
  }
}

describeEachDatabase(
  'heartbeats and renewals as HOT updates',
  (db) => {
    let ds: DataSource;
    let service: ElectionService;
    beforeAll(async () => {
      ds = await db.connect();
      service = new ElectionService(ds);
    });

    test("a leader's renewals and a follower's heartbeats update in place: every update HOT", async () => {
      const ns = freshNs();
      const [leader, follower] = [uuid(), uuid()];
      expect(await service.elect(leader, { ns })).toBe(leader);
      expect(await service.elect(follower, { ns })).toBe(leader);
      const counts = await counted(ds, async (runner) => {
        for (let i = 0; i < 10; i++) {
          expect(await service.elect(leader, { ns, session: runner.manager })).toBe(leader);
          expect(await service.elect(follower, { ns, session: runner.manager })).toBe(leader);
          await service.heartbeat(follower, { ns, session: runner.manager });
        }
      });
      // Every call wrote its candidate row; every renewal the leader row.
      expect(counts.gemstone_election_candidate.updates).toBeGreaterThanOrEqual(30);
      expect(counts.gemstone_election_leader.updates).toBeGreaterThanOrEqual(10);
      expect(counts).toEqual({
        gemstone_election_candidate: { updates: counts.gemstone_election_candidate.updates, hot: counts.gemstone_election_candidate.updates },
        gemstone_election_leader: { updates: counts.gemstone_election_leader.updates, hot: counts.gemstone_election_leader.updates },
      });
    });

    test('among 10,000 candidates written into full pages, heartbeats across the table are HOT', async () => {
      const prefix = freshNs();
      // 3 candidates per namespace, inserted as the library's upsert inserts them: each page
      // filled up to the table's fillfactor.
      await query(
        ds,
        `INSERT INTO gemstone_election_candidate (ns, candidate_id, last_heartbeat_at, expires_at)
         SELECT ? || (g / 3), md5(g::text)::uuid::text, clock_timestamp(), clock_timestamp() + interval '1 hour' FROM generate_series(0, 9999) AS g`,
        [`${prefix}-`],
      );
      const picked = await query<{ ns: string; candidate_id: string }>(
        ds,
        `SELECT ns, candidate_id FROM gemstone_election_candidate WHERE ns LIKE ? ORDER BY md5(candidate_id) LIMIT 50`,
        [`${prefix}-%`],
      );
      expect(picked).toHaveLength(50);
      const pages = await query<{ pages: string }>(ds, `SELECT count(DISTINCT (ctid::text::point)[0]) AS pages FROM gemstone_election_candidate WHERE ns LIKE ?`, [`${prefix}-%`]);
      // The 50 rows are spread over the table, which spans many pages.
      expect(Number(pages[0]!.pages)).toBeGreaterThan(50);
      const counts = await counted(ds, async (runner) => {
        for (const row of picked) await service.heartbeat(row.candidate_id, { ns: row.ns, session: runner.manager });
      });
      // Each heartbeat wrote its row (and may touch its namespace's leader row): every update HOT.
      expect(counts.gemstone_election_candidate.updates).toBeGreaterThanOrEqual(50);
      expect(counts.gemstone_election_candidate).toEqual({ updates: counts.gemstone_election_candidate.updates, hot: counts.gemstone_election_candidate.updates });
    });
  },
  { kinds: ['postgres'] },
);
