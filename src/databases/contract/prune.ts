import type { DataSource, EntityManager, QueryRunner } from 'typeorm';
import type { RawSql, SqlFragment } from '../../db/sql';

/** One batch of a prune: rows of `table` whose instant `column` is before `before`, at most `limit`, ordered by `key`. */
export interface PruneBatch {
  readonly table: RawSql;
  readonly column: RawSql;
  /** The primary key's columns, comma-separated. */
  readonly key: RawSql;
  /** The cutoff instant, from {@link PruneParts.cutoff}. */
  readonly before: SqlFragment;
  readonly limit: RawSql;
  /** A further condition every deleted row meets, appended as it is (` AND …`), or nothing. */
  readonly also?: SqlFragment;
}

/** How one database deletes expired candidate rows and ended terms (see `election/prune.ts`). */
export interface PruneParts {
  /** The database-clock instant `retention` seconds ago, comparable with the stored instants. */
  cutoff(retention: number): SqlFragment;
  /**
   * Deletes one batch, in `session` (the library's `Session`, spelled out here: `db/session.ts`
   * is no leaf) if given, else in a statement (or short transaction) of its own; returns the rows deleted.
   */
  deleteBatch(dataSource: DataSource, session: QueryRunner | EntityManager | undefined, batch: PruneBatch): Promise<number>;
}
