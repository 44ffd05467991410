import { contextOf } from '../../db/context';
import { execute, runnerOf } from '../../db/session';
import { sql } from '../../db/sql';
import type { PruneParts } from '../contract/prune';
import { runProgram } from './run-program';

/** SQLite: pruning (see `election/prune.ts`). */
export const sqlitePrune: PruneParts = {
  cutoff: (retention) => sql`strftime('%Y-%m-%d %H:%M:%f', 'now', ${`-${retention.toFixed(3)} seconds`})`,
  /** The count is `changes()`, read in the same transaction right after the DELETE. */
  async deleteBatch(dataSource, session, { table, column, before, limit, also = sql`` }) {
    const context = contextOf(dataSource);
    const remove = sql`DELETE FROM ${table} WHERE rowid IN (SELECT rowid FROM ${table} WHERE ${column} < ${before}${also} LIMIT ${limit})`;
    const count = sql`SELECT changes() AS n`;
    const runner = runnerOf(session);
    if (runner?.isTransactionActive) {
      await execute(context, runner.manager, remove);
      const [row] = await execute<{ n: unknown }>(context, runner.manager, count);
      return Number(row?.n ?? 0);
    }
    // Its own short transaction on the shared connection, never nested in an application's.
    const [, rows] = await runProgram(dataSource, [remove, count], { transaction: true });
    return Number(rows?.[0]?.n ?? 0);
  },
};
