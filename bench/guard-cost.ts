/**
 * `npm run bench:guard-cost`: what a guarded table's triggers cost a writer on PostgreSQL, MariaDB
 * and SQLite (better-sqlite3, a database file) (docs/fencing.md), beside the same writes to an
 * unguarded twin. `-- postgres`, `-- mariadb` or `-- sqlite` runs one of them.
 *
 * Every transaction runs as the library's fenced writes do: BEGIN, the leader's proof (its fence:
 * `ElectionService.assertLeader` on a QueryRunner), the writes, COMMIT. Each case writes once to
 * a guarded table and to its unguarded twin in turns of 50 transactions, 5 rounds of 1,000
 * transactions each, on one connection; the median wall time per transaction:
 * - `one row`: one single-row INSERT;
 * - `ten statements`: ten single-row INSERTs (the trigger runs once per statement);
 * - `1,000 rows`: one INSERT … SELECT of 1,000 rows (a batch: PostgreSQL's statement trigger
 *   runs once, MariaDB's and SQLite's row triggers 1,000 times).
 * The ratio is the unguarded transaction's time ÷ the guarded one's (1.00×: no cost).
 * Before the first guard, it also times what the proof adds to every fence where nothing is
 * guarded (see `proofOverhead`).
 */
import type { QueryRunner } from 'typeorm';
import { BenchDatabase, type BenchKind } from './lib/databases';
import { candidateIds, openLibrary, service } from './lib/library';

const ROUNDS = 5;
const TRANSACTIONS = 1_000;
const CHUNK = 50;

const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)] as number;

/** What differs between the databases: the tables' DDL, a parameter, a 1,000-row source, emptying a table. */
const SQL = {
  postgres: {
    title: 'PostgreSQL',
    table: (name: string) => `CREATE TABLE ${name} (id bigserial PRIMARY KEY, note text NOT NULL)`,
    param: '$1',
    thousand: 'generate_series(1, 1000)',
    empty: 'TRUNCATE',
  },
  mariadb: {
    title: 'MariaDB',
    table: (name: string) => `CREATE TABLE ${name} (id bigint AUTO_INCREMENT PRIMARY KEY, note varchar(20) NOT NULL)`,
    param: '?',
    thousand: 'seq_1_to_1000',
    empty: 'TRUNCATE',
  },
  sqlite: {
    title: 'SQLite (better-sqlite3)',
    table: (name: string) => `CREATE TABLE ${name} (id integer PRIMARY KEY AUTOINCREMENT, note text NOT NULL)`,
    param: '?',
    thousand: '(WITH RECURSIVE s(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM s WHERE n < 1000) SELECT n FROM s)',
    empty: 'DELETE FROM',
  },
} as const;

type Kind = keyof typeof SQL;

async function measure(kind: Kind): Promise<void> {
  const sql = SQL[kind];
  const db = new BenchDatabase(kind satisfies BenchKind, 'guards');
  await db.create();
  const dataSource = await openLibrary(db);
  const runner: QueryRunner = dataSource.createQueryRunner();
  try {
    const election = service(dataSource, 600);
    const [leader] = candidateIds(1) as [string];
    const ns = 'guarded';
    await election.electOutcome(leader, { ns });
    for (const table of ['plain', 'guarded']) await dataSource.query(sql.table(table));
    const before = await proofOverhead(kind, runner, async () => {
      await runner.startTransaction();
      await election.assertLeader(leader, { ns, session: runner });
      await runner.query(`INSERT INTO plain (note) VALUES (${sql.param})`, ['x']);
      await runner.commitTransaction();
    });
    await election.guardTable('guarded', { ns });

    /** One fenced transaction writing `write` to `table`; it must commit (a refused write would measure nothing). */
    const fenced = (write: (table: string) => Promise<unknown>) => (table: string) => async () => {
      await runner.startTransaction();
      try {
        await election.assertLeader(leader, { ns, session: runner });
        await write(table);
        await runner.commitTransaction();
      } catch (error) {
        await runner.rollbackTransaction();
        throw error;
      }
    };
    const writes: Record<string, (table: string) => () => Promise<void>> = {
      'one row': fenced((t) => runner.query(`INSERT INTO ${t} (note) VALUES (${sql.param})`, ['x'])),
      'ten statements': fenced(async (t) => {
        for (let i = 0; i < 10; i++) await runner.query(`INSERT INTO ${t} (note) VALUES (${sql.param})`, ['x']);
      }),
      '1,000 rows': fenced((t) => runner.query(`INSERT INTO ${t} (note) SELECT 'x' FROM ${sql.thousand}`)),
    };
    const lines = [
      `${sql.title} guarded table: wall µs per fenced transaction (median of ${ROUNDS} rounds of ${TRANSACTIONS}, one connection; 1,000-row batches: a tenth as many)`,
      '',
      '| writes per transaction | unguarded µs | guarded µs | unguarded ÷ guarded |',
      '|---|---|---|---|',
    ];
    for (const [name, write] of Object.entries(writes)) {
      const count = name === '1,000 rows' ? TRANSACTIONS / 10 : TRANSACTIONS;
      const cases = { plain: write('plain'), guarded: write('guarded') };
      for (const call of Object.values(cases)) for (let i = 0; i < 50; i++) await call(); // warm-up
      const walls: Record<string, number[]> = { plain: [], guarded: [] };
      for (let round = 0; round < ROUNDS; round++) {
        const spent: Record<string, bigint> = { plain: 0n, guarded: 0n };
        for (let done = 0; done < count; done += CHUNK) {
          for (const [table, call] of Object.entries(cases)) {
            const started = process.hrtime.bigint();
            for (let i = 0; i < CHUNK; i++) await call();
            spent[table] = spent[table]! + process.hrtime.bigint() - started;
          }
        }
        for (const table of Object.keys(cases)) walls[table]!.push(Number(spent[table]) / 1_000 / count);
        // Both tables keep the same size, so neither pays for a larger index.
        // (MariaDB's TRUNCATE fires no trigger; PostgreSQL's guard and SQLite's need the proof.)
        await dataSource.query(`${sql.empty} plain`);
        await runner.startTransaction();
        await election.assertLeader(leader, { ns, session: runner });
        await runner.query(`${sql.empty} guarded`);
        await runner.commitTransaction();
      }
      const [plain, guarded] = [median(walls.plain!), median(walls.guarded!)];
      lines.push(`| ${name} | ${plain.toFixed(0)} | ${guarded.toFixed(0)} | ${(plain / guarded).toFixed(2)}× |`);
    }
    lines.push('', before);
    console.log(`${lines.join('\n')}\n`);
  } finally {
    if (runner.isTransactionActive) await runner.rollbackTransaction().catch(() => undefined);
    await runner.release();
    await dataSource.destroy();
    await db.drop();
  }
}

/**
 * What the proof costs a fence while nothing is guarded (measured before the first guard): the
 * statement it adds, timed alone on the same connection, against a fenced one-row transaction to
 * an unguarded table. PostgreSQL adds none (the proof is a `set_config` inside the fence's own
 * statement). MariaDB clears the proof after every fenced transaction's COMMIT (`SET
 * @gemstone_proof = NULL`, queued on the connection: the commit does not wait for it, the
 * connection's next statement does). SQLite looks the proof table up in `sqlite_master` on every
 * fence until it exists.
 */
async function proofOverhead(kind: Kind, runner: QueryRunner, fencedTransaction: () => Promise<void>): Promise<string> {
  const extra = {
    postgres: undefined,
    mariadb: () => runner.query('SET @gemstone_proof = NULL'),
    sqlite: () => runner.query(`SELECT 1 AS found FROM sqlite_master WHERE type = 'table' AND name = ?`, ['gemstone_election_proof']),
  }[kind];
  if (!extra) return 'Before any guard: a fence adds no statement for its proof (a `set_config` inside the fence\'s own statement).';
  const time = async (call: () => Promise<unknown>) => {
    for (let i = 0; i < 50; i++) await call();
    const walls: number[] = [];
    for (let round = 0; round < ROUNDS; round++) {
      const started = process.hrtime.bigint();
      for (let i = 0; i < TRANSACTIONS; i++) await call();
      walls.push(Number(process.hrtime.bigint() - started) / 1_000 / TRANSACTIONS);
    }
    return median(walls);
  };
  const fence = await time(fencedTransaction);
  const added = await time(extra);
  const what = kind === 'mariadb' ? 'the proof\'s clearing after COMMIT (`SET @gemstone_proof = NULL`)' : 'the proof table\'s lookup (`sqlite_master`)';
  return `Before any guard: a fenced one-row transaction to an unguarded table takes ${fence.toFixed(0)} µs; ${what}, timed alone, ${added.toFixed(1)} µs: ${((100 * added) / fence).toFixed(1)}% of it.`;
}

async function main(): Promise<void> {
  const asked = process.argv.slice(2).filter((a): a is Kind => a in SQL);
  for (const kind of asked.length ? asked : (Object.keys(SQL) as Kind[])) await measure(kind);
}

main().catch((error) => {
  console.error(error);
  process.exit(1);
});
