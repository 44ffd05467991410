import { execute } from '../../db/session';
import { sql } from '../../db/sql';
import type { DemoLedgerParts } from '../contract/demo-ledger';

/** MySQL/MariaDB: the demo ledger (see `cli/demo/ledger.ts`). */
export const mysqlDemoLedger: DemoLedgerParts = {
  types: { id: 'bigint NOT NULL AUTO_INCREMENT PRIMARY KEY', instant: 'datetime(6)', tableOptions: ' ENGINE=InnoDB' },
  /** DDL commits implicitly: no transaction; metadata locks make racing CREATE TABLE IF NOT EXISTS safe. */
  async createTables(dataSource, context, statements) {
    for (const statement of statements) await execute(context, dataSource.manager, statement);
  },
  /** LAST_INSERT_ID() is per connection: the insert's, as both run on `m`. */
  async insertReturningId(context, m, insert) {
    await execute(context, m, insert);
    const [row] = await execute(context, m, sql`SELECT LAST_INSERT_ID() AS id`);
    return Number(row?.id);
  },
};
