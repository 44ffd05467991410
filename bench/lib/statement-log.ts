/**
 * A TypeORM logger that keeps what the library sends on ONE connection as text, for the schedules
 * suite: the statements between two ticks (compared between two electors statement by statement),
 * and the transactions that touched the runs table (a slot's claim, finish, record or the job's
 * `run.transaction`). Transactions are told apart as `CountingLogger` tells them (lib/library.ts:
 * an explicit BEGIN, or a statement outside any transaction); the same rules, the same patterns.
 */
import { RUN_TABLE } from 'gemstone-utils';
import type { Logger } from 'typeorm';
import { BEGIN, END, SETTING } from './library';

const RUNS = new RegExp(`\\b${RUN_TABLE}\\b`, 'i');
/** The background pruning of old rows (at most once a minute per DataSource, never inside a tick). */
const PRUNE = /^\s*DELETE\s+FROM\s+\S*gemstone_election_(candidate|history|run)\b/i;
/** A schedule's look-back at its runs when a leadership starts (the newest slot and the clock in one row). */
const LOOK_BACK = /MAX\(r\.slot\)/i;

/** What was sent since the last {@link StatementLog.take}. */
export interface SentWindow {
  /** Every statement that did not fail to start a transaction, whitespace folded, in order. */
  statements: string[];
  /** Of them, statements on the runs table (pruning aside). */
  runStatements: number;
  /** Whether pruning ran in this window (its statements are among `statements`). */
  pruned: boolean;
  /** BEGINs refused while another connection held the write lock (SQLite), retried by the library: not sent. */
  busyRetries: number;
}

export class StatementLog implements Logger {
  /** Transactions that touched the runs table (pruning aside), since the logger was made. */
  runTransactions = 0;
  /** Look-backs of schedules at their runs, since the logger was made. */
  lookBacks = 0;
  #window: SentWindow = StatementLog.#empty();
  #open = false;
  #touchedRuns = false;

  static #empty(): SentWindow {
    return { statements: [], runStatements: 0, pruned: false, busyRetries: 0 };
  }

  /** What was sent since the last call (or since the logger was made). */
  take(): SentWindow {
    const window = this.#window;
    this.#window = StatementLog.#empty();
    return window;
  }

  logQuery(query: string): void {
    const w = this.#window;
    w.statements.push(query.replace(/\s+/g, ' ').trim());
    const prune = PRUNE.test(query);
    if (prune) w.pruned = true;
    const onRuns = !prune && RUNS.test(query);
    if (onRuns) w.runStatements++;
    if (LOOK_BACK.test(query)) this.lookBacks++;
    if (BEGIN.test(query)) {
      this.#open = true;
      this.#touchedRuns = false;
    } else if (END.test(query)) {
      if (this.#open && this.#touchedRuns) this.runTransactions++;
      this.#open = false;
    } else if (this.#open) {
      this.#touchedRuns ||= onRuns;
    } else if (onRuns && !SETTING.test(query)) {
      this.runTransactions++; // autocommit: a transaction of its own
    }
  }

  logQueryError(_error: string | Error, query?: string): void {
    if (query === undefined || !BEGIN.test(query) || !this.#open) return;
    // SQLite's BEGIN IMMEDIATE refused ("database is locked"): no transaction, retried.
    this.#open = false;
    const w = this.#window;
    const at = w.statements.lastIndexOf(query.replace(/\s+/g, ' ').trim());
    if (at >= 0) w.statements.splice(at, 1);
    w.busyRetries++;
  }

  logQuerySlow(): void {}
  logSchemaBuild(): void {}
  logMigration(): void {}
  log(): void {}
}
