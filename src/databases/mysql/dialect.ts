import { raw, sql } from '../../db/sql';
import { Dialect, driverError, toDate } from '../dialect';

/** MySQL and MariaDB: the server clock, instants, upserts, locks and error classes (see {@link Dialect}). */
export const mysqlDialect: Dialect = {
  name: 'mysql',
  placeholders: 'question',
  // UTC_TIMESTAMP ignores the session time_zone; NOW() would follow it.
  now: raw('UTC_TIMESTAMP(6)'),
  // Whole microseconds: INTERVAL with a fractional SECOND value is not portable across versions.
  nowPlus: (seconds) => sql`(UTC_TIMESTAMP(6) + INTERVAL ${Math.round(seconds * 1e6)} MICROSECOND)`,
  // Plain arithmetic on DATETIME: no time zone conversion anywhere (UNIX_TIMESTAMP would apply one).
  instant: (column) => raw(`TIMESTAMPDIFF(MICROSECOND, '1970-01-01 00:00:00', ${column})`),
  parseInstant: (value) => (value === null || value === undefined ? null : toDate(Number(value) / 1000)),
  // The inverse of `instant`: integer arithmetic on a DATETIME(6), no time zone anywhere.
  instantOf: (epochMs) => sql`TIMESTAMPADD(MICROSECOND, CAST(${epochMs} AS SIGNED) * 1000, CAST('1970-01-01 00:00:00' AS DATETIME(6)))`,
  // Updating the key to itself is a no-op that, unlike INSERT IGNORE, hides no other error.
  insertIfAbsent: (keys) => raw(`ON DUPLICATE KEY UPDATE ${keys[0]} = ${keys[0]}`),
  upsert: (_keys, columns) => raw(`ON DUPLICATE KEY UPDATE ${columns.map((c) => `${c} = VALUES(${c})`).join(', ')}`),
  rowLocks: true,
  notifications: false,
  // MySQL 8 refuses a LIMIT parameter sent as a double (mysql2's type for every number) in a
  // server-side prepared statement; as text it is taken.
  bool: (value) => (value ? 1 : 0),
  schemas: false,
  limit: (count, offset = 0) => sql`LIMIT ${String(count)} OFFSET ${String(offset)}`,
  // 1213: deadlock; 1205: lock wait timeout (the transaction is rolled back only partially: retry
  // whole); 1020: MariaDB's "record has changed since last read" under innodb_snapshot_isolation.
  isRetryableConflict: (error) => [1213, 1205, 1020].includes(Number(driverError(error).errno)),
  isTransactionAbort: (error) => [1213, 1020].includes(Number(driverError(error).errno)),
  isUniqueViolation: (error) => Number(driverError(error).errno) === 1062,
};
