/**
 * Load: statements and transactions per `elect` and per LeaderElector tick, counted by a TypeORM
 * logger that sees every statement (see `CountingLogger`), and on PostgreSQL cross-checked with
 * the server's own count, `pg_stat_database.xact_commit`.
 */
import { LeaderElector } from 'gemstone-utils';
import { Client } from 'pg';
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
  statements: number;
  transactions: number;
}

export interface LoadResult {
  sizes: LoadSizes;
  /** Per `ElectionService.elect`, by role. */
  elect: Record<'renew' | 'follower' | 'takeover', PerCall>;
  /** PostgreSQL: server-side commits over `elects` renewals (the reader's own 1 commit subtracted). */
  xactCommit?: { elects: number; commits: number; perElect: number };
  /**
   * Per LeaderElector, over the window: ticks (candidate-row touches), statements, transactions,
   * and the most transactions started within one whole tick.
   */
  electors: Array<{ leader: boolean; ticks: number; statements: number; transactions: number; transactionsPerTick: number }>;
  /** The largest transactions-per-tick of any elector. */
  maxTransactionsPerTick: number;
}

async function xactCommit(url: string): Promise<number> {
  const client = new Client({ connectionString: url });
  await client.connect();
  try {
    const { rows } = await client.query('SELECT xact_commit FROM pg_stat_database WHERE datname = current_database()');
    return Number(rows[0]?.xact_commit);
  } finally {
    await client.end();
  }
}

async function perElect(target: BenchTarget, elects: number): Promise<{ elect: LoadResult['elect']; xact?: LoadResult['xactCommit'] }> {
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
      for (let i = 0; i < elects; i++) {
        if (before) await before();
        logger.reset();
        await call(i);
        statements += logger.statements;
        transactions += logger.transactions;
      }
      return { statements: statements / elects, transactions: transactions / elects };
    };
    const elect = {
      renew: await count(() => election.elect(leader, { ns })),
      follower: await count(() => election.elect(follower, { ns })),
      takeover: await count(
        (i) => election.elect(i % 2 ? leader : follower, { ns }),
        () => raw.expireLease(ns),
      ),
    };
    let xact: LoadResult['xactCommit'];
    if (target.kind === 'postgres') {
      // A backend reports its counts at most once a second, and when it exits: settle first,
      // then count `elects` renewals and end the pool's backend so its counts are final.
      await election.elect(leader, { ns });
      await sleep(1100);
      await dataSource.query('SELECT 1');
      const before = await xactCommit(target.url);
      for (let i = 0; i < elects; i++) await election.elect(leader, { ns });
      await dataSource.destroy();
      await sleep(500);
      const commits = (await xactCommit(target.url)) - before - 1;
      xact = { elects, commits, perElect: commits / elects };
    }
    return { elect, ...(xact ? { xact } : {}) };
  } finally {
    await raw.close();
    if (dataSource.isInitialized) await dataSource.destroy();
  }
}

async function perTick(target: BenchTarget, sizes: LoadSizes): Promise<LoadResult['electors']> {
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
    for (const e of electors) e.logger.reset();
    await sleep(sizes.windowMs);
    const counts = electors.map(({ elector, logger }) => ({
      leader: elector.isLeader,
      ticks: logger.candidateTouches,
      statements: logger.statements,
      transactions: logger.transactions,
      transactionsPerTick: logger.maxTransactionsPerTick,
    }));
    if (errors.length) throw new Error(`load: elector errors: ${errors.slice(0, 3).join('; ')}`);
    if (counts.filter((c) => c.leader).length !== 1) throw new Error(`load: ${counts.filter((c) => c.leader).length} electors lead at once`);
    return counts;
  } finally {
    for (const { elector, dataSource } of electors) {
      await elector.stop();
      await dataSource.destroy();
    }
  }
}

export async function runLoad(target: BenchTarget, sizes: LoadSizes): Promise<LoadResult> {
  const { elect, xact } = await perElect(target, sizes.elects);
  const electors = await perTick(target, sizes);
  return {
    sizes,
    elect,
    ...(xact ? { xactCommit: xact } : {}),
    electors,
    maxTransactionsPerTick: Math.max(...electors.map((e) => e.transactionsPerTick)),
  };
}
