/**
 * Bulk seeding for the scale benchmarks: many namespaces (or candidates) in a few multi-row
 * INSERTs, instants from the database clock, a lease and candidacies valid for an hour.
 */
import { CANDIDATE_TABLE, LEADER_TABLE, RUN_TABLE } from 'gemstone-utils';
import type { DataSource } from 'typeorm';
import type { BenchKind } from './databases';

const CLOCK: Record<BenchKind, { now: string; later: string }> = {
  postgres: { now: 'clock_timestamp()', later: "clock_timestamp() + interval '1 hour'" },
  mariadb: { now: 'UTC_TIMESTAMP(6)', later: 'UTC_TIMESTAMP(6) + INTERVAL 1 HOUR' },
  sqlite: { now: "strftime('%Y-%m-%d %H:%M:%f', 'now')", later: "strftime('%Y-%m-%d %H:%M:%f', 'now', '+3600 seconds')" },
};

const CHUNK = 500;

async function insertRows(dataSource: DataSource, kind: BenchKind, head: string, rows: unknown[][], row: (p: () => string) => string) {
  for (let i = 0; i < rows.length; i += CHUNK) {
    const chunk = rows.slice(i, i + CHUNK);
    const values: unknown[] = [];
    const p = () => (kind === 'postgres' ? `$${values.length}` : '?');
    const tuples = chunk.map((r) => {
      let k = 0;
      return row(() => {
        values.push(r[k++]);
        return p();
      });
    });
    await dataSource.query(`${head} VALUES ${tuples.join(', ')}`, values);
  }
}

/** Candidates `[ns, candidateId]`, active for an hour. */
export async function seedCandidates(dataSource: DataSource, kind: BenchKind, rows: Array<[string, string]>): Promise<void> {
  const { now, later } = CLOCK[kind];
  await insertRows(
    dataSource,
    kind,
    `INSERT INTO ${CANDIDATE_TABLE} (ns, candidate_id, last_heartbeat_at, expires_at)`,
    rows,
    (p) => `(${p()}, ${p()}, ${now}, ${later})`,
  );
}

/** Leader rows `[ns, leaderId]`, term 1, lease valid for an hour. */
export async function seedLeaders(dataSource: DataSource, kind: BenchKind, rows: Array<[string, string]>): Promise<void> {
  const { now, later } = CLOCK[kind];
  await insertRows(
    dataSource,
    kind,
    `INSERT INTO ${LEADER_TABLE} (ns, leader_id, lease_expires_at, updated_at, term)`,
    rows,
    (p) => `(${p()}, ${p()}, ${later}, ${now}, 1)`,
  );
}

/**
 * The whole second `secondsAgo` seconds before the database clock's now, as each database stores
 * a slot (SQLite: the text the library writes, 'YYYY-MM-DD HH:MM:SS.SSS'), from the statement's
 * fourth parameter, `param(secondsAgo)`.
 */
const SECONDS_AGO: Record<BenchKind, { slot: string; param: (secondsAgo: number) => unknown }> = {
  postgres: { slot: "date_trunc('second', clock_timestamp()) - make_interval(secs => $4::int)", param: (s) => s },
  mariadb: { slot: 'UTC_TIMESTAMP() - INTERVAL ? SECOND', param: (s) => s },
  sqlite: { slot: "strftime('%Y-%m-%d %H:%M:%S', 'now', ?) || '.000'", param: (s) => `-${s} seconds` },
};

/**
 * One `done` run of schedule `name` in `ns`, its slot the whole second `secondsAgo` seconds ago by
 * the database clock: the newest slot a schedule recorded before its leader went away. A leader
 * that then schedules it with `catchUp: 'all'` finds every slot since due (the backlog).
 */
export async function seedDoneRun(dataSource: DataSource, kind: BenchKind, ns: string, name: string, secondsAgo: number): Promise<void> {
  const { now } = CLOCK[kind];
  const { slot, param } = SECONDS_AGO[kind];
  const p = (i: number) => (kind === 'postgres' ? `$${i}` : '?');
  await dataSource.query(
    `INSERT INTO ${RUN_TABLE} (ns, name, candidate_id, slot, state, attempt, term, started_at, finished_at, error)
VALUES (${p(1)}, ${p(2)}, ${p(3)}, ${slot}, 'done', 1, 1, ${now}, ${now}, NULL)`,
    [ns, name, 'bench-seed', param(secondsAgo)],
  );
}
