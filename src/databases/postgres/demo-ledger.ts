import { execute, inTransaction } from '../../db/session';
import { sql } from '../../db/sql';
import type { DemoLedgerParts } from '../contract/demo-ledger';

/** Serializes concurrent demo table creation on PostgreSQL (racing CREATE TABLE IF NOT EXISTS can fail there). */
const PG_DEMO_DDL_LOCK_KEY = 7_455_301_122;

/** PostgreSQL: the demo ledger (see `cli/demo/ledger.ts`). */
export const postgresDemoLedger: DemoLedgerParts = {
  types: { id: 'bigserial PRIMARY KEY', instant: 'timestamptz', tableOptions: '' },
  async createTables(dataSource, context, statements) {
    await inTransaction(dataSource, undefined, async (m) => {
      await execute(context, m, sql`SELECT pg_advisory_xact_lock(${PG_DEMO_DDL_LOCK_KEY})`);
      for (const statement of statements) await execute(context, m, statement);
    });
  },
  async insertReturningId(context, m, insert) {
    const [row] = await execute(context, m, sql`${insert} RETURNING id`);
    return Number(row?.id);
  },
};
