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

/**
 * A TypeORM logger that counts what the library sends. Everything the ORM runs passes through
 * `logQuery` with its QueryRunner, so nothing is guessed: a transaction is an explicit
 * START/BEGIN, or a statement run outside one (autocommit: the statement is its own transaction).
 */
export class CountingLogger implements Logger {
  statements = 0;
  transactions = 0;
  /** Statements that touched a candidate row: exactly one per `elect` (and per register). */
  candidateTouches = 0;
  /**
   * The most transactions started within one tick — between one candidate touch and the next,
   * so only whole ticks count (a tick cut by the start or end of the window is left out; totals
   * divided by touches would be off by one there).
   */
  maxTransactionsPerTick = 0;
  #sinceTouch = 0;
  #sawTouch = false;

  logQuery(query: string, _parameters?: unknown[], queryRunner?: QueryRunner): void {
    this.statements++;
    const startsTransaction =
      /^\s*(START TRANSACTION|BEGIN)/i.test(query) || (!queryRunner?.isTransactionActive && !/^\s*(COMMIT|ROLLBACK)/i.test(query));
    if (startsTransaction) {
      this.transactions++;
      this.#sinceTouch++;
    }
    if (/INSERT INTO [`"]?gemstone_election_candidate/i.test(query)) {
      this.candidateTouches++;
      if (this.#sawTouch) this.maxTransactionsPerTick = Math.max(this.maxTransactionsPerTick, this.#sinceTouch);
      this.#sawTouch = true;
      this.#sinceTouch = 0;
    }
  }
  logQueryError(): void {}
  logQuerySlow(): void {}
  logSchemaBuild(): void {}
  logMigration(): void {}
  log(): void {}

  reset(): void {
    this.statements = 0;
    this.transactions = 0;
    this.candidateTouches = 0;
    this.maxTransactionsPerTick = 0;
    this.#sinceTouch = 0;
    this.#sawTouch = false;
  }
}
