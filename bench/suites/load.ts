/**
 * Load: transactions per `elect` and per LeaderElector tick. Transactions, not statements: each
 * is counted once, when it starts, by a TypeORM logger that sees every statement on the
 * DataSource's one connection (`CountingLogger` in lib/library.ts says what counts and why that
 * is exact where the old statement-based count was not); statements are reported beside them.
 *
 * Cross-checked per renewal with the server's own count on the same connection, where the
 * server keeps one that can be attributed exactly:
 * - PostgreSQL: `xact_commit + xact_rollback` of `pg_stat_database` — every transaction,
 *   autocommit statements included. A backend publishes its counts at most once a second, so
 *   the connection forces its own publication (`pg_stat_force_next_flush()`, PostgreSQL 15+)
 *   before each read; the two reads and the two flushes between them are 2 transactions,
 *   subtracted.
 * - MariaDB: `Com_commit + Com_rollback` of the connection's session (`SHOW SESSION STATUS`,
 *   which moves neither): the COMMIT and ROLLBACK statements, i.e. the explicit transactions.
 *   An autocommit statement is not in it (nor in any per-session counter that does not also
 *   count each statement of an explicit transaction, as `Handler_commit` does; `Questions`
 *   counts statements); the logger counts those, so a difference between the two columns shows
 *   them. The same counter is read on each elector's own connection before and after its
 *   window, so MariaDB's transactions per tick are also the server's (`serverPerTick`).
 * - SQLite keeps no transaction counter: the logger's count only.
 *
 * The logger also says how each transaction ended (committed, or rolled back): the transactions
 * per tick are transactions started, each of which committed or rolled back.
 */
import { LeaderElector } from 'gemstone-utils';
import type { DataSource } from 'typeorm';
import { openRaw } from '../lib/baseline';
import { BenchTarget, singleConnection } from '../lib/databases';
import { candidateIds, CountingLogger, openLibrary, service } from '../lib/library';
import { sleep } from '../lib/stats';

export interface LoadSizes {
  elects: number;
  electors: number;
  intervalMs: number;
  expireSeconds: number;
  windowMs: number;
}

export interface PerCall {
  /** Transactions started per call (see `CountingLogger`). */
  transactions: number;
  /** Of those, rolled back per call (a failed statement or COMMIT, a ROLLBACK); the rest committed. */
  rolledBack: number;
  /** Statements sent per call, for reference. */
  statements: number;
}

/** The server's own count of transactions over `elects` renewals on the library's connection. */
export interface ServerCount {
  /** What was read: `pg_stat_database.xact_commit + xact_rollback`, or MariaDB's session `Com_commit + Com_rollback`. */
  counter: string;
  elects: number;
  /** The server's count over the renewals (the reads' own transactions subtracted). */
  transactions: number;
  perElect: number;
  /** The logger's count over the same renewals. */
  logged: number;
}

export interface LoadResult {
  sizes: LoadSizes;
  /** Per `ElectionService.elect`, by role. */
  elect: Record<'renew' | 'follower' | 'takeover', PerCall>;
  /** PostgreSQL and MariaDB: the server's count over `elects` renewals (absent on SQLite, and on PostgreSQL before 15). */
  serverCount?: ServerCount;
  /**
   * Per LeaderElector, over the window: ticks (candidate-row touches), statements, transactions
   * (how many ended committed, how many rolled back), and the most transactions started within
   * one whole tick.
   */
  electors: ElectorCount[];
  /** The largest transactions-per-tick of any elector. */
  maxTransactionsPerTick: number;
  /**
   * MariaDB: the server's count over the electors' windows, summed over the electors — each
   * elector's own session `Com_commit + Com_rollback`, read on its own connection before and after
   * its window — next to the logger's explicit transactions and the ticks over the same spans.
   */
  serverPerTick?: WindowServerCount;
}

export interface ElectorCount {
  leader: boolean;
  ticks: number;
  statements: number;
  transactions: number;
  committed: number;
  rolledBack: number;
  /** 1 if the window ended inside one of its transactions (counted, not ended yet). */
  open: number;
  transactionsPerTick: number;
}

export interface WindowServerCount {
  counter: string;
  /** The server's count (COMMIT and ROLLBACK statements run). */
  transactions: number;
  /** The logger's explicit transactions ended over the same spans: equal to `transactions` when both count the same. */
  logged: number;
  /** Ticks (candidate-row touches) over the same spans. */
  ticks: number;
  /** `transactions / ticks`. */
  perTick: number;
}

/** A reader of the server's transaction counter on the library's own connection, or undefined where there is none. */
async function serverCounter(dataSource: DataSource, kind: BenchTarget['kind']): Promise<{ counter: string; overhead: number; read: () => Promise<number> } | undefined> {
  if (kind === 'postgres') {
    const [version] = (await dataSource.query(`SELECT current_setting('server_version_num')::int AS v`)) as Array<{ v: number }>;
    if (Number(version?.v) < 150000) return undefined; // no pg_stat_force_next_flush(): the counts lag by up to a second
    return {
      counter: 'pg_stat_database xact_commit + xact_rollback',
      // Between the two reads: the first read's SELECT and the second's flush are transactions too.
      overhead: 2,
      read: async () => {
        await dataSource.query('SELECT pg_stat_force_next_flush()');
        const [row] = (await dataSource.query(
          'SELECT xact_commit + xact_rollback AS n FROM pg_stat_database WHERE datname = current_database()',
        )) as Array<{ n: unknown }>;
        return Number(row?.n);
      },
    };
  }
  if (kind === 'mariadb') {
    return {
      counter: 'session Com_commit + Com_rollback',
      // SHOW SESSION STATUS runs no COMMIT: nothing to subtract.
      overhead: 0,
      read: async () => {
        const rows = (await dataSource.query("SHOW SESSION STATUS WHERE Variable_name IN ('Com_commit', 'Com_rollback')")) as Array<{ Value: unknown }>;
        return rows.reduce((sum, row) => sum + Number(row.Value), 0);
      },
    };
  }
  return undefined;
}

async function perElect(target: BenchTarget, elects: number): Promise<{ elect: LoadResult['elect']; serverCount?: ServerCount }> {
  const logger = new CountingLogger();
  const dataSource = await openLibrary(target, { logger, ...singleConnection(target.kind) });
  const raw = await openRaw(target);
  try {
    const election = service(dataSource);
    const [leader, follower] = candidateIds(2) as [string, string];
    const ns = 'load-elect';
    await election.elect(leader, { ns });
    await election.registerCandidate(follower, { ns });
    const count = async (call: (i: number) => Promise<unknown>, before?: () => Promise<unknown>): Promise<PerCall> => {
      let statements = 0;
      let transactions = 0;
      let rolledBack = 0;
      for (let i = 0; i < elects; i++) {
        if (before) await before();
        logger.reset();
        await call(i);
        statements += logger.statements;
        transactions += logger.transactions;
        rolledBack += logger.rolledBack;
      }
      return { transactions: transactions / elects, rolledBack: rolledBack / elects, statements: statements / elects };
    };
    const elect = {
      renew: await count(() => election.elect(leader, { ns })),
      follower: await count(() => election.elect(follower, { ns })),
      takeover: await count(
        (i) => election.elect(i % 2 ? leader : follower, { ns }),
        () => raw.expireLease(ns),
      ),
    };
    let serverCount: ServerCount | undefined;
    const counter = await serverCounter(dataSource, target.kind);
    if (counter) {
      await election.elect(leader, { ns });
      // The other connection (the raw client's expiries above) publishes its PostgreSQL counts
      // within a second of going idle: let it, so none of them lands between the two reads.
      if (target.kind === 'postgres') await sleep(1100);
      const before = await counter.read();
      logger.reset();
      for (let i = 0; i < elects; i++) await election.elect(leader, { ns });
      const logged = logger.transactions;
      const transactions = (await counter.read()) - before - counter.overhead;
      serverCount = { counter: counter.counter, elects, transactions, perElect: transactions / elects, logged };
    }
    return { elect, ...(serverCount ? { serverCount } : {}) };
  } finally {
    await raw.close();
    await dataSource.destroy();
  }
}

/**
 * MariaDB: what the server counted on each elector's own connection over its window. The read
 * (`SHOW SESSION STATUS`, which commits nothing) waits for the elector's one connection, so it
 * runs between two of its transactions; the logger's count is taken as soon as the read returns,
 * before the elector can have sent another COMMIT — both count the same span of statements.
 */
async function windowSnapshot(electors: Array<{ logger: CountingLogger; dataSource: DataSource }>, kind: BenchTarget['kind']) {
  if (kind !== 'mariadb') return undefined;
  return Promise.all(
    electors.map(async ({ logger, dataSource }) => {
      const counter = (await serverCounter(dataSource, kind))!;
      const server = await counter.read();
      return { counter: counter.counter, server, logged: logger.explicitEnds, ticks: logger.touchesTotal };
    }),
  );
}

async function perTick(target: BenchTarget, sizes: LoadSizes): Promise<{ electors: ElectorCount[]; serverPerTick?: WindowServerCount }> {
  const ns = `load-tick-${Date.now()}`;
  const electors: Array<{ elector: LeaderElector; logger: CountingLogger; dataSource: DataSource }> = [];
  const errors: string[] = [];
  try {
    for (let i = 0; i < sizes.electors; i++) {
      const logger = new CountingLogger();
      const dataSource = await openLibrary(target, { logger, ...singleConnection(target.kind) });
      const elector = new LeaderElector({ dataSource, ns, expireSeconds: sizes.expireSeconds, intervalMs: sizes.intervalMs });
      elector.on('error', (error: Error) => errors.push(error.message));
      electors.push({ elector, logger, dataSource });
      await elector.start();
    }
    await sleep(sizes.intervalMs * 2);
    const before = await windowSnapshot(electors, target.kind);
    for (const e of electors) e.logger.reset();
    await sleep(sizes.windowMs);
    const counts: ElectorCount[] = electors.map(({ elector, logger }) => ({
      leader: elector.isLeader,
      ticks: logger.candidateTouches,
      statements: logger.statements,
      transactions: logger.transactions,
      committed: logger.committed,
      rolledBack: logger.rolledBack,
      open: logger.openCounted,
      transactionsPerTick: logger.maxTransactionsPerTick,
    }));
    const after = await windowSnapshot(electors, target.kind);
    if (errors.length) throw new Error(`load: elector errors: ${errors.slice(0, 3).join('; ')}`);
    if (counts.filter((c) => c.leader).length !== 1) throw new Error(`load: ${counts.filter((c) => c.leader).length} electors lead at once`);
    let serverPerTick: WindowServerCount | undefined;
    if (before && after) {
      type Snapshot = NonNullable<Awaited<ReturnType<typeof windowSnapshot>>>[number];
      const sum = (f: (b: Snapshot, a: Snapshot) => number) => before.reduce((n, b, i) => n + f(b, after[i]!), 0);
      const transactions = sum((b, a) => a.server - b.server);
      const ticks = sum((b, a) => a.ticks - b.ticks);
      serverPerTick = { counter: before[0]!.counter, transactions, logged: sum((b, a) => a.logged - b.logged), ticks, perTick: ticks ? transactions / ticks : 0 };
    }
    return { electors: counts, ...(serverPerTick ? { serverPerTick } : {}) };
  } finally {
    for (const { elector, dataSource } of electors) {
      await elector.stop();
      await dataSource.destroy();
    }
  }
}

export async function runLoad(target: BenchTarget, sizes: LoadSizes): Promise<LoadResult> {
  const { elect, serverCount } = await perElect(target, sizes.elects);
  const { electors, serverPerTick } = await perTick(target, sizes);
  return {
    sizes,
    elect,
    ...(serverCount ? { serverCount } : {}),
    electors,
    maxTransactionsPerTick: Math.max(...electors.map((e) => e.transactionsPerTick)),
    ...(serverPerTick ? { serverPerTick } : {}),
  };
}
