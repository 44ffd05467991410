/**
 * Side by side on PostgreSQL, in the same run and at equal lease settings: this library, the npm
 * package `nest-leader-election` (the peer), and a classic single-table lease function in
 * PL/pgSQL (`try_become_leader(service, candidate, timeout)`, installed by `lib/baseline.ts`).
 *
 * How the peer is driven: with its own API, without Nest. Its `LeaderElectorCore(repository,
 * config)` is what its `LeaderElectorService` extends; the repository is that of its own entity
 * (`createLeaderLeaseEntity('public')`, registered on a plain TypeORM DataSource — the same TypeORM
 * as ours). One tick of the peer is `tryAcquireLease()`: a QueryRunner, START TRANSACTION, one
 * `INSERT … ON CONFLICT (id) DO UPDATE … WHERE leader_id = EXCLUDED.leader_id`, COMMIT. Its Nest
 * Logger is switched off and the line it prints on every tick (`console.log`) is dropped while it
 * runs: both only make it faster.
 *
 * What the peer does that sets the lease settings:
 * - its statement writes `expires_at = NOW() + INTERVAL '15000 ms'` whatever `leaseDuration` says:
 *   the lease is 15 s. Every implementation here therefore runs a 15 s lease renewed every 5 s (its
 *   default ratio, lease / 3; `jitterRange: 0`, so all tick at the same interval);
 * - only the holder can renew the row, nobody takes an expired one: a dead leader's row must first
 *   be deleted by the peer's cleanup job (rows expired for more than 5 s, every `baseCleanInterval`,
 *   by default twice the lease), then the next tick of a survivor inserts a new row. The cleanup
 *   runs every tick here (`baseCleanInterval` = the renewal interval), the peer's best case;
 * - `release()` deletes the row; the others see it at their next tick (no notification).
 * The PL/pgSQL function has no release: it has no graceful hand-over to measure.
 *
 * Measured:
 * 1. Renewal cost per tick: the leader's renewing call back to back on one connection (ours:
 *    `electOutcome`; the peer: `tryAcquireLease()`; PL/pgSQL: `SELECT try_become_leader(…)`
 *    as a named prepared statement), interleaved in chunks as in the hot path. Throughput and
 *    latency; ratio library ÷ other (throughput: higher is better for the library).
 * 2. Crash failover: each implementation's own loop in `candidates` processes
 *    (`workers/peer-worker.ts`); the leader's process is SIGKILLed, and the time until another
 *    reports it leads is taken. The three implementations run at the same time, each on its own
 *    namespace / table, so they share the machine's noise.
 * 3. Graceful hand-over (ours and the peer's): the leader is asked to stop (ours: `stop()`; the
 *    peer: `release()`), timed from the request to another's 'elected'.
 * Failover ratios are library ÷ other (times: lower is better for the library).
 */
import { ChildProcess, fork } from 'child_process';
import * as fs from 'fs';
import * as path from 'path';
import { DataSource } from 'typeorm';
import { installStoredFunction, openRaw } from '../lib/baseline';
import type { BenchTarget } from '../lib/databases';
import { candidateIds, openLibrary, service } from '../lib/library';
import { combine, concatRuns, pairedRatio, RepeatedResult, RunSample, timeCalls } from '../lib/measure';
import { median, sleep, summarize } from '../lib/stats';
import { loadPeer, PeerImplementation, peerConfig, PeerWorkerConfig, PeerWorkerMessage, silenceConsoleLog } from '../workers/peer-worker';

export type { PeerImplementation } from '../workers/peer-worker';
export const PEER_IMPLEMENTATIONS: readonly PeerImplementation[] = ['library', 'peer', 'plpgsql'];

export interface PeerSizes {
  /** Renewal: calls per repetition, warm-up calls, repetitions. */
  warmup: number;
  calls: number;
  reps: number;
  /** Failover: trials of each kind, candidate processes per implementation. */
  trials: number;
  candidates: number;
  /** Lease and tick of every implementation (the peer's lease is 15 s whatever it is told). */
  expireSeconds: number;
  intervalMs: number;
}

export interface PeerFailover {
  /** Milliseconds per successful trial. */
  trials: number[];
  median: number;
  max: number;
  /** Trials in which no new leader appeared in time. */
  failed: number;
}

export interface PeerResult {
  sizes: PeerSizes;
  /** The peer's version, as installed. */
  peerVersion: string;
  renewal: Record<PeerImplementation, RepeatedResult>;
  /** library ÷ other, renewal throughput (median of per-repetition ratios). */
  renewalRatio: { peer: number; plpgsql: number };
  crash: Record<PeerImplementation, PeerFailover>;
  /** Null for the PL/pgSQL function: it has no release. */
  graceful: Record<PeerImplementation, PeerFailover | null>;
  /** library ÷ other, medians. */
  crashRatio: { peer: number; plpgsql: number };
  gracefulRatio: { peer: number };
  errors: string[];
}

/** Thrown when `nest-leader-election` is not installed: the suite is reported as skipped. */
export class PeerMissingError extends Error {}

function check(condition: boolean, message: string): void {
  if (!condition) throw new Error(`peer: ${message}`);
}

function peerVersion(): string {
  const entry = require.resolve('nest-leader-election');
  const file = path.join(entry.slice(0, entry.lastIndexOf(`${path.sep}nest-leader-election${path.sep}`) + '/nest-leader-election'.length), 'package.json');
  return (JSON.parse(fs.readFileSync(file, 'utf8')) as { version: string }).version;
}

type Renew = (count: number) => Promise<RunSample>;

async function measureRenewal(target: BenchTarget, sizes: PeerSizes, lockId: number, log: (line: string) => void) {
  const peer = loadPeer();
  const dataSource = await openLibrary(target);
  const raw = await openRaw(target);
  const entity = peer.createLeaderLeaseEntity('public');
  const peerSource = await new DataSource({ type: 'postgres', url: target.url, entities: [entity as never] }).initialize();
  try {
    const election = service(dataSource, sizes.expireSeconds);
    const [leader] = candidateIds(1) as [string];
    const ns = `peer-renew-${lockId}`;
    const fn = raw.storedFunction!;
    const core = new peer.LeaderElectorCore(peerSource.getRepository(entity as never), peerConfig({ ...sizes, lockId }, leader));
    await core.createLockTableIfNotExists();
    const runners: Record<PeerImplementation, Renew> = {
      library: async (count) => {
        const run = await timeCalls(count, () => election.electOutcome(leader, { ns }));
        check((await election.electOutcome(leader, { ns })).isLeader, 'library: the renewing leader lost its lease');
        return run;
      },
      peer: async (count) => {
        const restoreLog = silenceConsoleLog();
        const run = await timeCalls(count, () => core.tryAcquireLease()).finally(restoreLog);
        // Each tick re-arms the peer's own timer for the next one: not wanted here.
        clearTimeout(core.renewalTimer);
        check(core.amILeader(), 'peer: the renewing leader lost its lease');
        return run;
      },
      plpgsql: (count) => timeCalls(count, async () => check(await fn.tryBecomeLeader(ns, leader, sizes.expireSeconds), 'PL/pgSQL: renewal failed')),
    };
    for (const implementation of PEER_IMPLEMENTATIONS) await runners[implementation](1); // acquire
    const runs: Record<PeerImplementation, RunSample[]> = { library: [], peer: [], plpgsql: [] };
    const CHUNK = 100;
    for (let rep = 0; rep < sizes.reps; rep++) {
      const chunks: Record<PeerImplementation, RunSample[]> = { library: [], peer: [], plpgsql: [] };
      for (const implementation of PEER_IMPLEMENTATIONS) await runners[implementation](sizes.warmup);
      for (let done = 0; done < sizes.calls; done += CHUNK) {
        for (const implementation of PEER_IMPLEMENTATIONS) chunks[implementation].push(await runners[implementation](Math.min(CHUNK, sizes.calls - done)));
      }
      for (const implementation of PEER_IMPLEMENTATIONS) runs[implementation].push(concatRuns(chunks[implementation]));
      log(`  peer renewal: repetition ${rep + 1}/${sizes.reps} done`);
    }
    const renewal = {} as Record<PeerImplementation, RepeatedResult>;
    for (const implementation of PEER_IMPLEMENTATIONS) renewal[implementation] = combine(runs[implementation]);
    const restoreLog = silenceConsoleLog();
    await core.release().finally(restoreLog);
    return {
      renewal,
      renewalRatio: {
        peer: pairedRatio(renewal.library, renewal.peer, (r) => r.throughput),
        plpgsql: pairedRatio(renewal.library, renewal.plpgsql, (r) => r.throughput),
      },
    };
  } finally {
    await peerSource.destroy();
    await raw.close();
    await dataSource.destroy();
  }
}

class Worker {
  readonly child: ChildProcess;
  readonly ready: Promise<void>;
  readonly exit: Promise<void>;
  exited = false;
  stoppingAt: number | undefined;

  constructor(config: PeerWorkerConfig, onMessage: (worker: Worker, message: PeerWorkerMessage) => void) {
    this.child = fork(path.join(__dirname, '..', 'workers', 'peer-worker.js'), [JSON.stringify(config)], {
      stdio: ['ignore', 'ignore', 'inherit', 'ipc'],
      execArgv: ['--no-warnings'],
    });
    this.exit = new Promise((resolve) => this.child.once('exit', () => resolve()));
    void this.exit.then(() => (this.exited = true));
    this.ready = new Promise((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`a ${config.implementation} process did not start within 60 s`)), 60_000);
      this.child.on('message', (message: PeerWorkerMessage) => {
        if (message.type === 'ready') {
          clearTimeout(timer);
          resolve();
        }
        if (message.type === 'stopping') this.stoppingAt = message.at;
        onMessage(this, message);
      });
      void this.exit.then(() => {
        clearTimeout(timer);
        reject(new Error(`a ${config.implementation} process exited before it was ready`));
      });
    });
    this.ready.catch(() => undefined);
  }
}

/** One implementation's failover trials: crash first, then graceful (where it can release). */
async function failoverOf(
  config: PeerWorkerConfig,
  sizes: PeerSizes,
  errors: string[],
  log: (line: string) => void,
): Promise<{ crash: PeerFailover; graceful: PeerFailover | null }> {
  const workers = new Set<Worker>();
  let leader: Worker | undefined;
  let waiter: { except: Worker | undefined; resolve: (at: number) => void } | undefined;
  const onMessage = (worker: Worker, message: PeerWorkerMessage) => {
    if (message.type === 'elected') {
      leader = worker;
      if (waiter && waiter.except !== worker) {
        waiter.resolve(message.at);
        waiter = undefined;
      }
    } else if (message.type === 'error') {
      errors.push(`${config.implementation}: ${message.message}`);
    }
  };
  const nextLeader = (except: Worker | undefined, timeoutMs: number) =>
    new Promise<number | undefined>((resolve) => {
      const timer = setTimeout(() => {
        waiter = undefined;
        resolve(undefined);
      }, timeoutMs);
      waiter = {
        except,
        resolve: (at) => {
          clearTimeout(timer);
          resolve(at);
        },
      };
    });
  const spawn = async () => {
    const worker = new Worker(config, onMessage);
    workers.add(worker);
    await worker.ready;
  };
  // Lease, plus the peer's cleanup delay and interval, plus two ticks, plus a loaded machine's slack.
  const timeoutMs = sizes.expireSeconds * 1000 + 5_000 + sizes.intervalMs * 3 + 15_000;
  const crash: number[] = [];
  const graceful: number[] = [];
  let crashFailed = 0;
  let gracefulFailed = 0;
  try {
    const first = nextLeader(undefined, timeoutMs);
    for (let i = 0; i < sizes.candidates; i++) await spawn();
    if ((await first) === undefined && !leader) throw new Error(`${config.implementation}: nobody was elected`);
    const kinds = config.implementation === 'plpgsql' ? (['crash'] as const) : (['crash', 'graceful'] as const);
    for (const kind of kinds) {
      for (let trial = 0; trial < sizes.trials; trial++) {
        const current = leader;
        if (!current || current.exited) {
          if ((await nextLeader(undefined, timeoutMs)) === undefined) throw new Error(`${config.implementation}: no leader to fail over from`);
          trial--;
          continue;
        }
        // A random point in the leader's tick cycle.
        await sleep(Math.random() * sizes.intervalMs);
        const next = nextLeader(current, timeoutMs);
        let since = Number.NaN;
        if (kind === 'crash') {
          since = Date.now();
          current.child.kill('SIGKILL');
        } else {
          current.child.send({ type: 'stop' });
        }
        const at = await next;
        if (kind === 'graceful') since = current.stoppingAt ?? Number.NaN;
        if (leader === current) leader = undefined;
        if (at !== undefined && Number.isFinite(since)) (kind === 'crash' ? crash : graceful).push(at - since);
        else if (kind === 'crash') crashFailed++;
        else gracefulFailed++;
        await current.exit;
        workers.delete(current);
        await spawn();
      }
      log(`  peer failover ${config.implementation}: ${sizes.trials} ${kind} trials done`);
    }
  } finally {
    await Promise.all(
      [...workers].map(async (worker) => {
        if (worker.exited) return;
        worker.child.send({ type: 'stop' }, () => undefined);
        const stopped = await Promise.race([worker.exit.then(() => true), sleep(15_000).then(() => false)]);
        if (!stopped) worker.child.kill('SIGKILL');
      }),
    );
  }
  const series = (values: number[], failed: number): PeerFailover => ({ trials: values, median: median(values), max: summarize(values).max, failed });
  return { crash: series(crash, crashFailed), graceful: config.implementation === 'plpgsql' ? null : series(graceful, gracefulFailed) };
}

export async function runPeer(target: BenchTarget, sizes: PeerSizes, log: (line: string) => void): Promise<PeerResult> {
  check(target.kind === 'postgres', 'PostgreSQL only');
  try {
    loadPeer();
  } catch (error) {
    throw new PeerMissingError(`nest-leader-election is not installed (${(error as Error).message.split('\n')[0]}); run npm install`);
  }
  await installStoredFunction(target.url);
  const lockId = Math.floor(Math.random() * 1_000_000) + 1;
  const { renewal, renewalRatio } = await measureRenewal(target, sizes, lockId, log);

  const errors: string[] = [];
  const base = { target, expireSeconds: sizes.expireSeconds, intervalMs: sizes.intervalMs };
  const [library, peer, plpgsql] = await Promise.all([
    failoverOf({ ...base, implementation: 'library', ns: `peer-failover-${lockId}`, lockId }, sizes, errors, log),
    failoverOf({ ...base, implementation: 'peer', ns: `peer-failover-${lockId}`, lockId: lockId + 1 }, sizes, errors, log),
    failoverOf({ ...base, implementation: 'plpgsql', ns: `peer-failover-${lockId}`, lockId }, sizes, errors, log),
  ]);
  return {
    sizes,
    peerVersion: peerVersion(),
    renewal,
    renewalRatio,
    crash: { library: library.crash, peer: peer.crash, plpgsql: plpgsql.crash },
    graceful: { library: library.graceful, peer: peer.graceful, plpgsql: null },
    crashRatio: { peer: library.crash.median / peer.crash.median, plpgsql: library.crash.median / plpgsql.crash.median },
    gracefulRatio: { peer: (library.graceful?.median ?? Number.NaN) / (peer.graceful?.median ?? Number.NaN) },
    errors,
  };
}
