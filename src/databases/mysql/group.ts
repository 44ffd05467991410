import type { DbContext } from '../../db/context';
import { execute, inTransaction } from '../../db/session';
import type { GroupParts, GroupStatements } from '../contract/group';
import { groupContext } from './group/group-context';
import { electMysql } from './group/tick';
import { vacateMysql } from './group/vacate';

/**
 * The group tick on MySQL/MariaDB: one transaction, a constant number of statements per batch of
 * `GROUP_BATCH_SIZE` namespaces (the decision made in JavaScript by `decide`, on rows read under
 * their locks; `group/tick.ts`), and one transaction that vacates many leases (`group/vacate.ts`).
 * A wait for a lock on the caller's own live lease is bounded by `innodb_lock_wait_timeout` (1205)
 * on MySQL and by `max_statement_time` (1969) on MariaDB.
 */
export const mysqlGroup: GroupParts = {
  foldsVacates: true,
  boundedLockWaits: true,
  isLockTimeout(error: unknown): boolean {
    const inner = ((error as { driverError?: unknown } | null)?.driverError ?? error) as { errno?: unknown } | null;
    return Number(inner?.errno) === 1205 || Number(inner?.errno) === 1969;
  },
  statements: mysqlGroupStatements,
};

function mysqlGroupStatements(context: DbContext): GroupStatements {
  const gc = groupContext(context);
  const dataSource = context.dataSource;
  return {
    elect: (input, known, retries) => inTransaction(dataSource, undefined, (m) => electMysql(gc, m, input, known), retries),
    vacate: (namespaces, me, reason, unregister) => inTransaction(dataSource, undefined, (m) => vacateMysql(gc, m, namespaces, me, reason, unregister)),
    read: (statement) => execute(context, dataSource.manager, statement),
  };
}
