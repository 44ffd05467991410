/**
 * Failover: candidates run a LeaderElector each in a process of their own. Crash: the leader's
 * process is SIGKILLed, and the time until another process reports 'elected' is measured (the
 * limit is the lease: nobody may take over before it ends, plus up to one tick to notice).
 * Graceful: the leader is asked to `stop()`, measured from the call to the next 'elected'.
 * After each trial a replacement process joins, so every trial starts with the same number of
 * candidates. Every leadership's interval is recorded; two that overlap are reported.
 */
import { ChildProcess, fork } from 'child_process';
import * as path from 'path';
import type { BenchTarget } from '../lib/databases';
import { sleep, summarize } from '../lib/stats';
import type { ElectorWorkerConfig, ElectorWorkerMessage } from '../workers/elector-worker';

export interface FailoverSizes {
  trials: number;
  candidates: number;
  expireSeconds: number;
  intervalMs: number;
}

export interface FailoverSeries {
  /** Milliseconds per successful trial. */
  trials: number[];
  median: number;
  p95: number;
  max: number;
  /** Trials in which no new leader appeared in time. */
  failed: number;
}

export interface FailoverResult {
  sizes: FailoverSizes;
  crash: FailoverSeries & { limitMs: number };
  graceful: FailoverSeries;
  /** Pairs of leaderships (in different processes) whose intervals overlapped. */
  overlaps: number;
  errors: string[];
}

interface Leadership {
  pid: number;
  term: number;
  start: number;
  end: number;
}

class Candidate {
  readonly child: ChildProcess;
  readonly ready: Promise<void>;
  exited = false;
  stoppingAt: number | undefined;
  readonly exit: Promise<void>;

  constructor(config: ElectorWorkerConfig, onMessage: (candidate: Candidate, message: ElectorWorkerMessage) => void) {
    this.child = fork(path.join(__dirname, '..', 'workers', 'elector-worker.js'), [JSON.stringify(config)], {
      stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
    });
    this.exit = new Promise((resolve) => this.child.once('exit', () => resolve()));
    void this.exit.then(() => (this.exited = true));
    this.ready = new Promise((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error('an elector process did not start within 60 s')), 60_000);
      this.child.on('message', (message: ElectorWorkerMessage) => {
        if (message.type === 'ready') {
          clearTimeout(timer);
          resolve();
        }
        onMessage(this, message);
      });
      void this.exit.then(() => {
        clearTimeout(timer);
        reject(new Error('an elector process exited before it was ready'));
      });
    });
    this.ready.catch(() => undefined);
  }

  get pid(): number {
    return this.child.pid ?? -1;
  }
}

export async function runFailover(target: BenchTarget, sizes: FailoverSizes, log: (line: string) => void): Promise<FailoverResult> {
  const config: ElectorWorkerConfig = { target, ns: `failover-${Date.now()}`, expireSeconds: sizes.expireSeconds, intervalMs: sizes.intervalMs };
  const leaderships: Leadership[] = [];
  const open = new Map<Candidate, Leadership>();
  const errors: string[] = [];
  let waiter: { minTerm: number; resolve: (value: { at: number; candidate: Candidate; term: number }) => void } | undefined;

  const onMessage = (candidate: Candidate, message: ElectorWorkerMessage) => {
    if (message.type === 'elected') {
      const leadership = { pid: candidate.pid, term: message.term, start: message.at, end: Number.POSITIVE_INFINITY };
      leaderships.push(leadership);
      open.set(candidate, leadership);
      if (waiter && message.term >= waiter.minTerm) {
        waiter.resolve({ at: message.at, candidate, term: message.term });
        waiter = undefined;
      }
    } else if (message.type === 'demoted') {
      const leadership = open.get(candidate);
      if (leadership) leadership.end = message.at;
      open.delete(candidate);
    } else if (message.type === 'stopping') {
      candidate.stoppingAt = message.at;
    } else if (message.type === 'error') {
      errors.push(message.message);
    }
  };

  const nextLeader = (minTerm: number, timeoutMs: number) =>
    new Promise<{ at: number; candidate: Candidate; term: number } | undefined>((resolve) => {
      const timer = setTimeout(() => {
        waiter = undefined;
        resolve(undefined);
      }, timeoutMs);
      waiter = {
        minTerm,
        resolve: (value) => {
          clearTimeout(timer);
          resolve(value);
        },
      };
    });

  const candidates = new Set<Candidate>();
  const spawn = async (): Promise<void> => {
    for (let attempt = 1; ; attempt++) {
      const candidate = new Candidate(config, onMessage);
      candidates.add(candidate);
      try {
        return await candidate.ready;
      } catch (error) {
        candidates.delete(candidate);
        errors.push(`spawn: ${(error as Error).message}`);
        if (attempt === 3) throw error;
      }
    }
  };
  const timeoutMs = sizes.expireSeconds * 3000 + 10_000;
  const crash: number[] = [];
  const graceful: number[] = [];
  let crashFailed = 0;
  let gracefulFailed = 0;

  try {
    const first = nextLeader(1, timeoutMs);
    for (let i = 0; i < sizes.candidates; i++) await spawn();
    if (!(await first) && open.size === 0) throw new Error(`failover ${target.kind}: nobody was elected`);

    for (const kind of ['crash', 'graceful'] as const) {
      for (let trial = 0; trial < sizes.trials; trial++) {
        const [current, leadership] = [...open.entries()][0] ?? [];
        if (!current || !leadership) {
          // Nobody leads right now (a previous trial failed): wait for the next election.
          if (!(await nextLeader(1, timeoutMs))) throw new Error(`failover ${target.kind}: no leader to fail over from`);
          trial--;
          continue;
        }
        // A random point in the leader's tick cycle.
        await sleep(Math.random() * sizes.intervalMs);
        const next = nextLeader(leadership.term + 1, timeoutMs);
        let since: number;
        if (kind === 'crash') {
          since = Date.now();
          current.child.kill('SIGKILL');
          leadership.end = Math.min(leadership.end, since);
          open.delete(current);
        } else {
          current.child.send({ type: 'stop' });
          since = Number.NaN;
        }
        const elected = await next;
        if (kind === 'graceful') since = current.stoppingAt ?? Number.NaN;
        if (elected && Number.isFinite(since)) (kind === 'crash' ? crash : graceful).push(elected.at - since);
        else if (kind === 'crash') crashFailed++;
        else gracefulFailed++;
        await current.exit;
        candidates.delete(current);
        await spawn();
      }
      log(`  failover ${target.kind}: ${sizes.trials} ${kind} trials done`);
    }
  } finally {
    await Promise.all(
      [...candidates].map(async (candidate) => {
        if (candidate.exited) return;
        candidate.child.send({ type: 'stop' }, () => undefined);
        const stopped = await Promise.race([candidate.exit.then(() => true), sleep(15_000).then(() => false)]);
        if (!stopped) candidate.child.kill('SIGKILL');
      }),
    );
  }

  const ordered = [...leaderships].sort((a, b) => a.start - b.start);
  let overlaps = 0;
  for (let i = 1; i < ordered.length; i++) {
    const previous = ordered[i - 1] as Leadership;
    const current = ordered[i] as Leadership;
    if (previous.pid !== current.pid && current.start < previous.end) overlaps++;
  }
  const series = (values: number[], failed: number): FailoverSeries => {
    const s = summarize(values);
    return { trials: values, median: s.p50, p95: s.p95, max: s.max, failed };
  };
  return {
    sizes,
    crash: { ...series(crash, crashFailed), limitMs: sizes.expireSeconds * 1000 + sizes.intervalMs },
    graceful: series(graceful, gracefulFailed),
    overlaps,
    errors,
  };
}
