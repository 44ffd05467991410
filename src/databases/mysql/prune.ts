import { sql } from '../../db/sql';
import { deleteInOneStatement } from '../../election/prune-delete';
import type { PruneParts } from '../contract/prune';

/** MySQL/MariaDB: pruning (see `election/prune.ts`). */
export const mysqlPrune: PruneParts = {
  cutoff: (retention) => sql`(UTC_TIMESTAMP(6) - INTERVAL ${Math.round(retention * 1e6)} MICROSECOND)`,
  deleteBatch(dataSource, session, { table, column, key, before, limit, also = sql`` }) {
    // Primary-key order makes the LIMIT deterministic (safe for statement-based replication).
    const statement = sql`DELETE FROM ${table} WHERE ${column} < ${before}${also} ORDER BY ${key} LIMIT ${limit}`;
    return deleteInOneStatement(dataSource, session, statement);
  },
};
