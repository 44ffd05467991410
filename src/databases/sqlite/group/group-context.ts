import type { DataSource } from 'typeorm';
import type { DbContext } from '../../../db/context';
import { sql, SqlFragment } from '../../../db/sql';
import { ElectionTables, electionTables } from '../../../election/tables';
import { isBetterSqlite } from '../driver';
import { runProgram } from '../run-program';
import { runSyncStep } from '../sync-step';

/*
 * What the group programs of one DataSource are built from (its tables), the pieces of SQL every
 * one of them uses (the namespaces as one JSON parameter, the clock read once per statement), and
 * how a program runs: one transaction that commits whole or changes nothing.
 */

export interface GroupContext {
  readonly t: ElectionTables;
  readonly dataSource: DataSource;
}

export function groupContext(context: DbContext): GroupContext {
  return { t: electionTables(context), dataSource: context.dataSource };
}

/** `IN (…)` of the namespaces, ONE parameter, a JSON array read by json_each: no table to fill row by row. */
export function inInput(nsJson: string): SqlFragment {
  return sql`IN (SELECT value FROM json_each(${nsJson}))`;
}

/** The clock once per statement (an uncorrelated subquery is evaluated once), not once per row. */
export function nowOnce({ t: { d } }: GroupContext): SqlFragment {
  return sql`(SELECT ${d.now})`;
}

/** {@link nowOnce} as text, for the pieces written as raw SQL. */
export function nowOnceText({ t: { d } }: GroupContext): string {
  return `(SELECT ${d.now.text})`;
}

/**
 * Runs a group program as one transaction that commits whole or changes nothing: on
 * better-sqlite3 as one synchronous step (prepared statements kept per connection under `key`,
 * another connection's lock briefly waited for, as the single elect does), on sqlite3 as one
 * `exec` by `runProgram`.
 */
export function runGroupProgram(gc: GroupContext, key: string, statements: readonly SqlFragment[]): Promise<Record<string, unknown>[][]> {
  if (isBetterSqlite(gc.dataSource)) {
    return runSyncStep(gc.dataSource, (step) => statements.map((statement, i) => step.run(`${key}:${i}`, statement)), { transaction: true });
  }
  return runProgram(gc.dataSource, statements, { transaction: true });
}
