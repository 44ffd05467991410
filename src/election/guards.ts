import type { DataSource, EntityManager, MigrationInterface, QueryRunner } from 'typeorm';
import { contextOf, DbContext } from '../db/context';
import { inTransaction } from '../db/session';
import type { Session } from '../db/session-type';
import { partsOf } from '../databases/parts';
import type { GuardedTable, GuardParts, GuardTarget } from '../databases/contract/guards';
import { ValidationError } from '../errors';
import { CANDIDATE_TABLE, HISTORY_TABLE, LEADER_TABLE, PROOF_TABLE, RUN_TABLE } from './tables';
import { checkCallOptions, checkStoredName } from './validate';

/*
 * Guarded tables: the database itself refuses INSERT, UPDATE, DELETE (and TRUNCATE) on a guarded
 * table unless the writing transaction proved, in that transaction, the live leadership of the
 * table's namespace. The proof is the fence's (`fence.ts`: `assertLeader`, a schedule run's
 * transaction), recorded by the statement that takes the fence's lock, so that a passing fence
 * and a proof are one thing; the trigger re-checks it against the leader row when the write
 * happens. What each database does is its folder's `guard.ts` (`contract/guards.ts`).
 */

export type { GuardedTable } from '../databases/contract/guards';
export { asGuardRefusal } from '../db/guard-refusal';

/** The options of `guardTable`. */
export interface GuardTableOptions {
  /** The namespace whose leadership a write must prove. Default `"default"`. */
  ns?: string;
  /** PostgreSQL: the table's schema. Default: the table as the connection's `search_path` finds it. */
  schema?: string;
  /** Run the DDL inside the caller's transaction. Default: a transaction of its own. */
  session?: Session;
}

/** The options of `unguardTable` and `guardedTables`. */
export interface UnguardTableOptions {
  /** PostgreSQL: the table's schema. Default: as the connection's `search_path` finds it. */
  schema?: string;
  /** Run inside the caller's transaction. Default: a transaction of its own. */
  session?: Session;
}

/** The longest table or schema name every supported database keeps intact. */
const MAX_IDENTIFIER_LENGTH = 63;

/** The guard parts of a DataSource's database, or the error that says where guards exist. */
export function guardsOf(context: DbContext, parameter: string): GuardParts {
  const guards = partsOf(context).guards;
  if (!guards) {
    throw new ValidationError(
      parameter,
      `cannot be guarded on ${partsOf(context).name}: guarded tables are built on PostgreSQL, MySQL/MariaDB and SQLite only; ` +
        'on this database fence leader-only writes with assertLeader in their transaction',
    );
  }
  return guards;
}

/** The checked table name and options of a guard call, before the DataSource is known (nothing is sent before they pass). */
export function checkGuardNames(table: unknown, options: unknown, extra: readonly string[]): { target: GuardTarget; ns: string; session: Session | undefined } {
  const name = checkStoredName(table, 'table', MAX_IDENTIFIER_LENGTH);
  const checked = checkCallOptions(options, ['schema', ...extra]);
  const schema = checked['schema'] === undefined ? undefined : checkStoredName(checked['schema'], 'options.schema', MAX_IDENTIFIER_LENGTH);
  return { target: { table: name, ...(schema === undefined ? {} : { schema }) }, ns: checked.ns, session: checked.session };
}

/** {@link checkGuardNames}, and what the DataSource decides: a schema only where the database has them, never the election's own tables. */
export function checkGuardTarget(
  context: DbContext,
  table: unknown,
  options: unknown,
  extra: readonly string[],
): { target: GuardTarget; ns: string; session: Session | undefined } {
  const checked = checkGuardNames(table, options, extra);
  checkGuardOn(context, checked.target);
  return checked;
}

function checkGuardOn(context: DbContext, target: GuardTarget): void {
  if (target.schema !== undefined && !context.dialect.schemas) throw new ValidationError('options.schema', `is for PostgreSQL only (this is ${context.dialect.name})`);
  const own = [CANDIDATE_TABLE, LEADER_TABLE, HISTORY_TABLE, RUN_TABLE, PROOF_TABLE].map((t) => context.tableName(t));
  if (own.includes(target.table)) throw new ValidationError('table', `is one of the election's own tables (${target.table}): the library writes them without proofs`);
}

/**
 * The guard of `table` as a migration, for applications whose DDL runs only through migrations:
 * `up` guards it (as `ElectionService.guardTable`), `down` removes the guard. Names are checked
 * now; the database when it runs.
 */
export function guardTableMigration(table: string, options: { ns?: string; schema?: string }): MigrationInterface {
  const { target, ns } = checkGuardNames(table, options, []);
  const suffix = target.schema === undefined ? target.table : `${target.schema}.${target.table}`;
  return Object.freeze({
    name: `GemstoneGuard ${suffix}`,
    async up(queryRunner: QueryRunner): Promise<void> {
      const context = contextOf(queryRunner.connection);
      checkGuardOn(context, target);
      await guardTable(queryRunner.connection, queryRunner, target, ns);
    },
    async down(queryRunner: QueryRunner): Promise<void> {
      const context = contextOf(queryRunner.connection);
      checkGuardOn(context, target);
      await unguardTable(queryRunner.connection, queryRunner, target);
    },
  });
}

/** Guards `target` for `ns` (idempotent: guarding again replaces the guard, for another namespace too). */
export async function guardTable(dataSource: DataSource, session: Session | undefined, target: GuardTarget, ns: string): Promise<void> {
  const context = contextOf(dataSource);
  const guards = guardsOf(context, 'table');
  await inTransaction(dataSource, session, async (m: EntityManager) => {
    await guards.guard(context, m, target, ns);
  });
}

/** Removes the guard of `target`; whether it had one. */
export async function unguardTable(dataSource: DataSource, session: Session | undefined, target: GuardTarget): Promise<boolean> {
  const context = contextOf(dataSource);
  const guards = guardsOf(context, 'table');
  return inTransaction(dataSource, session, (m) => guards.unguard(context, m, target));
}

/** The tables this installation guards (none where the database has no guards). */
export async function guardedTables(dataSource: DataSource, session: Session | undefined): Promise<GuardedTable[]> {
  const context = contextOf(dataSource);
  const guards = partsOf(context).guards;
  if (!guards) return [];
  return inTransaction(dataSource, session, (m) => guards.list(context, m));
}
