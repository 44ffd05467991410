import type { DataSource, EntityManager } from 'typeorm';
import type { DbContext } from '../../db/context';
import type { SqlFragment } from '../../db/sql';

/** The column types and table options of the demo's tables on one database. */
export interface DemoTableTypes {
  /** The ledger's generated integer key, with its PRIMARY KEY. */
  readonly id: string;
  /** An instant column's type. */
  readonly instant: string;
  /** Appended after a CREATE TABLE's closing parenthesis ('' for none). */
  readonly tableOptions: string;
}

/** What the demo's ledger (`cli/demo/ledger.ts`) does differently on one database. */
export interface DemoLedgerParts {
  readonly types: DemoTableTypes;
  /** Runs the demo tables' CREATE statements, safe when several demo processes start at once. */
  createTables(dataSource: DataSource, context: DbContext, statements: readonly SqlFragment[]): Promise<void>;
  /** Runs an INSERT of one row with a generated `id` and returns that id. */
  insertReturningId(context: DbContext, manager: EntityManager, insert: SqlFragment): Promise<number>;
}
