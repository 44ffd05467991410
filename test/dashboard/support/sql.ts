/** Test-owned SQL that arranges history behind the library's back, per database (instants by the database clock). */
import type { DataSource } from 'typeorm';
import { query } from '../../support/databases';

/**
 * The database clock `seconds` ago, in the stored form of an instant; with `wholeMs`, cut to whole
 * milliseconds, as the library writes a slot (the clocks of PostgreSQL and MariaDB count µs).
 */
export function agoSql(dataSource: DataSource, seconds: number, wholeMs = false): string {
  const s = Math.round(seconds);
  switch (dataSource.options.type) {
    case 'postgres':
      return wholeMs ? `date_trunc('milliseconds', clock_timestamp() - interval '${s} seconds')` : `(clock_timestamp() - interval '${s} seconds')`;
    case 'mysql':
    case 'mariadb':
      return `(UTC_TIMESTAMP(${wholeMs ? 3 : 6}) - INTERVAL ${s} SECOND)`;
    default:
      return `strftime('%Y-%m-%d %H:%M:%f', 'now', '-${s} seconds')`;
  }
}

/** Moves a term of the history back in time: acquired `acquiredAgo` seconds ago, ended `endedAgo` ago. */
export async function ageTerm(dataSource: DataSource, ns: string, term: number, acquiredAgo: number, endedAgo: number): Promise<void> {
  await query(dataSource, `UPDATE gemstone_election_history SET acquired_at = ${agoSql(dataSource, acquiredAgo)}, ended_at = ${agoSql(dataSource, endedAgo)} WHERE ns = ? AND term = ?`, [ns, term]);
}

/** Ended terms 1..count of a namespace, a second each, the newest ending now (as if pruning never ran). */
export async function insertTerms(dataSource: DataSource, ns: string, leaderId: string, count: number): Promise<void> {
  for (let first = 1; first <= count; first += 200) {
    const terms = Array.from({ length: Math.min(200, count - first + 1) }, (_, i) => first + i);
    const rows = terms.map((term) => `(?, ?, ?, ${agoSql(dataSource, count - term + 1)}, ${agoSql(dataSource, count - term)}, 'expired')`).join(', ');
    await query(dataSource, `INSERT INTO gemstone_election_history (ns, term, leader_id, acquired_at, ended_at, end_reason) VALUES ${rows}`, terms.flatMap((term) => [ns, term, leaderId]));
  }
}
