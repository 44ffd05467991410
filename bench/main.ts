/**
 * `npm run bench`: every benchmark on every database (PostgreSQL, MariaDB, SQLite file) in ONE
 * run, in dedicated databases created for the run and dropped after it. Writes
 * `bench/results/latest.json`, `latest.md` (the tables docs/benchmarks.md quotes) and
 * `latency-vs-concurrency.svg` and `group-tick-vs-namespaces.svg`.
 *
 * `npm run bench:smoke`: the same code at tiny sizes (well under a minute). It checks
 * correctness only — no errors, exactly one leader, no overlapping leaderships — and asserts no
 * timings (this machine is shared and noisy). Exit code 1 on any correctness failure.
 *
 * Options: --smoke · --db postgres,mariadb,sqlite · --only hot-path,load,scale,contention,failover,peer,group,schedules
 * · --out <dir> (default bench/results for a full run; a smoke run writes files only with --out)
 * · --group-namespaces 1,100 (the group suite's namespace counts instead of the run's sizes)
 * · --idle-schedules 0 (the schedules suite's idle schedules instead of 100; 0 compares two leaders
 * without any: how far the tick times move by themselves).
 */
import 'reflect-metadata';
import * as fs from 'fs';
import * as os from 'os';
import * as path from 'path';
import { Command } from 'commander';
import { ALL_KINDS, BenchDatabase, BenchKind } from './lib/databases';
import { openLibrary } from './lib/library';
import { renderChart, renderGroupChart } from './report/chart';
import { renderMarkdown } from './report/markdown';
import { correctnessFailures, evaluateTargets } from './report/targets';
import type { BenchReport, DatabaseResults } from './report/types';
import { ContentionSizes, runContention } from './suites/contention';
import { FailoverSizes, runFailover } from './suites/failover';
import { GroupSizes, runGroup } from './suites/group';
import { HotPathSizes, runHotPath } from './suites/hot-path';
import { LoadSizes, runLoad } from './suites/load';
import { PeerMissingError, PeerSizes, runPeer } from './suites/peer';
import { runScale, ScaleSizes } from './suites/scale';
import { runSchedules, SchedulesSizes } from './suites/schedules';

const SUITES = ['hot-path', 'load', 'scale', 'contention', 'failover', 'peer', 'group', 'schedules'] as const;
type Suite = (typeof SUITES)[number];

interface Sizes {
  hotPath: HotPathSizes;
  load: LoadSizes;
  scale: ScaleSizes;
  contention: ContentionSizes;
  failover: FailoverSizes;
  group: GroupSizes;
  peer: PeerSizes;
  schedules: SchedulesSizes;
}

const FULL: Sizes = {
  hotPath: { warmup: 200, calls: 1000, reps: 5 },
  load: { elects: 100, electors: 3, intervalMs: 100, expireSeconds: 1, windowMs: 3000 },
  scale: { namespaces: [10, 1000, 10000], candidatesPerNamespace: 3, warmup: 100, calls: 500, reps: 5, listCandidates: 10000, listCalls: 10 },
  contention: { concurrency: [1, 8, 64], warmupMs: 500, durationMs: 2000, reps: 5 },
  failover: { trials: 20, candidates: 3, expireSeconds: 2, intervalMs: 500 },
  // Lease 2 s, tick 500 ms: short enough that a crash settles in ~3 s. From 10,000 namespaces a
  // 10 s lease and 2.5 s tick (a 2 s lease could not be kept there): that size's crash is judged
  // against its own lease + 2 ticks, 15 s (suites/group.ts, docs/benchmarks.md).
  group: { namespaces: [1, 100, 1000, 10000], processes: 3, expireSeconds: 2, intervalMs: 500, measureTicks: 8, balanceNamespaces: 1000, large: { from: 10000, expireSeconds: 10, intervalMs: 2500 } },
  // The peer's lease is 15 s whatever it is told (see suites/peer.ts): every implementation gets 15 s.
  peer: { warmup: 100, calls: 500, reps: 3, trials: 3, candidates: 3, expireSeconds: 15, intervalMs: 5000 },
  // Backlogs of 500 slots (a look-back runs at most 1,000), both jobs 3 times; 50 ticks of 200 ms per phase.
  schedules: { backlog: 500, reps: 3, idleSchedules: 100, ticks: 50, intervalMs: 200 },
};

const SMOKE: Sizes = {
  hotPath: { warmup: 3, calls: 10, reps: 1 },
  load: { elects: 3, electors: 2, intervalMs: 100, expireSeconds: 1, windowMs: 400 },
  scale: { namespaces: [10, 100], candidatesPerNamespace: 3, warmup: 2, calls: 10, reps: 1, listCandidates: 100, listCalls: 1 },
  contention: { concurrency: [1, 4], warmupMs: 50, durationMs: 250, reps: 1 },
  failover: { trials: 1, candidates: 2, expireSeconds: 1, intervalMs: 300 },
  // Only the balance run: three processes, a join, a death (every lease re-acquired), counted ticks.
  group: { namespaces: [], processes: 3, expireSeconds: 1, intervalMs: 300, measureTicks: 2, balanceNamespaces: 30, quietTicks: 2 },
  peer: { warmup: 3, calls: 10, reps: 1, trials: 1, candidates: 2, expireSeconds: 15, intervalMs: 5000 },
  // A few seconds per database: the 100 idle schedules stay (what is checked), the rest is tiny.
  schedules: { backlog: 20, reps: 1, idleSchedules: 100, ticks: 5, intervalMs: 200 },
};

function parseList<T extends string>(value: string, allowed: readonly T[], name: string): T[] {
  const items = value
    .split(',')
    .map((v) => v.trim())
    .filter(Boolean);
  for (const item of items) {
    if (!allowed.includes(item as T)) throw new Error(`--${name}: unknown ${JSON.stringify(item)} (use ${allowed.join(', ')})`);
  }
  return items as T[];
}

/** `typeorm/package.json` is not in TypeORM's `exports`: read it from beside its entry point. */
function typeormVersion(): string {
  const entry = require.resolve('typeorm');
  const file = path.join(entry.slice(0, entry.lastIndexOf(`${path.sep}typeorm${path.sep}`) + '/typeorm'.length), 'package.json');
  return (JSON.parse(fs.readFileSync(file, 'utf8')) as { version: string }).version;
}

async function serverVersion(db: BenchDatabase): Promise<string> {
  const dataSource = await openLibrary(db.target); // also creates the tables the worker processes expect
  try {
    const statement = { postgres: 'SHOW server_version', mariadb: 'SELECT VERSION() AS v', sqlite: 'SELECT sqlite_version() AS v' }[db.kind];
    const [row] = (await dataSource.query(statement)) as Array<Record<string, unknown>>;
    return String(Object.values(row ?? {})[0] ?? '?').split(' ')[0] as string;
  } finally {
    await dataSource.destroy();
  }
}

async function main(): Promise<void> {
  const opts = new Command()
    .option('--smoke', 'tiny sizes; correctness checks only')
    .option('--db <kinds>', 'databases', ALL_KINDS.join(','))
    .option('--only <suites>', 'suites (default: all; a smoke run leaves out the peer, whose 15 s lease only slows it)')
    .option('--out <dir>', 'where to write results')
    .option('--group-namespaces <counts>', 'group suite: these namespace counts (comma-separated) instead of the run\'s')
    .option('--idle-schedules <count>', 'schedules suite: this many idle schedules instead of 100 (0: neither leader has any)')
    .parse()
    .opts<{ smoke?: boolean; db: string; only?: string; out?: string; groupNamespaces?: string; idleSchedules?: string }>();
  const kinds = parseList<BenchKind>(opts.db, ALL_KINDS, 'db');
  const suites = parseList<Suite>(opts.only ?? SUITES.filter((suite) => !(opts.smoke && suite === 'peer')).join(','), SUITES, 'only');
  const smoke = Boolean(opts.smoke);
  const base = smoke ? SMOKE : FULL;
  const groupNamespaces = opts.groupNamespaces?.split(',').map((v) => {
    const count = Number(v.trim());
    if (!Number.isInteger(count) || count < 1) throw new Error(`--group-namespaces: not a positive integer: ${JSON.stringify(v)}`);
    return count;
  });
  const idleSchedules = opts.idleSchedules === undefined ? base.schedules.idleSchedules : Number(opts.idleSchedules);
  if (!Number.isInteger(idleSchedules) || idleSchedules < 0) throw new Error(`--idle-schedules: not a whole number >= 0: ${JSON.stringify(opts.idleSchedules)}`);
  const sizes: Sizes = {
    ...base,
    ...(groupNamespaces ? { group: { ...base.group, namespaces: groupNamespaces } } : {}),
    schedules: { ...base.schedules, idleSchedules },
  };
  const out = opts.out ?? (smoke ? undefined : path.resolve(__dirname, '..', '..', 'bench', 'results'));
  const started = Date.now();
  const log = (line: string) => console.log(line);
  const results: Partial<Record<BenchKind, DatabaseResults>> = {};
  const failures: string[] = [];

  for (const kind of kinds) {
    const db = new BenchDatabase(kind);
    const r: DatabaseResults = {};
    results[kind] = r;
    log(`${kind}:`);
    try {
      await db.create();
      r.version = await serverVersion(db);
      const attempt = async (suite: Suite, run: () => Promise<void>) => {
        if (!suites.includes(suite)) return;
        const t = Date.now();
        try {
          await run();
          log(`  ${suite}: ${((Date.now() - t) / 1000).toFixed(1)} s`);
        } catch (error) {
          failures.push(`${kind} ${suite}: ${(error as Error).message}`);
          log(`  ${suite}: FAILED ${(error as Error).stack ?? error}`);
        }
      };
      await attempt('hot-path', async () => void (r.hotPath = await runHotPath(db.target, sizes.hotPath, log)));
      await attempt('load', async () => void (r.load = await runLoad(db.target, sizes.load)));
      await attempt('scale', async () => void (r.scale = await runScale(kind, sizes.scale, log)));
      await attempt('contention', async () => void (r.contention = await runContention(db.target, sizes.contention, log)));
      await attempt('failover', async () => void (r.failover = await runFailover(db.target, sizes.failover, log)));
      // Side by side with the peer package: PostgreSQL only (it supports nothing else).
      if (kind === 'postgres') {
        await attempt('peer', async () => {
          try {
            r.peer = await runPeer(db.target, sizes.peer, log);
          } catch (error) {
            if (!(error instanceof PeerMissingError)) throw error;
            (r.skipped ??= {}).peer = error.message;
          }
        });
      }
      await attempt('group', async () => void (r.group = await runGroup(db.target, sizes.group, log)));
      await attempt('schedules', async () => void (r.schedules = await runSchedules(db.target, sizes.schedules, log)));
    } finally {
      await db.drop().catch((error: Error) => log(`  could not drop the benchmark database: ${error.message}`));
    }
  }

  const report: BenchReport = {
    meta: {
      date: new Date(started).toISOString(),
      command: `npm run ${smoke ? 'bench:smoke' : 'bench'}${process.argv.length > 2 ? ` -- ${process.argv.slice(2).filter((a) => a !== '--smoke').join(' ')}` : ''}`.trim(),
      smoke,
      durationSeconds: (Date.now() - started) / 1000,
      machine: {
        cpus: os.cpus().length,
        cpuModel: os.cpus()[0]?.model.trim() ?? '?',
        memoryGiB: Math.round(os.totalmem() / 2 ** 30),
        os: `${os.type()} ${os.release()}`,
        node: process.versions.node,
        typeorm: typeormVersion(),
      },
    },
    results,
    targets: evaluateTargets(results),
    failures: [...failures, ...correctnessFailures(results)],
  };
  const markdown = renderMarkdown(report);
  console.log(`\n${markdown}`);
  if (out) {
    fs.mkdirSync(out, { recursive: true });
    fs.writeFileSync(path.join(out, 'latest.json'), JSON.stringify(report, null, 1) + '\n');
    fs.writeFileSync(path.join(out, 'latest.md'), markdown);
    if (Object.values(results).some((r) => r?.contention?.length)) fs.writeFileSync(path.join(out, 'latency-vs-concurrency.svg'), renderChart(report));
    if (Object.values(results).some((r) => r?.group?.points.length)) fs.writeFileSync(path.join(out, 'group-tick-vs-namespaces.svg'), renderGroupChart(report));
    log(`results written to ${path.relative(process.cwd(), out) || '.'}`);
  }
  if (report.failures.length) {
    console.error(`\nbench: ${report.failures.length} correctness failure(s):\n${report.failures.map((f) => `  - ${f}`).join('\n')}`);
    process.exitCode = 1;
  }
}

main().catch((error) => {
  console.error(error);
  process.exitCode = 1;
});
