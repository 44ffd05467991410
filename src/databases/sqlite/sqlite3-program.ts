import { render, SqlFragment } from '../../db/sql';
import type { Log, Rows, Sqlite3Database } from './driver';

/** The connection's busy_timeout, read through its queue (what the program restores). */
export function readBusyTimeout(db: Sqlite3Database): Promise<number> {
  return new Promise((resolve, reject) =>
    db.all('PRAGMA busy_timeout', [], (error, rows) => {
      if (error) return reject(error);
      const value = Number(Object.values((rows[0] ?? {}) as Record<string, unknown>)[0]);
      resolve(Number.isSafeInteger(value) && value > 0 ? value : 0);
    }),
  );
}

/**
 * sqlite3, statements that only read: queued at once, each on its own (nothing to keep together).
 * busy_timeout is 0 meanwhile (see {@link queueAtomic}).
 */
export function queueReads(db: Sqlite3Database, rendered: readonly { text: string; values: readonly unknown[] }[], busyTimeout: number, log: Log): Promise<Rows[]> {
  const results: Rows[] = rendered.map(() => []);
  let failure: unknown;
  return new Promise<Rows[]>((resolve, reject) => {
    db.serialize();
    db.serialize(() => {
      db.all('PRAGMA busy_timeout = 0', [], ignore);
      rendered.forEach(({ text, values }, i) => {
        log.sent(text, values);
        db.all(text, [...values], (error, rows) => {
          if (error) log.error(error, text, values);
          if (error) failure ??= error;
          else results[i] = rows as Rows;
        });
      });
      db.all(`PRAGMA busy_timeout = ${Math.floor(busyTimeout)}`, [], () => (failure === undefined ? resolve(results) : reject(failure)));
    });
  });
}

const ignore = () => undefined;

/** Values per temporary table of a program's arguments (one column each): far below SQLite's limits on columns and on variables. */
const ARGUMENTS_PER_TABLE = 500;

/** Numbers the sqlite3 programs of this process: their temporary tables are never reused, so never read stale. */
let programs = 0;

/** Marks, inside the library's own transaction, that the transaction is the library's (see {@link queueAtomic}). */
const PROGRAM_SAVEPOINT = 'gemstone_program';

/** Whether a statement returns rows (its rows are kept in a temporary table, see {@link queueAtomic}). */
function returnsRows(text: string): boolean {
  return /^\s*(SELECT|WITH)\b/i.test(text);
}

/**
 * sqlite3: runs `statements` as ONE transaction that either commits whole or changes nothing, and
 * returns each statement's rows.
 *
 * node-sqlite3 runs every queued statement whatever became of the one before it: a program queued
 * as separate statements after a BEGIN that failed (the database busy) ran them one by one outside
 * any transaction. So the transaction is ONE `exec` — `BEGIN IMMEDIATE; …; COMMIT` — and
 * `sqlite3_exec` stops at the first statement that fails: after a failed BEGIN nothing runs, and
 * after a failure further on (a statement, COMMIT busy) nothing more does. The ROLLBACK queued right
 * behind it then ends the transaction if it is still open — but only the library's: it starts with
 * `ROLLBACK TO` the savepoint the program set after its BEGIN, which fails, ending the `exec`,
 * when the BEGIN did not run (or COMMIT did).
 *
 * `exec` binds no values and returns no rows, and values are never written into SQL text: they are
 * bound by the statements queued before it, which create temporary tables of one row holding them
 * (each table created whole or not at all), and each value in the program is a subquery of its
 * table (`+` keeps it without affinity, as a bound value is). A program whose tables are missing
 * fails at its first reference to them. Each statement that returns rows creates a temporary table
 * of them instead, read after COMMIT (within the transaction, so created only if it commits).
 * Every temporary table belongs to this program alone and is dropped at its end.
 *
 * All of it is queued in one turn, the connection in serialized mode (statements run in the order
 * sent: in its default mode node-sqlite3 may start a statement before the previous one finished,
 * so the library switches the connection to serialized mode for good; one connection runs one
 * statement at a time anyway, so the application loses nothing). Nothing the application sends
 * can run inside the transaction, and the transaction never runs inside one of the application's:
 * its BEGIN would fail.
 *
 * busy_timeout is 0 meanwhile: a wait for another connection's lock would occupy one of libuv's few
 * threadpool threads, and enough of them waiting starve the holder's COMMIT of a thread (every
 * DataSource on the file in this process stalls for busy_timeout). A busy database is retried
 * asynchronously instead; the application's value is restored last.
 */
export function queueAtomic(db: Sqlite3Database, statements: readonly SqlFragment[], busyTimeout: number, log: Log): Promise<Rows[]> {
  const program = ++programs;
  const argumentTable = (chunk: number) => `gemstone_program_${program}_arguments_${chunk}`;
  const rowsTable = (index: number) => `gemstone_program_${program}_rows_${index}`;
  const values: unknown[] = [];
  const body: string[] = [];
  const logged: { text: string; values: readonly unknown[] }[] = [];
  const reads: number[] = [];
  statements.forEach((statement, index) => {
    const offset = values.length;
    const { text, values: own } = render(statement, (position) => {
      const at = offset + position - 1;
      return `(SELECT +a${(at % ARGUMENTS_PER_TABLE) + 1} FROM temp.${argumentTable(Math.floor(at / ARGUMENTS_PER_TABLE))})`;
    });
    values.push(...own);
    logged.push(render(statement, 'question'));
    if (returnsRows(text)) {
      reads.push(index);
      body.push(`CREATE TEMP TABLE ${rowsTable(index)} AS ${text}`);
    } else {
      if (/\bRETURNING\b/i.test(text)) throw new Error('gemstone-utils: a sqlite3 program cannot return rows from a write (RETURNING); read them with a SELECT');
      body.push(text);
    }
  });
  const argumentTables: string[] = [];
  const fillArguments: { text: string; values: unknown[] }[] = [];
  for (let from = 0; from < values.length; from += ARGUMENTS_PER_TABLE) {
    const chunk = values.slice(from, from + ARGUMENTS_PER_TABLE);
    const table = argumentTable(argumentTables.length);
    argumentTables.push(table);
    fillArguments.push({ text: `CREATE TEMP TABLE ${table} AS SELECT ${chunk.map((_, i) => `? AS a${i + 1}`).join(', ')}`, values: chunk });
  }
  const transaction = ['BEGIN IMMEDIATE', `SAVEPOINT ${PROGRAM_SAVEPOINT}`, ...body, 'COMMIT'].join(';\n');
  const loggedProgram = ['BEGIN IMMEDIATE', ...logged.map((l) => l.text), 'COMMIT'].join(';\n');

  const results: Rows[] = statements.map(() => []);
  let failure: unknown;
  let committed = false;
  log.sent('BEGIN IMMEDIATE', []);
  for (const { text, values: own } of logged) log.sent(text, own);
  log.sent('COMMIT', []);
  return new Promise<Rows[]>((resolve, reject) => {
    db.serialize();
    db.serialize(() => {
      db.all('PRAGMA busy_timeout = 0', [], ignore);
      for (const fill of fillArguments) {
        db.all(fill.text, fill.values, (error) => {
          if (!error) return;
          log.error(error, fill.text, fill.values);
          failure ??= error;
        });
      }
      db.exec(transaction, (error) => {
        if (!error) committed = true;
        else {
          log.error(error, loggedProgram, values);
          failure ??= error;
        }
      });
      db.exec(`ROLLBACK TO ${PROGRAM_SAVEPOINT};\nROLLBACK`, ignore);
      for (const index of reads) {
        db.all(`SELECT * FROM temp.${rowsTable(index)}`, [], (error, rows) => {
          if (!committed) return;
          if (error) failure ??= error;
          else results[index] = rows as Rows;
        });
      }
      const tables = [...argumentTables, ...reads.map(rowsTable)];
      if (tables.length > 0) db.exec(tables.map((table) => `DROP TABLE IF EXISTS temp.${table}`).join(';\n'), ignore);
      db.all(`PRAGMA busy_timeout = ${Math.floor(busyTimeout)}`, [], () => (failure === undefined ? resolve(results) : reject(failure)));
    });
  });
}
