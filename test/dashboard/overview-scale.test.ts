/**
 * An overview page at 10,000 namespaces — each with a leader row (one in ten vacant), one to
 * three active candidates and up to four recent terms — in every order and direction, unfiltered
 * and with a selective filter, on every database. The totals and the order need every namespace;
 * they are read once per interval, in one statement per filter and order shared by every request
 * and stream (the interval's snapshot); a page itself reads only its own rows. Asserted by the
 * statements each request sends (one that reads every namespace at most once per interval), and
 * the totals and the order of the rows. Prints the time of a request that reads the snapshot and
 * of one served from it (medians), and the statements each sent.
 */
import type { DataSource, DataSourceOptions } from 'typeorm';
import { createDashboard } from 'gemstone-utils/dashboard';
import { describeEachDatabase, query } from '../support/databases';
import { agoSql } from './support/sql';
import { getJson, serveDashboard, StatementRecorder } from './support/http';
import { readsEveryNamespace } from './support/overview-statements';

const NAMESPACES = 10_000;
const CHUNK = 500;
/** Long enough that every request of one order and filter below falls in one interval. */
const POLL_MS = 600_000;
const SORTS = ['ns', 'term', 'lease', 'candidates', 'changes', 'health'] as const;
/** Matches scale-00420 … scale-00429. */
const SELECTIVE = 'SCALE-0042';

interface Row {
  ns: string;
  term: number | null;
  live: boolean;
  candidates: number;
  recentTerms: number;
  leaseExpiresAt: number | null;
}
interface Page {
  total: number;
  vacant: number;
  flapping: number;
  rows: Row[];
}

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

/** What namespace `i` was seeded with. */
const seeded = (i: number) => ({ vacant: i % 10 === 0, term: (i % 7) + 1, candidates: (i % 3) + 1, recentTerms: i % 5 });
const nameOf = (i: number) => `scale-${String(i).padStart(5, '0')}`;

function expectedTotals(indexes: number[]): Omit<Page, 'rows'> {
  return {
    total: indexes.length,
    vacant: indexes.filter((i) => seeded(i).vacant).length,
    // flapTerms 3 (the default): three or more terms ended within the window.
    flapping: indexes.filter((i) => seeded(i).recentTerms >= 3).length,
  };
}

/** The sort key of a row for the orders whose key is a plain number. */
function keyOf(sort: (typeof SORTS)[number], row: Row): number | undefined {
  switch (sort) {
    case 'term':
      return row.term ?? 0;
    case 'candidates':
      return row.candidates;
    case 'changes':
      return row.recentTerms;
    default:
      return undefined;
  }
}

const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!;

describeEachDatabase(
  'dashboard overview at 10,000 namespaces',
  (db) => {
    let writer: DataSource;
    let reader: DataSource;
    const recorder = new StatementRecorder();
    const report: string[] = [];

    beforeAll(async () => {
      writer = await db.connect();
      reader = await db.connect({ logger: recorder, logging: true } as Partial<DataSourceOptions>, { createTables: false });
      const now = agoSql(writer, 0);
      const later = inSql(writer, 600);
      for (let first = 0; first < NAMESPACES; first += CHUNK) {
        const indexes = Array.from({ length: CHUNK }, (_, i) => first + i);
        const leaders = indexes.map((i) => (seeded(i).vacant ? `(?, NULL, NULL, ${now}, ${seeded(i).term})` : `(?, ?, ${later}, ${now}, ${seeded(i).term})`));
        await query(
          writer,
          `INSERT INTO gemstone_election_leader (ns, leader_id, lease_expires_at, updated_at, term) VALUES ${leaders.join(', ')}`,
          indexes.flatMap((i) => (seeded(i).vacant ? [nameOf(i)] : [nameOf(i), `holder-${nameOf(i)}`])),
        );
        const candidates = indexes.flatMap((i) => Array.from({ length: seeded(i).candidates }, (_, k) => [nameOf(i), k === 0 ? `holder-${nameOf(i)}` : `other-${k}-${nameOf(i)}`]));
        await query(writer, `INSERT INTO gemstone_election_candidate (ns, candidate_id, last_heartbeat_at, expires_at) VALUES ${candidates.map(() => `(?, ?, ${now}, ${later})`).join(', ')}`, candidates.flat());
        const terms = indexes.flatMap((i) => Array.from({ length: seeded(i).recentTerms }, (_, k) => [nameOf(i), 100 + k, `holder-${nameOf(i)}`] as const));
        if (terms.length > 0) {
          await query(
            writer,
            `INSERT INTO gemstone_election_history (ns, term, leader_id, acquired_at, ended_at, end_reason) VALUES ${terms.map(() => `(?, ?, ?, ${agoSql(writer, 120)}, ${agoSql(writer, 60)}, 'expired')`).join(', ')}`,
            terms.flat(),
          );
        }
      }
      recorder.recording = true;
    }, 600_000);

    afterAll(() => {
      // eslint-disable-next-line no-console
      console.log(`overview of ${NAMESPACES} namespaces on ${db.name} (ms; "snapshot": the request that read the interval's totals and order; "page": median of 3 served from it):\n${report.join('\n')}`);
    });

    for (const filter of ['', SELECTIVE]) {
      test.each(SORTS.flatMap((sort) => [[sort, 'asc'] as const, [sort, 'desc'] as const]))(
        `filter "${filter}", order %s %s: one statement per page, totals and order of the whole filter`,
        async (sort, dir) => {
          const dashboard = createDashboard({ dataSource: reader, pollMs: POLL_MS });
          const served = await serveDashboard(dashboard);
          try {
            const indexes = Array.from({ length: NAMESPACES }, (_, i) => i).filter((i) => filter === '' || nameOf(i).includes(filter.toLowerCase()));
            const offset = filter === '' ? 5_000 : 0;
            const url = `${served.url}/api/overview?q=${filter}&sort=${sort}&dir=${dir}&limit=25&offset=${offset}`;
            const times: number[] = [];
            const statements: number[] = [];
            const everyNamespace: number[] = [];
            let page: Page | undefined;
            for (let i = 0; i < 4; i++) {
              const from = recorder.statements.length;
              const started = performance.now();
              const answer = await getJson<Page>(url);
              times.push(performance.now() - started);
              // The connection's own set-up (MariaDB asks the server's version on a new one) is not the page's.
              const sent = recorder.statements.slice(from).map((s) => s.query).filter((q) => /gemstone_election_|\bAS db_now\b/.test(q));
              statements.push(sent.length);
              everyNamespace.push(sent.filter(readsEveryNamespace).length);
              expect(answer.status).toBe(200);
              page = answer.body;
            }
            report.push(
              `  q=${JSON.stringify(filter)} sort=${sort} ${dir}: snapshot ${times[0]!.toFixed(0)}, page ${median(times.slice(1)).toFixed(0)}; statements ${statements.join('/')}`,
            );
            // The first request reads the interval's snapshot (one statement over every namespace) and its
            // page; the others, in the same interval, only their page's rows.
            expect(everyNamespace).toEqual([1, 0, 0, 0]);
            expect(statements).toEqual([2, 1, 1, 1]);
            const { rows, ...totals } = page!;
            expect(totals).toMatchObject(expectedTotals(indexes));
            expect(rows).toHaveLength(Math.min(25, indexes.length - offset));
            for (const row of rows) {
              const i = Number(row.ns.slice('scale-'.length));
              expect(row).toMatchObject({ term: seeded(i).term, live: !seeded(i).vacant, candidates: seeded(i).candidates, recentTerms: seeded(i).recentTerms });
            }
            const names = rows.map((row) => row.ns);
            if (sort === 'ns') expect(names).toEqual(dir === 'asc' ? [...names].sort() : [...names].sort().reverse());
            if (sort === 'ns' && filter === '') expect(names[0]).toBe(dir === 'asc' ? nameOf(5_000) : nameOf(4_999));
            const keys = rows.map((row) => keyOf(sort, row));
            if (keys[0] !== undefined) {
              const sorted = [...(keys as number[])].sort((a, b) => (dir === 'asc' ? a - b : b - a));
              expect(keys).toEqual(sorted);
            }
          } finally {
            await served.close();
          }
        },
        120_000,
      );
    }
  },
  { sharedOnly: true },
);
