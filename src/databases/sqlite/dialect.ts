import { raw, sql } from '../../db/sql';
import { Dialect, driverError } from '../dialect';

const SQLITE_INSTANT = "strftime('%Y-%m-%d %H:%M:%f', 'now')";

/** SQLite (better-sqlite3 and sqlite3): the clock, instants, upserts, its write lock and error classes (see {@link Dialect}). */
export const sqliteDialect: Dialect = {
  name: 'sqlite',
  placeholders: 'question',
  // The same UTC text form TypeORM writes for datetime columns, so text comparison is time order.
  now: raw(SQLITE_INSTANT),
  // '+-600.000 seconds' is no modifier (NULL): a negative amount carries its own sign.
  nowPlus: (seconds) => sql`strftime('%Y-%m-%d %H:%M:%f', 'now', ${`${seconds < 0 ? '' : '+'}${seconds.toFixed(3)} seconds`})`,
  instant: (column) => raw(column),
  parseInstant: (value) => {
    if (value === null || value === undefined) return null;
    const text = String(value);
    return new Date(/Z|[+-]\d\d:?\d\d$/.test(text) ? text : `${text.replace(' ', 'T')}Z`);
  },
  // The text `now` writes ('YYYY-MM-DD HH:MM:SS.SSS', UTC), made from the ISO form: exact, and
  // equal text for an equal instant (a key compares as text here).
  instantOf: (epochMs) => sql`${new Date(epochMs).toISOString().slice(0, 23).replace('T', ' ')}`,
  insertIfAbsent: (keys) => raw(`ON CONFLICT (${keys.join(', ')}) DO NOTHING`),
  upsert: (keys, columns) =>
    raw(`ON CONFLICT (${keys.join(', ')}) DO UPDATE SET ${columns.map((c) => `${c} = excluded.${c}`).join(', ')}`),
  rowLocks: false,
  notifications: false,
  bool: (value) => (value ? 1 : 0),
  schemas: false,
  limit: (count, offset = 0) => sql`LIMIT ${count} OFFSET ${offset}`,
  isRetryableConflict: (error) => {
    const { code, message } = driverError(error);
    // Another connection holds the write lock past busy_timeout, or (same connection, another
    // QueryRunner) the application has a transaction open: both end by themselves, so wait.
    return (
      /^SQLITE_(BUSY|LOCKED)/.test(String(code)) ||
      /SQLITE_BUSY|database is locked|cannot start a transaction within a transaction/i.test(String(message))
    );
  },
  // SQLite transactions are serializable by construction; busy errors are retried, never aborts.
  isTransactionAbort: () => false,
  isUniqueViolation: (error) => /^SQLITE_CONSTRAINT/.test(String(driverError(error).code)),
};
