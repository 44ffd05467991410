import type { DbContext } from '../../db/context';
import type { GroupParts, GroupStatements } from '../contract/group';
import { groupContext } from './group/group-context';
import { electSqlite } from './group/tick';
import { vacateSqlite } from './group/vacate';
import { runProgram } from './run-program';

/**
 * The group tick on SQLite: one program (see `run-program.ts`) that commits whole or changes
 * nothing, its later statements skipped by `changes()` rather than by JavaScript between them
 * (`group/tick.ts`). SQLite has no row locks: the program waits for the database's write lock (its
 * `waitMs`), so `lockWaitMs` does not apply and a tick is never rerun; the leases given up are
 * vacated by a program of their own, not folded into the tick's (`group/vacate.ts`).
 */
export const sqliteGroup: GroupParts = {
  foldsVacates: false,
  boundedLockWaits: false,
  isLockTimeout: () => false,
  statements: sqliteGroupStatements,
};

function sqliteGroupStatements(context: DbContext): GroupStatements {
  const gc = groupContext(context);
  const dataSource = context.dataSource;
  return {
    elect: (input) => electSqlite(gc, input),
    vacate: (namespaces, me, reason, unregister) => vacateSqlite(gc, namespaces, me, reason, unregister),
    read: async (statement) => (await runProgram(dataSource, [statement], { transaction: false }))[0] ?? [],
  };
}
