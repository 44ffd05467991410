import type { BetterSqliteDatabase, BetterSqliteStatement, Rows } from './driver';

/** How many prepared statements are kept per connection (the library sends a few dozen texts). */
const STATEMENT_CACHE_SIZE = 128;

/**
 * Prepared statements per better-sqlite3 connection, by SQL text. Preparing costs more than
 * running a small statement, and the library's texts never change between calls (values are
 * parameters), so a renewal would otherwise pay the compilation of every statement each tick.
 * SQLite recompiles a cached statement by itself when the schema changes.
 */
const statementCaches = new WeakMap<BetterSqliteDatabase, Map<string, BetterSqliteStatement>>();

/** Runs a statement; a statement that returns rows (a reader) must be read with `all`. */
export function execute(statement: BetterSqliteStatement, values: readonly unknown[]): Rows {
  return (statement.reader ? statement.all(...values) : (statement.run(...values), [])) as Rows;
}

/** The prepared statement of `text` on `db`, from a cache of the last {@link STATEMENT_CACHE_SIZE} texts. */
function prepared(db: BetterSqliteDatabase, text: string): BetterSqliteStatement {
  let cache = statementCaches.get(db);
  if (!cache) statementCaches.set(db, (cache = new Map()));
  let statement = cache.get(text);
  if (statement) {
    // Most recently used last: the first entry is the one to evict.
    cache.delete(text);
  } else {
    statement = db.prepare(text);
    if (cache.size >= STATEMENT_CACHE_SIZE) cache.delete(cache.keys().next().value as string);
  }
  cache.set(text, statement);
  return statement;
}

/** Prepared statements by key (see `SyncStep` in `sync-step.ts`), per connection. */
const keyedStatements = new WeakMap<BetterSqliteDatabase, Map<string, { text: string; statement: BetterSqliteStatement }>>();

export function preparedByKey(db: BetterSqliteDatabase, key: string, text: string): BetterSqliteStatement {
  // No key: by text, in the bounded cache.
  if (key === '') return prepared(db, text);
  let cache = keyedStatements.get(db);
  if (!cache) keyedStatements.set(db, (cache = new Map()));
  const entry = cache.get(key);
  // Comparing is cheaper than hashing a fresh text; a key reused for another text is re-prepared.
  if (entry && entry.text === text) return entry.statement;
  const statement = db.prepare(text);
  cache.set(key, { text, statement });
  return statement;
}
