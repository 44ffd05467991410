/*
 * Defaults the package exports that concern one database, kept in this leaf so that the shared
 * entry points can export them without importing a database folder (the folders import them from
 * here).
 */

/** How long a SQLite connection waits for another process's write lock before SQLITE_BUSY. */
export const DEFAULT_SQLITE_BUSY_TIMEOUT_MS = 5000;

/**
 * SQLite: how long (milliseconds) a library call without `session` waits for a transaction
 * someone else holds open on the DataSource's shared connection before it throws
 * `SqliteTransactionOpenError`. Default 5000.
 */
export const DEFAULT_SQLITE_WAIT_MS = 5000;
