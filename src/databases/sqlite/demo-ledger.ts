import { execute, inTransaction } from '../../db/session';
import { sql } from '../../db/sql';
import type { DemoLedgerParts } from '../contract/demo-ledger';

/** SQLite: the demo ledger (see `cli/demo/ledger.ts`). */
export const sqliteDemoLedger: DemoLedgerParts = {
  types: { id: 'INTEGER PRIMARY KEY AUTOINCREMENT', instant: 'datetime', tableOptions: '' },
  /** Transactional DDL; the write lock serializes concurrent demo processes by itself. */
  async createTables(dataSource, context, statements) {
    await inTransaction(dataSource, undefined, async (m) => {
      for (const statement of statements) await execute(context, m, statement);
    });
  },
  async insertReturningId(context, m, insert) {
    await execute(context, m, insert);
    const [row] = await execute(context, m, sql`SELECT last_insert_rowid() AS id`);
    return Number(row?.id);
  },
};
