import { createEachTable } from '../../db/plugin-steps';
import type { DdlParts } from '../contract/ddl';
import { driverError } from '../dialect';
import { endImplicitTransaction } from './session';

/** MySQL: ER_LOCK_WAIT_TIMEOUT, also what a metadata-lock wait past `lock_wait_timeout` raises. */
const MYSQL_LOCK_WAIT_TIMEOUT = 1205;

/** MySQL/MariaDB: DDL commits implicitly; metadata locks keep concurrent CREATE TABLE IF NOT EXISTS safe. */
export const mysqlDdl: DdlParts = {
  isolated: (_dataSource, work) => work(),
  /** With autocommit off the lookups opened a transaction; the connection goes back to the pool without it. */
  settle: (dataSource, runner) => endImplicitTransaction(dataSource, runner),
  isLockTimeout: (error) => Number(driverError(error).errno) === MYSQL_LOCK_WAIT_TIMEOUT,
  /** No transaction (DDL commits implicitly); TypeORM puts its indexes into the CREATE TABLE. */
  createPluginTables: (work) => createEachTable(work, false),
};
