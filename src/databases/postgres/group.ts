import type { DbContext } from '../../db/context';
import { execute, inOneStatement, inTransaction } from '../../db/session';
import type { GroupParts, GroupStatements } from '../contract/group';
import { postgresSession } from './connection';
import { createRows } from './group/create-rows';
import { groupContext } from './group/group-context';
import { electPostgres } from './group/tick';
import { vacatePostgres } from './group/vacate';

/**
 * The group tick on PostgreSQL: ONE statement (`group/tick.ts`; after one that creates the leader
 * rows of namespaces not seen yet, `group/create-rows.ts`; its CTEs vacate the leases given up,
 * lock, decide, write, open and close the terms and announce each change by NOTIFY), and one
 * statement that vacates many leases (`group/vacate.ts`). A wait for a lock on the caller's own
 * live lease is bounded by `lock_timeout` (55P03), set for the statement's transaction only
 * (`group/lock-timeout.ts`).
 */
export const postgresGroup: GroupParts = {
  foldsVacates: true,
  boundedLockWaits: true,
  isLockTimeout(error: unknown): boolean {
    const inner = ((error as { driverError?: unknown } | null)?.driverError ?? error) as { code?: unknown } | null;
    return inner?.code === '55P03';
  },
  statements: postgresGroupStatements,
};

function postgresGroupStatements(context: DbContext): GroupStatements {
  const gc = groupContext(context);
  const dataSource = context.dataSource;

  return {
    // One statement once every row exists; a tick with namespaces not seen yet creates their rows
    // first, in the same transaction (see group/create-rows.ts).
    elect: async (input, known, retries) => {
      const fresh = input.namespaces.filter((ns) => !known.has(ns));
      // The one-statement path needs what a DataSource's connections are (learnt once, by one
      // statement of its own): learnt on this tick, which sends more than one statement anyway,
      // so that no later tick sends two.
      if (fresh.length > 0) await postgresSession.outsideIsReadCommitted(context);
      const outcome =
        fresh.length === 0
          ? await inOneStatement(dataSource, undefined, (m) => electPostgres(gc, m, input), retries)
          : await inTransaction(
              dataSource,
              undefined,
              async (m) => {
                await createRows(gc, m, fresh, input.lockWaitMs);
                return electPostgres(gc, m, input);
              },
              retries,
            );
      for (const ns of fresh) known.add(ns);
      return outcome;
    },
    vacate: (namespaces, me, reason, unregister) => inOneStatement(dataSource, undefined, (m) => vacatePostgres(gc, m, namespaces, me, reason, unregister)),
    read: (statement) => execute(context, dataSource.manager, statement),
  };
}
