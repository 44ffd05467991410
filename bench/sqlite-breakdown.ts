/**
 * `npm run bench:sqlite-breakdown`: where a SQLite (better-sqlite3) renewal spends its time, the
 * library's `elect` beside the baseline's (`lib/baseline.ts`), on one scratch file in WAL mode.
 *
 * - The whole call, both taking turns in blocks of 1,000 calls (what the hot path's ratio sees).
 * - Each statement one renewal sends, captured through a TypeORM logger (the library) or taken
 *   from the baseline's texts, replayed on a second connection: one `BEGIN IMMEDIATE … COMMIT`
 *   holding the first k statements, for k = 0, 1, 2, …; a statement's cost is what adding it
 *   added (its pages written at COMMIT included, as in the real call).
 * - The library's three busy-wait settings around each step (`PRAGMA busy_timeout` read, set and
 *   restored; not logged: they are not statements of the call).
 * - The rest: the whole call less its statements (JavaScript: validation, dispatch, decision,
 *   parsing the clock, promises).
 * - The candidate upsert on a copy of the table without `IDX_…_ns_expires_at`: what that index
 *   costs both sides.
 *
 * Microseconds per call, the median of 5 rounds; the machine's noise moves both sides alike.
 */
import * as fs from 'fs';
import * as os from 'os';
import * as path from 'path';
import { randomUUID } from 'crypto';
import { ElectionService, initDb } from 'gemstone-utils';
import type { Logger } from 'typeorm';
import { openRaw, SQLITE_BASELINE } from './lib/baseline';

const ROUNDS = 5;
const CALLS = 1_000;
const STATEMENT_RUNS = 20_000;
const EXPIRE = 60;

interface Statement {
  run(...params: unknown[]): unknown;
  all(...params: unknown[]): unknown[];
  readonly reader: boolean;
}
interface Database {
  prepare(text: string): Statement;
  exec(text: string): void;
  close(): void;
}
type DatabaseConstructor = new (file: string, options?: { timeout: number }) => Database;

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
}

function micros(since: bigint, count: number): number {
  return Number(process.hrtime.bigint() - since) / 1_000 / count;
}

/** What one call logged: statement texts and their positional parameters. */
class Capture implements Logger {
  on = false;
  readonly sent: Array<{ text: string; values: unknown[] }> = [];
  logQuery(text: string, values?: unknown[]): void {
    if (this.on) this.sent.push({ text, values: values ?? [] });
  }
  logQueryError(): void {}
  logQuerySlow(): void {}
  logSchemaBuild(): void {}
  logMigration(): void {}
  log(): void {}
}

function removeFile(file: string): void {
  for (const suffix of ['', '-wal', '-shm', '-journal']) fs.rmSync(file + suffix, { force: true });
}

async function main(): Promise<void> {
  const Sqlite = require('better-sqlite3') as DatabaseConstructor;
  const file = path.join(os.tmpdir(), `gem_breakdown_${process.pid}.sqlite`);
  removeFile(file);
  const capture = new Capture();
  const dataSource = await initDb({ type: 'better-sqlite3', database: file, enableWAL: true, timeout: 5000, logger: capture });
  const raw = await openRaw({ kind: 'sqlite', url: `sqlite:${file}` });
  const second = new Sqlite(file, { timeout: 5000 });
  try {
    const election = new ElectionService(dataSource, { expireSeconds: EXPIRE });
    const [leader, follower] = [randomUUID(), randomUUID()];
    for (const ns of ['library', 'baseline']) {
      await election.registerCandidate(follower, { ns });
      await election.elect(leader, { ns });
    }
    capture.on = true;
    await election.elect(leader, { ns: 'library' });
    capture.on = false;
    const librarySent = capture.sent.filter(({ text }) => !/^\s*(BEGIN|COMMIT)\b/i.test(text));

    // The whole call, taking turns.
    const whole = { library: [] as number[], baseline: [] as number[] };
    const calls = {
      library: () => election.elect(leader, { ns: 'library' }),
      baseline: () => raw.elect('baseline', leader, EXPIRE),
    };
    for (const side of ['library', 'baseline'] as const) for (let i = 0; i < CALLS; i++) await calls[side]();
    for (let round = 0; round < ROUNDS; round++) {
      for (const side of ['library', 'baseline'] as const) {
        const since = process.hrtime.bigint();
        for (let i = 0; i < CALLS; i++) await calls[side]();
        whole[side].push(micros(since, CALLS));
      }
    }

    // The statements replayed on the second connection: a transaction of the first k of them.
    const begin = second.prepare('BEGIN IMMEDIATE');
    const commit = second.prepare('COMMIT');
    const timedTransaction = (work: () => void): number => {
      const once = () => {
        begin.run();
        work();
        commit.run();
      };
      for (let i = 0; i < 2_000; i++) once();
      const rounds: number[] = [];
      for (let round = 0; round < ROUNDS; round++) {
        const since = process.hrtime.bigint();
        for (let i = 0; i < STATEMENT_RUNS; i++) once();
        rounds.push(micros(since, STATEMENT_RUNS));
      }
      return median(rounds);
    };
    const transaction = timedTransaction(() => undefined);
    const shortName = (text: string) => text.replace(/\s+/g, ' ').slice(0, 60);
    /** Each statement's name and the time it added to the transaction of those before it. */
    const increments = (statements: Array<{ name: string; text: string; values: unknown[] | Record<string, unknown> }>) => {
      const prepared = statements.map(({ text, values }) => ({ statement: second.prepare(text), args: Array.isArray(values) ? values : [values] }));
      let before = transaction;
      return statements.map(({ name }, k) => {
        const prefix = prepared.slice(0, k + 1);
        const total = timedTransaction(() => {
          for (const { statement, args } of prefix) {
            if (statement.reader) statement.all(...args);
            else statement.run(...args);
          }
        });
        const us = total - before;
        before = total;
        return { name, us };
      });
    };
    const libraryStatements = increments(librarySent.map(({ text, values }) => ({ name: shortName(text), text, values })));
    const named = { ns: 'baseline', id: leader, later: `+${EXPIRE.toFixed(3)} seconds` };
    // The renewing leader's heldByOther finds nothing, so the lease upsert runs.
    const baselineStatements = increments((['heldByOther', 'lease', 'touch'] as const).map((key) => ({ name: `baseline ${key}`, text: SQLITE_BASELINE[key], values: named })));
    const readSetting = second.prepare('PRAGMA busy_timeout');
    const setShort = second.prepare('PRAGMA busy_timeout = 250');
    const restore = second.prepare('PRAGMA busy_timeout = 5000');
    const settings = timedTransaction(() => (readSetting.all(), setShort.run(), restore.run())) - transaction;

    // The candidate upsert without the (ns, expires_at) index, on a copy of the table.
    second.exec(`CREATE TABLE breakdown_candidate AS SELECT * FROM gemstone_election_candidate;
CREATE UNIQUE INDEX breakdown_candidate_pk ON breakdown_candidate (ns, candidate_id);`);
    const touchUnindexed = SQLITE_BASELINE.touch.replace('gemstone_election_candidate', 'breakdown_candidate');
    const [unindexed] = increments([{ name: 'touch without the index', text: touchUnindexed, values: named }]);

    const wholeLibrary = median(whole.library);
    const wholeBaseline = median(whole.baseline);
    const sum = (rows: { us: number }[]) => rows.reduce((total, row) => total + row.us, 0);
    const libraryRest = wholeLibrary - sum(libraryStatements) - settings - transaction;
    const baselineRest = wholeBaseline - sum(baselineStatements) - transaction;
    const f = (value: number) => value.toFixed(1);
    const lines = [
      `SQLite renewal, µs per call (median of ${ROUNDS} rounds), ${new Date().toISOString()}`,
      '',
      '| part | library | baseline |',
      '|---|---|---|',
      `| whole call | ${f(wholeLibrary)} | ${f(wholeBaseline)} |`,
      `| BEGIN IMMEDIATE + COMMIT | ${f(transaction)} | ${f(transaction)} |`,
      ...libraryStatements.map((row) => `| ${row.name.replace(/\|/g, '\\|')} … | ${f(row.us)} | – |`),
      ...baselineStatements.map((row) => `| ${row.name} | – | ${f(row.us)} |`),
      `| busy-wait settings (3 PRAGMAs) | ${f(settings)} | – |`,
      `| the rest (JavaScript) | ${f(libraryRest)} | ${f(baselineRest)} |`,
      '',
      `Library ÷ baseline throughput: ${(wholeBaseline / wholeLibrary).toFixed(2)}×. ` +
        `The baseline's candidate upsert alone in a transaction, without IDX (ns, expires_at): ${f(unindexed!.us)} µs more than an empty one.`,
    ];
    console.log(lines.join('\n'));
  } finally {
    second.close();
    await raw.close();
    await dataSource.destroy();
    removeFile(file);
  }
}

main().catch((error: unknown) => {
  console.error(error);
  process.exit(1);
});
