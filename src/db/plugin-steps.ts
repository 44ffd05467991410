import type { QueryRunner } from 'typeorm';
import type { PluginTablesWork } from '../databases/contract/ddl';

/*
 * The two ways the databases create missing plugin tables (`db/plugin-tables.ts`), for their
 * `ddl.createPluginTables`: all under one lock, or table by table with a racing installer's
 * "already exists" answered by checking again.
 */

/** Runs `work` in a transaction of the runner; rolls back (if still open) and rethrows on failure. */
export async function inRunnerTransaction(runner: QueryRunner, work: () => Promise<void>): Promise<void> {
  await runner.startTransaction();
  try {
    await work();
    await runner.commitTransaction();
  } catch (error) {
    if (runner.isTransactionActive) await runner.rollbackTransaction().catch(() => undefined);
    throw error;
  }
}

/**
 * Creates each missing table on its own (in a transaction of its own when `eachInTransaction`,
 * so a racing installer never sees half of it). A failure is fine when the table is there now:
 * another process created it first.
 */
export async function createEachTable(work: PluginTablesWork, eachInTransaction: boolean): Promise<void> {
  const { runner } = work;
  for (const [key, metadata] of work.missing) {
    try {
      if (eachInTransaction) await inRunnerTransaction(runner, () => work.create(key));
      else await work.create(key);
    } catch (error) {
      if (!(await runner.hasTable(metadata.tablePath))) throw error;
    }
  }
}
