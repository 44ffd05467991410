import type { DataSource } from 'typeorm';

/** What `initDb` needs from one database around connecting (see `db/init-db.ts`). */
export interface SetupParts {
  /** The TypeORM `type`s of this database (those `initDb` accepts; checked before TypeORM looks for a driver). */
  readonly types: readonly string[];
  /** Why TypeORM may lack the driver of `type` (appended to the error), or ''. */
  missingDriverHint(type: string): string;
  /** Whether `initialize()` failed only because another process held the database: then it is retried. */
  busyOnInitialize(error: unknown): boolean;
  /** Prepares the freshly connected DataSource (connection settings the library relies on). */
  afterInitialize(dataSource: DataSource): Promise<void>;
}
