/** Opening the library on a benchmark database, as an application would. */
import { randomUUID } from 'crypto';
import { ElectionService, initDb } from 'gemstone-utils';
import type { DataSource, Logger, QueryRunner } from 'typeorm';
import { BenchTarget, dataSourceOptions } from './databases';

export async function openLibrary(target: BenchTarget, extra: Record<string, unknown> = {}): Promise<DataSource> {
  return initDb(dataSourceOptions(target, extra));
}

export function service(dataSource: DataSource, expireSeconds = 60): ElectionService {
  return new ElectionService(dataSource, { expireSeconds });
}

/** `count` fresh candidate ids, sorted (so the order is the same as `listCandidates`). */
export function candidateIds(count: number): string[] {
  return Array.from({ length: count }, () => randomUUID()).sort();
}

/** An explicit transaction start (`BEGIN IMMEDIATE` included). */
export const BEGIN = /^\s*(START\s+TRANSACTION|BEGIN)\b/i;
/** The end of a transaction (`ROLLBACK TO <savepoint>` is not one). */
export const END = /^\s*(COMMIT|END|ROLLBACK(?!\s+TO\b))\b/i;
/** A transaction's end that rolls it back. */
const ROLLBACK = /^\s*ROLLBACK\b/i;
/** Settings: they read or write no data and open no transaction. */
export const SETTING = /^\s*(SET(?!\s+STATEMENT\b)|SHOW|PRAGMA)\b/i;

/**
 * A TypeORM logger that counts what the library sends on ONE connection (the load suite gives
 * every DataSource it counts a single connection). Everything the library runs passes through
 * `logQuery` — TypeORM's own queries, the MySQL statements the library sends itself
 * (`runMysql`) and the SQLite transactions it runs itself — so nothing is guessed.
 *
 * Transactions, not statements: a transaction is counted once, when it starts — an explicit
 * `BEGIN` / `START TRANSACTION` / `BEGIN IMMEDIATE`, or any other statement but a setting sent
 * while no transaction is open (autocommit: the statement is its own transaction, as
 * PostgreSQL's `xact_commit` counts it). The statements inside a transaction, its `COMMIT` or
 * `ROLLBACK`, settings (`SET`, `SHOW`, `PRAGMA`) and a `BEGIN` that failed (SQLite answers
 * "database is locked" while another connection holds the write lock; the library retries) are
 * not transactions.
 *
 * Why the logger tracks the open transaction itself instead of asking the QueryRunner
 * (`isTransactionActive`): the library runs its SQLite transactions on the driver (better-sqlite3:
 * `BEGIN IMMEDIATE … COMMIT` in one synchronous step) and logs their statements without a
 * QueryRunner, so every statement of such a transaction looked like an autocommit one — the
 * old counter reported SQLite's 4-statement renewal as 4 "transactions" and its takeover as 6.
 * Why not the servers' own counters: they count per database (PostgreSQL's `pg_stat_database`,
 * published at most once a second) or per session without telling autocommit statements apart
 * (MariaDB's `Handler_commit` also counts every statement inside an explicit transaction:
 * 4 for a 3-statement one), and SQLite has none — none can say which tick a transaction belonged
 * to. They are the cross-checks in `suites/load.ts` instead (per renewal; MariaDB also per
 * elector over its window, by `explicitEnds`).
 *
 * How each transaction ended is counted too: `committed` (a `COMMIT` that did not fail, or an
 * autocommit statement that did not fail) and `rolledBack` (a `ROLLBACK`, a failed `COMMIT`, a
 * failed autocommit statement) — of the transactions counted since the last `reset()`, so that
 * `transactions = committed + rolledBack + openCounted` (a transaction open when read has not
 * ended yet). A failure is known from `logQueryError`, which TypeORM and the library
 * call after the statement, so `committed` counts a `COMMIT` when it is sent and takes it back if
 * it fails.
 */
export class CountingLogger implements Logger {
  statements = 0;
  transactions = 0;
  /** BEGINs that failed (SQLite: the write lock held elsewhere), retried by the library: no transaction. */
  failedBegins = 0;
  /** Statements that touched a candidate row: exactly one per `elect` (and per register). */
  candidateTouches = 0;
  /**
   * The most transactions started within one tick — between one candidate touch and the next,
   * so only whole ticks count (a tick cut by the start or end of the window is left out; totals
   * divided by touches would be off by one there).
   */
  maxTransactionsPerTick = 0;
  /** Transactions that ended committed (see the class comment). */
  committed = 0;
  /** Transactions that ended rolled back (see the class comment). */
  rolledBack = 0;
  /**
   * Explicit transactions ended (`COMMIT` or `ROLLBACK` statements sent while one was open) since
   * the logger was made — never reset: what MariaDB's session `Com_commit + Com_rollback` counts.
   */
  explicitEnds = 0;
  /** Candidate-row touches (ticks) since the logger was made — never reset. */
  touchesTotal = 0;
  #open = false;
  /** The open transaction started since the last reset (is among `transactions`). */
  #openCounted = false;
  /** The last END sent committed an open transaction (taken back if it fails). */
  #commitSent = false;
  #sinceTouch = 0;
  #sawTouch = false;

  logQuery(query: string, _parameters?: unknown[], queryRunner?: QueryRunner): void {
    this.statements++;
    if (BEGIN.test(query)) {
      this.#open = true;
      this.#openCounted = true;
      this.#started();
    } else if (END.test(query)) {
      if (this.#open) this.explicitEnds++;
      // How it ended counts only for a transaction counted since the last reset.
      const counted = this.#open && this.#openCounted;
      if (counted && ROLLBACK.test(query)) this.rolledBack++;
      else if (counted) this.committed++;
      this.#commitSent = counted && !ROLLBACK.test(query);
      this.#open = false;
    } else if (this.#autocommit(query, queryRunner)) {
      this.#started();
      this.committed++;
    }
    // The candidate upsert, or MariaDB's one-statement renewal (`SET STATEMENT … FOR UPDATE` of
    // the leader and candidate rows), which touches the candidate row without an INSERT.
    if (/INSERT INTO [`"]?gemstone_election_candidate|^\s*SET STATEMENT\b[\s\S]*\bUPDATE\b[\s\S]*gemstone_election_candidate/i.test(query)) {
      this.candidateTouches++;
      this.touchesTotal++;
      if (this.#sawTouch) this.maxTransactionsPerTick = Math.max(this.maxTransactionsPerTick, this.#sinceTouch);
      this.#sawTouch = true;
      this.#sinceTouch = 0;
    }
  }
  logQueryError(_error: string | Error, query?: string, _parameters?: unknown[], queryRunner?: QueryRunner): void {
    if (query === undefined) return;
    if (BEGIN.test(query)) {
      if (!this.#open) return;
      this.#open = false;
      this.#openCounted = false;
      this.transactions--;
      this.#sinceTouch--;
      this.failedBegins++;
    } else if (END.test(query)) {
      // A COMMIT that failed rolled its transaction back (counted as committed when sent).
      if (this.#commitSent) {
        this.#commitSent = false;
        this.committed--;
        this.rolledBack++;
      }
    } else if (this.#autocommit(query, queryRunner)) {
      this.committed--;
      this.rolledBack++;
    }
  }
  logQuerySlow(): void {}
  logSchemaBuild(): void {}
  logMigration(): void {}
  log(): void {}

  reset(): void {
    this.statements = 0;
    this.transactions = 0;
    this.failedBegins = 0;
    this.candidateTouches = 0;
    this.maxTransactionsPerTick = 0;
    this.committed = 0;
    this.rolledBack = 0;
    this.#sinceTouch = 0;
    this.#sawTouch = false;
    this.#openCounted = false;
    this.#commitSent = false;
  }

  /** 1 if a transaction counted since the last reset is still open (it has not ended yet), else 0. */
  get openCounted(): number {
    return this.#open && this.#openCounted ? 1 : 0;
  }

  /** A statement that is a transaction of its own: no transaction open, not a setting. */
  #autocommit(query: string, queryRunner?: QueryRunner): boolean {
    return !SETTING.test(query) && !BEGIN.test(query) && !END.test(query) && !this.#open && !queryRunner?.isTransactionActive;
  }

  #started(): void {
    this.transactions++;
    this.#sinceTouch++;
  }
}
