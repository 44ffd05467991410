import type { DataSource, EntityManager } from 'typeorm';
import { contextOf, DbContext } from '../db/context';
import { executeRaw, inOneStatement, Session } from '../db/session';
import type { SqlFragment } from '../db/sql';

/** Rows a DELETE reported: PostgreSQL answers `[rows, count]`, MySQL a result header. */
function affected(result: unknown): number {
  if (Array.isArray(result) && result.length === 2 && typeof result[1] === 'number') return result[1];
  const header = result as { affectedRows?: unknown } | undefined;
  if (header && typeof header.affectedRows === 'number') return header.affectedRows;
  throw new Error('gemstone-utils: the database did not report how many rows a prune deleted');
}

async function deleteWith(context: DbContext, manager: EntityManager, statement: SqlFragment): Promise<number> {
  return affected(await executeRaw(context, manager, statement));
}

/**
 * Runs one prune DELETE as one statement (in `session` if given) and returns the rows it
 * deleted, as the driver reports them: how the databases whose drivers report a DELETE's count
 * (PostgreSQL, MySQL/MariaDB) run a batch.
 */
export function deleteInOneStatement(dataSource: DataSource, session: Session | undefined, statement: SqlFragment): Promise<number> {
  const context = contextOf(dataSource);
  return inOneStatement(dataSource, session, (manager) => deleteWith(context, manager, statement));
}
