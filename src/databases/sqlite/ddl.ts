import { createEachTable } from '../../db/plugin-steps';
import type { DdlParts } from '../contract/ddl';
import { outsideTransactions } from './waiters';

/** SQLite: one shared connection per DataSource, transactional DDL, one writer at a time. */
export const sqliteDdl: DdlParts = {
  /** Every runner shares the one connection: wait until no transaction is open on it. */
  isolated: (dataSource, work) => outsideTransactions(dataSource, work),
  settle: async () => undefined,
  /** No lock wait of SQLite's is a DDL timeout to retry (a busy database fails after busy_timeout). */
  isLockTimeout: () => false,
  /** One table with its indexes is all-or-nothing, so a racing installer never sees half of it. */
  createPluginTables: (work) => createEachTable(work, true),
};
