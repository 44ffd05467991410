import type { DataSource, Logger } from 'typeorm';
import { DemotionReason, LeaderElectorGroup, LeaderElectorGroupOptions, Lease } from 'gemstone-utils';
import { query } from '../support/databases';

export { waitFor } from '../elector/helpers';

/** A namespace prefix no other test uses, and `n` namespaces under it. */
export function namespaces(prefix: string, n: number): string[] {
  return Array.from({ length: n }, (_, i) => `${prefix}-${String(i).padStart(5, '0')}`);
}

export type GroupEvent =
  | { kind: 'elected'; ns: string; term: number }
  | { kind: 'demoted'; ns: string; term: number; reason: DemotionReason }
  | { kind: 'started'; ns: string; term: number }
  | { kind: 'stopped'; ns: string; term: number };

/** A group whose callbacks and events are recorded, and whose errors are collected. */
export function recordingGroup(dataSource: DataSource, options: LeaderElectorGroupOptions) {
  const events: GroupEvent[] = [];
  const errors: Error[] = [];
  const group = new LeaderElectorGroup({
    dataSource,
    onStartedLeading: (lease: Lease) => void events.push({ kind: 'started', ns: lease.ns, term: lease.term }),
    onStoppedLeading: (lease: Lease) => void events.push({ kind: 'stopped', ns: lease.ns, term: lease.term }),
    ...options,
  });
  group.on('elected', (lease) => events.push({ kind: 'elected', ns: lease.ns, term: lease.term }));
  group.on('demoted', (lease, reason) => events.push({ kind: 'demoted', ns: lease.ns, term: lease.term, reason }));
  group.on('error', (error) => errors.push(error));
  return { group, events, errors };
}

/** Leader rows of the given namespaces as the database says now: ns → live leader id (or null). */
export async function liveLeaders(dataSource: DataSource, names: readonly string[]): Promise<Map<string, string | null>> {
  const now =
    dataSource.options.type === 'postgres'
      ? 'clock_timestamp()'
      : dataSource.options.type === 'mysql'
        ? 'UTC_TIMESTAMP(6)'
        : "strftime('%Y-%m-%d %H:%M:%f', 'now')";
  const rows = await query<{ ns: string; leader: string | null }>(
    dataSource,
    `SELECT ns, CASE WHEN lease_expires_at > ${now} THEN leader_id END AS leader FROM gemstone_election_leader`,
  );
  const wanted = new Set(names);
  const out = new Map<string, string | null>();
  for (const ns of names) out.set(ns, null);
  for (const row of rows) if (wanted.has(row.ns)) out.set(row.ns, row.leader ?? null);
  return out;
}

/** How many of `names` each candidate leads by the database. */
export async function countsByLeader(dataSource: DataSource, names: readonly string[]): Promise<Map<string | null, number>> {
  const counts = new Map<string | null, number>();
  for (const leader of (await liveLeaders(dataSource, names)).values()) counts.set(leader, (counts.get(leader) ?? 0) + 1);
  return counts;
}

/**
 * A TypeORM logger counting transactions: a BEGIN/START TRANSACTION, or a statement outside one.
 * Preludes (isolation level, its look-up), the LISTEN probe and pruning are not counted.
 */
export class TransactionCounter implements Logger {
  transactions = 0;
  statements = 0;
  #inTransaction = false;
  #pruning = false;

  logQuery(q: string): void {
    const text = q.trim();
    if (/^(SET TRANSACTION ISOLATION LEVEL|SHOW transaction_isolation)/i.test(text)) return;
    if (/^SELECT pg_notify\(CAST\(\$1 AS text\), CAST\(\$2 AS text\)\) AS probe, inet_server_addr\(\)/.test(text)) return;
    // The loop's pruning: a transaction of its own (or a statement), not a tick's.
    if (/^DELETE FROM \S*gemstone_election_(candidate|history)\S* WHERE /is.test(text) && /(expires_at|ended_at) </i.test(text)) {
      if (this.#inTransaction) this.transactions--;
      this.#pruning = this.#inTransaction;
      return;
    }
    if (/^SELECT changes\(\)/i.test(text)) return;
    if (/^(START TRANSACTION|BEGIN)/i.test(text)) {
      this.transactions++;
      this.#inTransaction = true;
      return;
    }
    if (/^(COMMIT|ROLLBACK)/i.test(text)) {
      this.#inTransaction = false;
      this.#pruning = false;
      return;
    }
    if (this.#pruning) return;
    this.statements++;
    if (!this.#inTransaction) this.transactions++;
  }
  logQueryError(_error: unknown, q: string): void {
    if (/^(START TRANSACTION|BEGIN)/i.test(q.trim())) {
      this.transactions--;
      this.#inTransaction = false;
    }
  }
  logQuerySlow(): void {}
  logSchemaBuild(): void {}
  logMigration(): void {}
  log(): void {}
  reset(): void {
    this.transactions = 0;
    this.statements = 0;
  }
}
