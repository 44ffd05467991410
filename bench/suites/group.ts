/**
 * Many leases per process: three processes (by default) each run a LeaderElectorGroup over the
 * same N namespaces, N = 1, 100, 1,000, 10,000.
 *
 * Per N: process 0 starts alone and acquires all N leases, then the others join as followers.
 * Measured over a window of ticks: every process's tick latency (the `'tick'` event's own
 * measure) — the leader's tick renews N leases, a follower's observes N held ones — and the
 * transactions per tick per process, counted by a TypeORM logger in each worker between two
 * `'tick'` events. Then process 0 is SIGKILLed: the time from the kill (database clock, read just
 * before it) to the last re-acquisition of its N leases by the survivors (database clock, from
 * the history table).
 *
 * A lost lease fails the case: before the kill, process 0 must hold all N leases on every
 * measured tick, hold them all when it is killed, and end none of them (no 'demoted' event of
 * process 0, no 'elected' event of another process). Each lease it lost is listed in the case's
 * `failures`, which the report counts as correctness failures.
 *
 * Limits, per size (a size's lease and tick are in `sizes`, the larger ones in `sizes.large`):
 * the crash re-acquisition is judged against that size's lease + 2 ticks (`reacquireLimitMs` of
 * each point).
 *
 * Balance: `balance: true`, three processes over M namespaces (1,000): the first takes every
 * lease, then the other two join together; from the last join (its `start()` resolved) to the last leadership change before the
 * leader table shows ⌊M/3⌋/⌊M/3⌋/⌈M/3⌉ live leases; then one process is SIGKILLed and the time to
 * M/2 / M/2 among the survivors is measured the same way. The leader table is polled for the
 * counts; the instants come from the history table (when the last term of the settling began or
 * ended), so the poll period does not count.
 *
 * Everywhere: no lease is ever held twice — neither by the processes' own accounts (per
 * namespace, the intervals from 'elected' to 'demoted', or to the SIGKILL, of different processes
 * never overlap) nor by the history table (per namespace, terms 1..n without a gap, each ended no
 * later than the next began).
 */
import { ChildProcess, fork } from 'child_process';
import * as path from 'path';
import type { DataSource } from 'typeorm';
import type { BenchKind, BenchTarget } from '../lib/databases';
import { openLibrary } from '../lib/library';
import { round, sleep, summarize } from '../lib/stats';
import type { GroupTickReport, GroupWorkerConfig, GroupWorkerMessage, LeaseEvent } from '../workers/group-worker';

export interface GroupSizes {
  /** Namespace counts measured (each with fresh namespaces). */
  namespaces: number[];
  /** Processes per measurement, each running one group. */
  processes: number;
  /** Lease. */
  expireSeconds: number;
  /** Tick period. */
  intervalMs: number;
  /** Ticks of the leader measured per N (followers tick alongside). */
  measureTicks: number;
  /** Namespaces of the balance run; 0: no balance run. */
  balanceNamespaces: number;
  /** Ticks watched for flapping after each settling of the balance run. Default 3. */
  quietTicks?: number;
  /**
   * From this many namespaces on, this lease and tick instead: one tick renewing 10,000 leases
   * takes about a second per process here, more than a 2 s lease allows with three processes on
   * two cores. Default: none.
   */
  large?: { from: number; expireSeconds: number; intervalMs: number };
}

/** Lease and tick of the measurement at `count` namespaces. */
function timingFor(sizes: GroupSizes, count: number): { expireSeconds: number; intervalMs: number } {
  return sizes.large && count >= sizes.large.from ? sizes.large : { expireSeconds: sizes.expireSeconds, intervalMs: sizes.intervalMs };
}

/** Transactions per tick per process. */
export interface TransactionCount {
  max: number;
  min: number;
  /** Whole ticks counted. */
  ticks: number;
  /** BEGINs refused while another process held the write lock (SQLite), retried by the library: not transactions. */
  busyRetries: number;
  /**
   * Transactions rolled back after a bounded lock wait ran out or a deadlock (MySQL/MariaDB), each
   * followed by the tick's documented rerun: not counted in max/min (they changed nothing).
   */
  lockWaitReruns: number;
  /** What one tick of more than one transaction sent (first words of each statement). */
  sample?: string[];
}

export interface TickStats {
  n: number;
  p50: number;
  p99: number;
  max: number;
}

export interface GroupPoint {
  namespaces: number;
  /** Lease (s) and tick (ms) of this measurement. */
  expireSeconds: number;
  intervalMs: number;
  /** The crash limit of this measurement: its own lease + 2 of its own ticks, ms. */
  reacquireLimitMs: number;
  /** Ticks of process 0 while it held all N leases (renewing them). */
  leader: TickStats;
  /** Ticks of the other processes meanwhile (observing N held leases). */
  follower: TickStats;
  /** Transactions per tick per process, over every whole tick of every process: most and fewest. */
  transactionsPerTick: TransactionCount;
  /** Pruning transactions seen (not part of a tick's count). */
  pruneTransactions: number;
  /** Leases the killed process (process 0, unless it held none then) held when it was killed. */
  killedLeases: number;
  /** From the kill to the last re-acquisition of those leases (database clock), ms; null if not all were re-acquired. */
  reacquireMs: number | null;
  /** Of them, re-acquired within the wait (should be all). */
  reacquired: number;
  /** Leases per survivor after the re-acquisition. */
  survivorLeases: number[];
  /** Seconds the whole measurement took. */
  seconds: number;
  /**
   * Why this case failed, empty if it did not: every lease process 0 lost before the kill — a
   * measured tick on which it held fewer than all N (a tick slower than the lease allows, or queued
   * behind the others'), a lease it ended or another process took, fewer than all N live when it
   * was to be killed (then whoever held the most was killed instead, or nobody). Reported as
   * correctness failures, and the case's crash target as missed.
   */
  failures: string[];
}

export interface BalanceResult {
  namespaces: number;
  processes: number;
  /** From the last join to the last leadership change before ⌊M/k⌋/⌈M/k⌉ (database clock), ms; null if never reached. */
  joinSettleMs: number | null;
  joinCounts: number[];
  /** Leadership changes after the settled state (history rows begun or ended), over a quiet window of `quietTicks`: flapping. */
  changesAfterJoinSettle: number;
  /** From the SIGKILL of one process to the last change before an even split among the survivors, ms; null if never reached. */
  deathSettleMs: number | null;
  deathCounts: number[];
  changesAfterDeathSettle: number;
  quietTicks: number;
  /** Transactions per tick per process over the ticks that handed nothing over: most and fewest. */
  transactionsPerTick: TransactionCount;
  /** Most transactions in one tick window of a hand-over (the tick that ended leaderships, and the next: see `handingOver`), and how many such ticks. */
  handOverTicks: { maxTransactions: number; ticks: number };
  /**
   * How the join settled, tick by tick: every tick after the last join (until the even split was
   * seen) that changed what its process holds — which process, when after the join (host clock),
   * the leases it held after the tick and the leaderships the tick ended.
   */
  joinTrace: JoinStep[];
}

/** One tick of a balance run that changed its process's leases (see {@link BalanceResult.joinTrace}). */
export interface JoinStep {
  process: number;
  ms: number;
  held: number;
  lost: number;
}

/** The ticks between `from` and `to` (host clock) that changed what their process held, in time order. */
function joinTrace(workers: readonly Worker[], from: number, to: number): JoinStep[] {
  const steps: JoinStep[] = [];
  for (const worker of workers) {
    let held = worker.ticks.filter((t) => t.at < from).at(-1)?.held ?? 0;
    for (const tick of worker.ticks) {
      if (tick.at < from || tick.at > to) continue;
      if (tick.held !== held || tick.lost > 0) steps.push({ process: worker.index, ms: Math.round(tick.at - from), held: tick.held, lost: tick.lost });
      held = tick.held;
    }
  }
  return steps.sort((a, b) => a.ms - b.ms);
}

export interface GroupSafety {
  /** Pairs of intervals (same namespace, different processes) that overlapped by the processes' reports. */
  eventOverlaps: number;
  /** Terms the history table gives out of order, with a gap, or overlapping the next (per namespace). */
  historyViolations: number;
  /** History rows read and checked. */
  historyRows: number;
  /** Lease intervals reported by the processes and checked. */
  intervals: number;
  samples: string[];
}

export interface GroupResult {
  sizes: GroupSizes;
  points: GroupPoint[];
  balance: BalanceResult | null;
  safety: GroupSafety;
  /** Leader p50 at 1,000 ÷ at 1 (null unless both were measured). */
  p50Ratio: number | null;
  /** Balance limits: 3 ticks after the last join; lease + 3 ticks after a death. */
  joinLimitMs: number;
  deathLimitMs: number;
  errors: string[];
  /**
   * Reports of phase `tick` (a tick that failed and was tried again, or one that had not answered
   * within the lease while the machine was busy): shown, not judged. Safety is judged by the
   * leases never held twice (events and history) above; the tests treat such reports alike.
   */
  tickErrors: string[];
}

/** Resolves after `ms` without keeping the process alive meanwhile (a bound that is rarely reached). */
const bound = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms).unref());

/** One worker process and everything it reported. */
class Worker {
  readonly child: ChildProcess;
  readonly ready: Promise<void>;
  readonly exit: Promise<void>;
  candidateId = '';
  exited = false;
  killedAt: number | undefined;
  readonly leaseEvents: LeaseEvent[] = [];
  readonly ticks: GroupTickReport[] = [];
  #tickWaiters: Array<{ count: number; resolve: () => void }> = [];

  constructor(
    readonly index: number,
    config: GroupWorkerConfig,
    errors: string[],
    tickErrors: string[],
  ) {
    this.child = fork(path.join(__dirname, '..', 'workers', 'group-worker.js'), [JSON.stringify(config)], {
      stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
    });
    this.exit = new Promise((resolve) => this.child.once('exit', () => resolve()));
    void this.exit.then(() => (this.exited = true));
    this.ready = new Promise((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`group process ${index} did not start within 60 s`)), 60_000);
      this.child.on('message', (message: GroupWorkerMessage) => {
        if (message.type === 'ready') {
          this.candidateId = message.candidateId;
          clearTimeout(timer);
          resolve();
        } else if (message.type === 'leases') {
          for (const e of message.events) this.leaseEvents.push(e);
        } else if (message.type === 'tick') {
          this.ticks.push(message);
          this.#tickWaiters = this.#tickWaiters.filter((w) => (this.ticks.length >= w.count ? (w.resolve(), false) : true));
        } else if (message.type === 'error') {
          (message.phase === 'tick' ? tickErrors : errors).push(`process ${index}: ${message.message}`);
        }
      });
      void this.exit.then(() => {
        clearTimeout(timer);
        reject(new Error(`group process ${index} exited before it was ready${errors.length ? ` (${errors[errors.length - 1]})` : ''}`));
      });
    });
    this.ready.catch(() => undefined);
  }

  /** Resolves once this process reported `count` ticks in all (or after `timeoutMs`). */
  ticksReached(count: number, timeoutMs: number): Promise<void> {
    if (this.ticks.length >= count) return Promise.resolve();
    return Promise.race([new Promise<void>((resolve) => this.#tickWaiters.push({ count, resolve })), bound(timeoutMs)]);
  }

  kill(at: number): void {
    this.killedAt = at;
    this.child.kill('SIGKILL');
  }

  async stop(): Promise<void> {
    if (this.exited) return;
    this.child.send({ type: 'stop' }, () => undefined);
    const stopped = await Promise.race([this.exit.then(() => true), bound(20_000).then(() => false)]);
    if (!stopped) this.child.kill('SIGKILL');
    await this.exit;
  }
}

/** The harness's own reads, straight to the database (no library call). */
class Observer {
  readonly #now: string;
  readonly #ms: (column: string) => string;
  readonly #p: (i: number) => string;

  constructor(
    readonly dataSource: DataSource,
    readonly kind: BenchKind,
  ) {
    this.#now = { postgres: 'clock_timestamp()', mariadb: 'UTC_TIMESTAMP(6)', sqlite: "strftime('%Y-%m-%d %H:%M:%f', 'now')" }[kind];
    this.#ms = {
      postgres: (c: string) => `(EXTRACT(EPOCH FROM ${c}) * 1000)`,
      mariadb: (c: string) => `(TIMESTAMPDIFF(MICROSECOND, '1970-01-01 00:00:00', ${c}) / 1000)`,
      sqlite: (c: string) => `((julianday(${c}) - 2440587.5) * 86400000.0)`,
    }[kind];
    this.#p = kind === 'postgres' ? (i) => `$${i}` : () => '?';
  }

  /** The database clock, epoch ms. */
  async now(): Promise<number> {
    const [row] = (await this.dataSource.query(`SELECT ${this.#ms(this.#now)} AS now`)) as Array<{ now: unknown }>;
    return Number(row?.now);
  }

  /** Live leases per leader among the namespaces starting with `prefix`. */
  async liveCounts(prefix: string): Promise<Map<string, number>> {
    const rows = (await this.dataSource.query(
      `SELECT leader_id, COUNT(*) AS n FROM gemstone_election_leader WHERE ns LIKE ${this.#p(1)} AND leader_id IS NOT NULL AND lease_expires_at > ${this.#now} GROUP BY leader_id`,
      [`${prefix}%`],
    )) as Array<{ leader_id: string; n: unknown }>;
    return new Map(rows.map((r) => [String(r.leader_id).toLowerCase(), Number(r.n)]));
  }

  /** Live leases (ns → term) held by one candidate among the namespaces starting with `prefix`. */
  async heldBy(prefix: string, candidateId: string): Promise<Map<string, number>> {
    const rows = (await this.dataSource.query(
      `SELECT ns, term FROM gemstone_election_leader WHERE ns LIKE ${this.#p(1)} AND leader_id = ${this.#p(2)} AND lease_expires_at > ${this.#now}`,
      [`${prefix}%`, candidateId],
    )) as Array<{ ns: string; term: unknown }>;
    return new Map(rows.map((r) => [String(r.ns), Number(r.term)]));
  }

  /** Every history row of the namespaces starting with `prefix`, by namespace then term. */
  async history(prefix: string): Promise<HistoryRow[]> {
    const rows = (await this.dataSource.query(
      `SELECT ns, term, leader_id, ${this.#ms('acquired_at')} AS acquired, ${this.#ms('ended_at')} AS ended FROM gemstone_election_history WHERE ns LIKE ${this.#p(1)} ORDER BY ns, term`,
      [`${prefix}%`],
    )) as Array<{ ns: string; term: unknown; leader_id: string; acquired: unknown; ended: unknown }>;
    return rows.map((r) => ({
      ns: String(r.ns),
      term: Number(r.term),
      leaderId: String(r.leader_id).toLowerCase(),
      acquired: Number(r.acquired),
      ended: r.ended === null || r.ended === undefined ? null : Number(r.ended),
    }));
  }
}

interface HistoryRow {
  ns: string;
  term: number;
  leaderId: string;
  acquired: number;
  ended: number | null;
}

/** Instants read back through SQL arithmetic agree to about a millisecond. */
const INSTANT_TOLERANCE_MS = 1;

/** Per namespace: terms 1..n, each ended no later than the next began, only the last open. */
function checkHistory(rows: HistoryRow[], safety: GroupSafety): void {
  safety.historyRows += rows.length;
  let previous: HistoryRow | undefined;
  const violation = (text: string) => {
    safety.historyViolations++;
    if (safety.samples.length < 10) safety.samples.push(`history: ${text}`);
  };
  for (const row of rows) {
    const first = previous?.ns !== row.ns;
    if (first && row.term !== 1) violation(`${row.ns}: first term is ${row.term}`);
    if (!first && previous) {
      if (row.term !== previous.term + 1) violation(`${row.ns}: term ${row.term} follows term ${previous.term}`);
      if (previous.ended === null) {
        violation(
          `${row.ns}: term ${previous.term} (${previous.leaderId.slice(0, 8)}, acquired ${new Date(previous.acquired).toISOString()}) still open while term ${row.term} ` +
            `(${row.leaderId.slice(0, 8)}, acquired ${new Date(row.acquired).toISOString()}) exists`,
        );
      }
      else if (previous.ended > row.acquired + INSTANT_TOLERANCE_MS) {
        violation(`${row.ns}: term ${previous.term} ended ${round(previous.ended - row.acquired)} ms after term ${row.term} began`);
      }
    }
    if (row.ended !== null && row.ended + INSTANT_TOLERANCE_MS < row.acquired) violation(`${row.ns}: term ${row.term} ended before it began`);
    previous = row;
  }
}

/**
 * Per namespace, the processes' own accounts: each 'elected' up to the next 'demoted' (or
 * 'elected') of that process, its SIGKILL, or `endAt`; intervals of different processes must not
 * overlap (same host, same wall clock: a leadership ends locally before the lease can pass on).
 */
function checkEvents(workers: Worker[], endAt: number, safety: GroupSafety): void {
  const byNs = new Map<string, Array<{ worker: number; term: number; start: number; end: number }>>();
  for (const w of workers) {
    const open = new Map<string, { worker: number; term: number; start: number; end: number }>();
    const stopAt = w.killedAt ?? endAt;
    for (const [kind, ns, term, at] of w.leaseEvents) {
      const current = open.get(ns);
      if (current) {
        current.end = Math.min(at, stopAt);
        open.delete(ns);
      }
      if (kind !== 'elected') continue;
      const interval = { worker: w.index, term, start: at, end: stopAt };
      open.set(ns, interval);
      let list = byNs.get(ns);
      if (!list) byNs.set(ns, (list = []));
      list.push(interval);
    }
  }
  for (const [ns, list] of byNs) {
    safety.intervals += list.length;
    list.sort((a, b) => a.start - b.start);
    for (let i = 1; i < list.length; i++) {
      for (let j = i - 1; j >= 0; j--) {
        const [a, b] = [list[j]!, list[i]!];
        if (a.worker === b.worker || b.start >= a.end) continue;
        safety.eventOverlaps++;
        if (safety.samples.length < 10) {
          safety.samples.push(`events: ${ns}: process ${a.worker} (term ${a.term}) and process ${b.worker} (term ${b.term}) both leading for ${a.end - b.start} ms`);
        }
      }
    }
  }
}

/** A few lease events, for a failure message: "ns term n, …" and how many more. */
function describe(events: LeaseEvent[]): string {
  const shown = events.slice(0, 3).map(([, ns, term]) => `${ns} term ${term}`);
  return shown.join(', ') + (events.length > shown.length ? `, … ${events.length - shown.length} more` : '');
}

function tickStats(values: number[]): TickStats {
  const s = summarize(values);
  return { n: s.n, p50: round(s.p50), p99: round(s.p99), max: round(s.max) };
}

/** Polls `done` every `pollMs` until it answers true or `timeoutMs` passes; true if it did. */
async function until(done: () => Promise<boolean>, timeoutMs: number, pollMs = 50): Promise<boolean> {
  for (const end = Date.now() + timeoutMs; Date.now() < end; await sleep(pollMs)) {
    if (await done()) return true;
  }
  return done();
}

/** The instant of the last leadership change (a term begun or ended) in (`since`, `upTo`], among `rows`. */
function lastChange(rows: HistoryRow[], since: number, upTo: number): number | null {
  let last: number | null = null;
  for (const instant of rows.flatMap((r) => (r.ended === null ? [r.acquired] : [r.acquired, r.ended]))) {
    if (instant > since && instant <= upTo) last = Math.max(last ?? instant, instant);
  }
  return last;
}

function changesBetween(rows: HistoryRow[], from: number, to: number): number {
  return rows.filter((r) => (r.acquired > from && r.acquired <= to) || (r.ended !== null && r.ended > from && r.ended <= to)).length;
}

/**
 * Whether a tick's count includes a hand-over: the tick ended leaderships itself, or the one
 * before did — the group vacates the leases it gives up in a transaction of its own, sent right
 * after the tick that decided it, so it is counted in the next tick's window.
 */
function handingOver(ticks: GroupTickReport[], i: number): boolean {
  return (ticks[i]?.lost ?? 0) > 0 || (ticks[i - 1]?.lost ?? 0) > 0;
}

/** Transactions per tick over the successful ticks of `workers` that `keep` selects. */
function maxTransactions(
  workers: Worker[],
  keep: (ticks: GroupTickReport[], i: number) => boolean = () => true,
): TransactionCount & { prune: number } {
  const ticks = workers.flatMap((w) => w.ticks.filter((t, i) => !t.failed && keep(w.ticks, i)));
  // A transaction rolled back after its bounded lock wait ran out changed nothing: the tick's rerun is its one.
  const counted = (t: GroupTickReport) => t.transactions - t.lockWaitReruns;
  const over = ticks.find((t) => counted(t) > 1);
  return {
    max: ticks.length ? Math.max(...ticks.map(counted)) : Number.NaN,
    min: ticks.length ? Math.min(...ticks.map(counted)) : Number.NaN,
    ticks: ticks.length,
    busyRetries: ticks.reduce((sum, t) => sum + t.busyRetries, 0),
    lockWaitReruns: ticks.reduce((sum, t) => sum + t.lockWaitReruns, 0),
    ...(over?.statementsSent ? { sample: over.statementsSent } : {}),
    prune: workers.reduce((sum, w) => sum + w.ticks.reduce((n, t) => n + t.pruneTransactions, 0), 0),
  };
}

export async function runGroup(target: BenchTarget, sizes: GroupSizes, log: (line: string) => void): Promise<GroupResult> {
  const errors: string[] = [];
  const tickErrors: string[] = [];
  const safety: GroupSafety = { eventOverlaps: 0, historyViolations: 0, historyRows: 0, intervals: 0, samples: [] };
  const tickMs = sizes.intervalMs;
  const leaseMs = sizes.expireSeconds * 1000;
  const joinLimitMs = 3 * tickMs;
  const deathLimitMs = leaseMs + 3 * tickMs;
  const stamp = `${Date.now().toString(36)}`;
  const dataSource = await openLibrary(target);
  const observer = new Observer(dataSource, target.kind);
  const all: Worker[] = [];
  const spawn = (index: number, config: GroupWorkerConfig) => {
    const worker = new Worker(index, config, errors, tickErrors);
    all.push(worker);
    return worker;
  };
  const points: GroupPoint[] = [];
  let balance: BalanceResult | null = null;

  try {
    for (const count of sizes.namespaces) {
      const started = Date.now();
      const prefix = `grp-${stamp}-${count}-`;
      const timing = timingFor(sizes, count);
      const tickMs = timing.intervalMs;
      const reacquireLimitMs = timing.expireSeconds * 1000 + 2 * tickMs;
      const config: GroupWorkerConfig = { target, prefix, count, ...timing, balance: false };
      const workers: Worker[] = [];
      const failures: string[] = [];
      try {
        // Process 0 first: it acquires every lease; the others join as followers.
        workers.push(spawn(0, config));
        await workers[0]!.ready;
        for (let i = 1; i < sizes.processes; i++) workers.push(spawn(i, config));
        await Promise.all(workers.map((w) => w.ready));
        const leader = workers[0]!;
        const from = leader.ticks.length;
        await leader.ticksReached(from + sizes.measureTicks + 1, (sizes.measureTicks + 4) * tickMs * 2 + 15_000);
        const measured = leader.ticks.slice(from + 1); // the first may have run before the followers were up
        const windowStart = measured[0]?.at ?? Date.now();
        const followerTicks = workers.slice(1).flatMap((w) => w.ticks.filter((t) => t.at >= windowStart));
        const leaderHeld = measured.filter((t) => t.held === count && !t.failed);

        // Crash: every lease the victim holds must pass to the survivors. The victim is process 0,
        // unless it lost its leases (a tick slower than the lease): then whoever holds the most.
        let victim = leader;
        let held = await observer.heldBy(prefix, leader.candidateId);
        if (held.size < count) failures.push(`process 0 held ${held.size} of its ${count} leases when it was to be killed`);
        if (held.size === 0) {
          for (const w of workers.slice(1)) {
            const theirs = await observer.heldBy(prefix, w.candidateId);
            if (theirs.size > held.size) [victim, held] = [w, theirs];
          }
          failures.push(
            held.size === 0
              ? 'no process held a live lease when process 0 was to be killed (every tick slower than the lease): no crash measured'
              : `killed process ${victim.index} (${held.size} leases) instead of process 0`,
          );
        }
        if (leaderHeld.length < measured.length) {
          failures.push(`process 0 held fewer than all ${count} leases on ${measured.length - leaderHeld.length} of its ${measured.length} measured ticks`);
        }
        const killAt = await observer.now();
        const killedAtWall = Date.now();
        victim.kill(killedAtWall);
        await victim.exit;
        // Leases process 0 gave up, and leases the others took, before the kill (every message the
        // killed process sent has arrived once it exited; the survivors' arrive within a tick).
        const survivors = workers.filter((w) => w !== victim);
        const survivorIds = new Set(survivors.map((w) => w.candidateId));
        const allTaken = async () => {
          const counts = await observer.liveCounts(prefix);
          return [...survivorIds].reduce((n, id) => n + (counts.get(id) ?? 0), 0) === count;
        };
        if (held.size > 0) await until(allTaken, reacquireLimitMs + 15_000);
        const ended = leader.leaseEvents.filter(([kind, , , at]) => kind === 'demoted' && at < killedAtWall);
        const taken = workers.slice(1).flatMap((w) => w.leaseEvents.filter(([kind, , , at]) => kind === 'elected' && at < killedAtWall));
        if (ended.length) failures.push(`process 0 lost ${ended.length} leases before the kill ('demoted': ${describe(ended)})`);
        if (taken.length) failures.push(`the other processes took ${taken.length} leases before the kill ('elected': ${describe(taken)})`);
        const history = await observer.history(prefix);
        let reacquired = 0;
        let last: number | null = null;
        const byNs = new Map<string, HistoryRow[]>();
        for (const row of history) {
          let list = byNs.get(row.ns);
          if (!list) byNs.set(row.ns, (list = []));
          list.push(row);
        }
        for (const [ns, term] of held) {
          const next = byNs.get(ns)?.find((r) => r.term > term && survivorIds.has(r.leaderId));
          if (!next) continue;
          reacquired++;
          last = Math.max(last ?? next.acquired, next.acquired);
        }
        const counts = await observer.liveCounts(prefix);
        // A few more ticks of the survivors (counted too), then a clean stop.
        const survivorTicks = survivors.map((w) => w.ticks.length);
        await Promise.all(survivors.map((w, i) => w.ticksReached(survivorTicks[i]! + 2, 10 * tickMs + 10_000)));
        await Promise.all(survivors.map((w) => w.stop()));
        checkEvents(workers, Date.now(), safety);
        checkHistory(await observer.history(prefix), safety);
        const txns = maxTransactions(workers);
        const point: GroupPoint = {
          namespaces: count,
          ...timing,
          reacquireLimitMs,
          leader: tickStats(leaderHeld.map((t) => t.durationMs)),
          follower: tickStats(followerTicks.map((t) => t.durationMs)),
          transactionsPerTick: (({ prune: _prune, ...count }) => count)(txns),
          pruneTransactions: txns.prune,
          killedLeases: held.size,
          reacquireMs: reacquired === held.size && held.size > 0 && last !== null ? round(last - killAt, 1) : null,
          reacquired,
          survivorLeases: survivors.map((w) => counts.get(w.candidateId) ?? 0),
          seconds: round((Date.now() - started) / 1000, 1),
          failures,
        };
        points.push(point);
        log(
          `  group ${target.kind} N=${count}: leader tick p50 ${point.leader.p50} ms p99 ${point.leader.p99} ms, follower p50 ${point.follower.p50} ms, ` +
            `txns/tick ${txns.min}..${txns.max}, crash: ${reacquired}/${held.size} re-acquired in ${point.reacquireMs ?? '–'} ms ` +
            `(limit ${reacquireLimitMs} ms) (${point.seconds} s)${failures.length ? ` — FAILED: ${failures.join('; ')}` : ''}`,
        );
      } finally {
        await Promise.all(workers.map((w) => w.stop()));
      }
    }

    if (sizes.balanceNamespaces > 0) balance = await runBalance(sizes, target, stamp, observer, spawn, safety, log);
  } finally {
    await Promise.all(all.map((w) => w.stop()));
    await dataSource.destroy();
  }

  const at = (n: number) => points.find((p) => p.namespaces === n)?.leader.p50;
  const p1 = at(1);
  const p1000 = at(1000);
  return {
    sizes,
    points,
    balance,
    safety,
    p50Ratio: p1 !== undefined && p1000 !== undefined ? round(p1000 / p1, 2) : null,
    joinLimitMs,
    deathLimitMs,
    errors,
    tickErrors,
  };
}

async function runBalance(
  sizes: GroupSizes,
  target: BenchTarget,
  stamp: string,
  observer: Observer,
  spawn: (index: number, config: GroupWorkerConfig) => Worker,
  safety: GroupSafety,
  log: (line: string) => void,
): Promise<BalanceResult> {
  const count = sizes.balanceNamespaces;
  const k = sizes.processes;
  const tickMs = sizes.intervalMs;
  const leaseMs = sizes.expireSeconds * 1000;
  const quietTicks = sizes.quietTicks ?? 3;
  const prefix = `grpbal-${stamp}-`;
  const config: GroupWorkerConfig = { target, prefix, count, expireSeconds: sizes.expireSeconds, intervalMs: sizes.intervalMs, balance: true };
  const workers: Worker[] = [];
  const even = (parts: number) => Array.from({ length: parts }, (_, i) => Math.floor(count / parts) + (i < count % parts ? 1 : 0)).sort((a, b) => a - b);
  const sorted = (counts: Map<string, number>, ids: string[]) => ids.map((id) => counts.get(id) ?? 0).sort((a, b) => a - b);
  const settled = async (ids: string[], expected: number[]) => {
    const counts = await observer.liveCounts(prefix);
    const total = [...counts.values()].reduce((a, b) => a + b, 0);
    return total === count && JSON.stringify(sorted(counts, ids)) === JSON.stringify(expected);
  };
  try {
    // The first takes every lease; the others join together once it leads (the last join: the
    // later of their start()s).
    workers.push(spawn(0, config));
    await workers[0]!.ready;
    for (let i = 1; i < k; i++) workers.push(spawn(i, config));
    await Promise.all(workers.map((w) => w.ready));
    const joinAt = await observer.now();
    const joinHostAt = Date.now();
    const ids = workers.map((w) => w.candidateId);
    const joinOk = await until(() => settled(ids, even(k)), joinLimitMsFor(sizes) + 20_000);
    const joinSeen = await observer.now();
    const trace = joinTrace(workers, joinHostAt, Date.now());
    await sleep(quietTicks * tickMs * 1.1);
    const afterJoin = await observer.history(prefix);
    const joinLast = joinOk ? lastChange(afterJoin, joinAt, joinSeen) : null;
    const joinCounts = sorted(await observer.liveCounts(prefix), ids);
    const changesAfterJoinSettle = changesBetween(afterJoin, joinSeen, Number.POSITIVE_INFINITY);

    // Death of the first process.
    const victim = workers[0]!;
    const killAt = await observer.now();
    victim.kill(Date.now());
    await victim.exit;
    const rest = ids.slice(1);
    const deathOk = await until(() => settled(rest, even(k - 1)), leaseMs + 3 * tickMs + 20_000);
    const deathSeen = await observer.now();
    await sleep(quietTicks * tickMs * 1.1);
    const afterDeath = await observer.history(prefix);
    const deathLast = deathOk ? lastChange(afterDeath, killAt, deathSeen) : null;
    const deathCounts = sorted(await observer.liveCounts(prefix), rest);
    const changesAfterDeathSettle = changesBetween(afterDeath, deathSeen, Number.POSITIVE_INFINITY);
    await Promise.all(workers.map((w) => w.stop()));
    checkEvents(workers, Date.now(), safety);
    checkHistory(await observer.history(prefix), safety);
    const result: BalanceResult = {
      namespaces: count,
      processes: k,
      joinSettleMs: joinLast === null ? (joinOk ? 0 : null) : round(joinLast - joinAt, 1),
      joinCounts,
      changesAfterJoinSettle,
      deathSettleMs: deathLast === null ? null : round(deathLast - killAt, 1),
      deathCounts,
      changesAfterDeathSettle,
      quietTicks,
      transactionsPerTick: (({ prune: _prune, ...count }) => count)(maxTransactions(workers, (ticks, i) => !handingOver(ticks, i))),
      handOverTicks: (({ max, ticks }) => ({ maxTransactions: max, ticks }))(maxTransactions(workers, handingOver)),
      joinTrace: trace,
    };
    log(
      `  group ${target.kind} balance ${count}: ${joinCounts.join('/')} ${result.joinSettleMs ?? '–'} ms after the last join, ` +
        `${deathCounts.join('/')} ${result.deathSettleMs ?? '–'} ms after a death; changes after settling ${changesAfterJoinSettle} / ${changesAfterDeathSettle}`,
    );
    return result;
  } finally {
    await Promise.all(workers.map((w) => w.stop()));
  }
}

const joinLimitMsFor = (sizes: GroupSizes) => 3 * sizes.intervalMs;
