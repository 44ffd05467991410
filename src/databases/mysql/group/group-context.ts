import type { EntityManager } from 'typeorm';
import type { DbContext } from '../../../db/context';
import { execute } from '../../../db/session';
import type { SqlFragment } from '../../../db/sql';
import { ElectionTables, electionTables } from '../../../election/tables';

/*
 * What the group statements of one DataSource are built from (its tables), and how each runs:
 * one statement at a time, on the tick's transaction.
 */

export interface GroupContext {
  readonly context: DbContext;
  readonly t: ElectionTables;
}

export function groupContext(context: DbContext): GroupContext {
  return { context, t: electionTables(context) };
}

/** Runs one statement of the group on the transaction `m`. */
export function run(gc: GroupContext, m: EntityManager, statement: SqlFragment): Promise<Record<string, unknown>[]> {
  return execute(gc.context, m, statement);
}
