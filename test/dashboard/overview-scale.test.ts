/**
 * An overview page costs what its rows cost: with 10,000 namespaces — each with
 * a live lease, an active candidate and a recent term — a page of 25 is read in a bounded time on
 * every database, in every order (MariaDB joined grouped counts over every namespace by a block
 * nested loop: 22 s at 10,000). Prints the time per page (median of three) per order.
 */
import type { DataSource } from 'typeorm';
import { describeEachDatabase, query } from '../support/databases';
import { createDashboard } from 'gemstone-utils/dashboard';
import { agoSql } from './support/sql';
import { getJson, serveDashboard } from './support/http';

const NAMESPACES = 10_000;
const CHUNK = 500;
/** Far above what a page costs on a loaded machine (tens of ms), far below the quadratic plan's 22 s. */
const PAGE_BOUND_MS = 3_000;

function inSql(dataSource: DataSource, seconds: number): string {
  switch (dataSource.options.type) {
    case 'postgres':
      return `(clock_timestamp() + interval '${seconds} seconds')`;
    case 'mysql':
    case 'mariadb':
      return `(UTC_TIMESTAMP(6) + INTERVAL ${seconds} SECOND)`;
    default:
      return `strftime('%Y-%m-%d %H:%M:%f', 'now', '+${seconds} seconds')`;
  }
}

describeEachDatabase(
  'dashboard overview at 10,000 namespaces',
  (db) => {
    let ds: DataSource;

    beforeAll(async () => {
      ds = await db.connect();
      const now = agoSql(ds, 0);
      const later = inSql(ds, 600);
      for (let first = 0; first < NAMESPACES; first += CHUNK) {
        const names = Array.from({ length: CHUNK }, (_, i) => `scale-${String(first + i).padStart(5, '0')}`);
        const pairs = names.flatMap((ns) => [ns, `holder-${ns}`]);
        await query(ds, `INSERT INTO gemstone_election_leader (ns, leader_id, lease_expires_at, updated_at, term) VALUES ${names.map(() => `(?, ?, ${later}, ${now}, 2)`).join(', ')}`, pairs);
        await query(ds, `INSERT INTO gemstone_election_candidate (ns, candidate_id, last_heartbeat_at, expires_at) VALUES ${names.map(() => `(?, ?, ${now}, ${later})`).join(', ')}`, pairs);
        await query(
          ds,
          `INSERT INTO gemstone_election_history (ns, term, leader_id, acquired_at, ended_at, end_reason) VALUES ${names.map(() => `(?, 1, ?, ${agoSql(ds, 60)}, ${agoSql(ds, 30)}, 'expired')`).join(', ')}`,
          pairs,
        );
      }
    }, 300_000);

    test.each(['ns', 'health', 'candidates'])('a page of 25 in order %s: bounded time, the right rows', async (sort) => {
      const dashboard = createDashboard({ dataSource: ds });
      const served = await serveDashboard(dashboard);
      try {
        const times: number[] = [];
        let body: { total: number; vacant: number; rows: { ns: string; candidates: number; recentTerms: number }[] } | undefined;
        for (let i = 0; i < 3; i++) {
          const started = performance.now();
          const answer = await getJson<NonNullable<typeof body>>(`${served.url}/api/overview?limit=25&offset=5000&sort=${sort}`);
          times.push(performance.now() - started);
          expect(answer.status).toBe(200);
          body = answer.body;
        }
        const median = times.sort((a, b) => a - b)[1]!;
        console.log(`overview page of 25 of ${NAMESPACES} (sort=${sort}, ${db.name}): ${median.toFixed(0)} ms (median of 3)`);
        expect(body!.total).toBe(NAMESPACES);
        expect(body!.vacant).toBe(0);
        expect(body!.rows).toHaveLength(25);
        expect(body!.rows[0]).toMatchObject({ candidates: 1, recentTerms: 1 });
        if (sort === 'ns') expect(body!.rows[0]!.ns).toBe('scale-05000');
        expect(median).toBeLessThan(PAGE_BOUND_MS);
      } finally {
        await served.close();
      }
    }, 120_000);
  },
  { sharedOnly: true },
);
