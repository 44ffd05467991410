import { raw, sql } from '../../db/sql';
import { Dialect, driverError, toDate } from '../dialect';

/** PostgreSQL: the server clock, instants, upserts, locks and error classes (see {@link Dialect}). */
export const postgresDialect: Dialect = {
  name: 'postgres',
  placeholders: 'dollar',
  // now() is the transaction start: a caller's long transaction would freeze the lease clock.
  now: raw('clock_timestamp()'),
  nowPlus: (seconds) => sql`(clock_timestamp() + make_interval(secs => ${seconds}))`,
  instant: (column) => raw(`CAST(EXTRACT(EPOCH FROM ${column}) * 1000 AS double precision)`),
  parseInstant: (value) => (value === null || value === undefined ? null : toDate(Number(value))),
  // to_timestamp rounds to whole microseconds, so the division's binary error never shows.
  instantOf: (epochMs) => sql`to_timestamp(CAST(${epochMs} AS double precision) / 1000)`,
  insertIfAbsent: (keys) => raw(`ON CONFLICT (${keys.join(', ')}) DO NOTHING`),
  upsert: (keys, columns) =>
    raw(`ON CONFLICT (${keys.join(', ')}) DO UPDATE SET ${columns.map((c) => `${c} = EXCLUDED.${c}`).join(', ')}`),
  rowLocks: true,
  notifications: true,
  bool: (value) => value,
  schemas: true,
  limit: (count, offset = 0) => sql`LIMIT ${count} OFFSET ${offset}`,
  isRetryableConflict: (error) => ['40P01', '40001'].includes(String(driverError(error).code)),
  isTransactionAbort: (error) => ['40P01', '40001'].includes(String(driverError(error).code)),
  isUniqueViolation: (error) => driverError(error).code === '23505',
};
