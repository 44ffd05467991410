import { sql } from '../../db/sql';
import { deleteInOneStatement } from '../../election/prune-delete';
import type { PruneParts } from '../contract/prune';

/** PostgreSQL: pruning (see `election/prune.ts`). */
export const postgresPrune: PruneParts = {
  cutoff: (retention) => sql`(clock_timestamp() - make_interval(secs => ${retention}))`,
  /** DELETE has no LIMIT: the batch is the keys a limited subquery selects. */
  deleteBatch(dataSource, session, { table, column, key, before, limit, also = sql`` }) {
    const statement = sql`DELETE FROM ${table} WHERE (${key}) IN (SELECT ${key} FROM ${table} WHERE ${column} < ${before}${also} LIMIT ${limit})`;
    return deleteInOneStatement(dataSource, session, statement);
  },
};
