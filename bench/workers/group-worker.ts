/**
 * A worker process running one LeaderElectorGroup over `count` namespaces, as a service leading
 * many jobs would (`suites/group.ts` forks three of them, kills one, stops the rest). Reports
 * over IPC, with wall-clock timestamps (all processes are on the same host, so they share the
 * clock):
 * ready(candidateId, held) · leases(batch of elected/demoted per namespace) · tick(duration,
 * transactions) · error(message) · stopping(at) · stopped(at).
 *
 * Every statement the library sends passes through {@link TransactionLogger}, so the number of
 * transactions between two `'tick'` events is counted, not assumed.
 */
import 'reflect-metadata';
import { initDb, LeaderElectorGroup } from 'gemstone-utils';
import type { Logger, QueryRunner } from 'typeorm';
import { BenchTarget, dataSourceOptions, singleConnection } from '../lib/databases';
import { GROUP_RERUN_ERRNOS, isGroupRerunError } from '../lib/group-reruns';

export interface GroupWorkerConfig {
  target: BenchTarget;
  /** Namespaces are `${prefix}${index}`, index 0..count-1 zero-padded (see {@link groupNamespaces}). */
  prefix: string;
  count: number;
  expireSeconds: number;
  intervalMs: number;
  balance: boolean;
}

/** One lease change as a worker saw it: [kind, ns, term, at, reason]. */
export type LeaseEvent = ['elected' | 'demoted', string, number, number, string?];

export interface GroupTickReport {
  type: 'tick';
  at: number;
  /** The tick's own measure of its transaction (monotonic clock), ms. */
  durationMs: number;
  /** Election transactions started since the previous tick (pruning excluded, see below). */
  transactions: number;
  /** Transactions of the library's background pruning of expired rows since the previous tick. */
  pruneTransactions: number;
  /** BEGINs refused because another process held the write lock (SQLite), retried by the library: no transaction. */
  busyRetries: number;
  /**
   * Of `transactions`, those rolled back after one of {@link GROUP_RERUN_ERRNOS} (MySQL/MariaDB: a
   * bounded lock wait ran out, a deadlock): the tick runs again at once in a second transaction,
   * without waiting for a lock; the first changed nothing (the group store's documented rerun).
   */
  lockWaitReruns: number;
  statements: number;
  /** Leases held after the tick. */
  held: number;
  /** Leaderships that ended with this tick (lost, or handed over for balance). */
  lost: number;
  /** When the tick's window held more than one transaction: what was sent in it. */
  statementsSent?: string[];
  failed: boolean;
}

export type GroupWorkerMessage =
  | { type: 'ready'; candidateId: string; held: number; at: number }
  | { type: 'leases'; events: LeaseEvent[] }
  | GroupTickReport
  | { type: 'error'; message: string; phase?: string }
  | { type: 'stopping'; at: number }
  | { type: 'stopped'; at: number };

export function groupNamespaces(prefix: string, count: number): string[] {
  const width = String(Math.max(0, count - 1)).length;
  return Array.from({ length: count }, (_, i) => `${prefix}${String(i).padStart(width, '0')}`);
}

const PRUNE = /^\s*DELETE\s+FROM\s+\S*gemstone_election_(candidate|history)/i;

/**
 * Counts transactions from what the ORM sends: an explicit BEGIN / START TRANSACTION, or a
 * statement outside any transaction (autocommit: it is its own transaction). Settings (SET,
 * SHOW, PRAGMA) are not transactions. A transaction whose first statement deletes expired
 * candidate or history rows is the library's background pruning (at most once a minute, never
 * inside the election's transaction): counted apart, so a tick's count is the election's alone.
 * The worker holds one connection, so statements of two transactions never interleave here.
 */
class TransactionLogger implements Logger {
  statements = 0;
  transactions = 0;
  pruneTransactions = 0;
  busyRetries = 0;
  lockWaitReruns = 0;
  /** The statements since the last tick (their first words), to show what a tick of more than one transaction ran. */
  window: string[] = [];
  #open = false;
  #classify = false;
  /** The open transaction failed with one of {@link GROUP_RERUN_ERRNOS}. */
  #lockWaitFailed = false;

  logQuery(query: string, _parameters?: unknown[], queryRunner?: QueryRunner): void {
    this.statements++;
    if (this.window.length < 40) this.window.push(query.replace(/\s+/g, ' ').trim().slice(0, 70));
    if (/^\s*(START\s+TRANSACTION|BEGIN)\b/i.test(query)) {
      this.transactions++;
      this.#open = true;
      this.#classify = true;
      this.#lockWaitFailed = false;
      return;
    }
    if (/^\s*(COMMIT|ROLLBACK|END)\b/i.test(query)) {
      if (this.#lockWaitFailed && /^\s*ROLLBACK\b/i.test(query)) this.lockWaitReruns++;
      this.#open = false;
      this.#classify = false;
      this.#lockWaitFailed = false;
      return;
    }
    if (/^\s*(SET|SHOW|PRAGMA)\b/i.test(query)) return;
    const prune = PRUNE.test(query);
    if (this.#open || queryRunner?.isTransactionActive) {
      if (this.#classify && prune) {
        this.transactions--;
        this.pruneTransactions++;
      }
      this.#classify = false;
      return;
    }
    if (prune) this.pruneTransactions++;
    else this.transactions++;
  }
  /**
   * A BEGIN that failed started no transaction: on SQLite, `BEGIN IMMEDIATE` answers "database is
   * locked" while another process holds the write lock, and the library retries it. Counted as a
   * busy retry instead.
   */
  logQueryError(error: string | Error, query?: string): void {
    const message = String(error instanceof Error ? error.message : error);
    if (this.window.length < 40) this.window.push(`ERROR ${message.slice(0, 60)}`);
    if (this.#open && isGroupRerunError(error)) this.#lockWaitFailed = true;
    if (query !== undefined && /^\s*(START\s+TRANSACTION|BEGIN)\b/i.test(query) && this.#open) {
      this.transactions--;
      this.busyRetries++;
      this.#open = false;
      this.#classify = false;
    }
  }
  logQuerySlow(): void {}
  logSchemaBuild(): void {}
  logMigration(): void {}
  log(): void {}
}

const send = (message: GroupWorkerMessage) => process.send?.(message);

async function main(): Promise<void> {
  const config = JSON.parse(process.argv[2] ?? '') as GroupWorkerConfig;
  const logger = new TransactionLogger();
  const dataSource = await initDb(dataSourceOptions(config.target, { ...singleConnection(config.target.kind), logger, logging: true }), {
    createTables: false,
  });
  const group = new LeaderElectorGroup({
    dataSource,
    namespaces: groupNamespaces(config.prefix, config.count),
    expireSeconds: config.expireSeconds,
    intervalMs: config.intervalMs,
    balance: config.balance,
  });

  // Lease changes of one tick arrive together: sent as one message once the tick's callbacks ran.
  let batch: LeaseEvent[] = [];
  const flush = () => {
    if (batch.length) send({ type: 'leases', events: batch });
    batch = [];
  };
  const push = (event: LeaseEvent) => {
    if (batch.length === 0) setImmediate(flush);
    batch.push(event);
  };
  group.on('elected', (lease) => push(['elected', lease.ns, lease.term, Date.now()]));
  group.on('demoted', (lease, reason) => push(['demoted', lease.ns, lease.term, Date.now(), String(reason)]));
  group.on('error', (error: Error & { phase?: string }) => send({ type: 'error', message: error.message, phase: error.phase }));

  let reporting = false;
  let seen = { statements: 0, transactions: 0, pruneTransactions: 0, busyRetries: 0, lockWaitReruns: 0 };
  const sinceLastTick = () => {
    const now = {
      statements: logger.statements,
      transactions: logger.transactions,
      pruneTransactions: logger.pruneTransactions,
      busyRetries: logger.busyRetries,
      lockWaitReruns: logger.lockWaitReruns,
    };
    const delta = {
      statements: now.statements - seen.statements,
      transactions: now.transactions - seen.transactions,
      pruneTransactions: now.pruneTransactions - seen.pruneTransactions,
      busyRetries: now.busyRetries - seen.busyRetries,
      lockWaitReruns: now.lockWaitReruns - seen.lockWaitReruns,
    };
    seen = now;
    const window = logger.window;
    logger.window = [];
    return { ...delta, ...(delta.transactions > 1 ? { statementsSent: window } : {}) };
  };
  group.on('tick', (tick) => {
    const delta = sinceLastTick();
    if (!reporting) return;
    flush(); // lease events first: the parent reads a tick as "after these changes"
    send({ type: 'tick', at: Date.now(), durationMs: tick.durationSeconds * 1000, ...delta, held: tick.held, lost: tick.lost, failed: tick.error !== null });
  });

  process.on('message', (message: { type: string }) => {
    if (message.type !== 'stop') return;
    reporting = false;
    send({ type: 'stopping', at: Date.now() });
    group
      .stop()
      .then(() => {
        flush();
        send({ type: 'stopped', at: Date.now() });
      })
      .catch((error: Error) => send({ type: 'error', message: `stop: ${error.message}` }))
      .finally(() => dataSource.destroy().finally(() => process.disconnect?.()));
  });
  await group.start();
  flush();
  sinceLastTick(); // start() registered and ran the first tick: counting begins after it
  reporting = true;
  send({ type: 'ready', candidateId: group.candidateId, held: group.leases.size, at: Date.now() });
}

main().catch((error: Error) => {
  send({ type: 'error', message: `start: ${error.stack ?? error.message}` });
  process.exitCode = 1;
  process.disconnect?.();
});
