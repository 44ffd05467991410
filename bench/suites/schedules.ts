/**
 * Schedules: what running slots costs a leader, and what idle schedules cost its ticks.
 *
 * Throughput: one LeaderElector on one connection leads; a schedule (`everyMs: 1000`,
 * `catchUp: 'all'`) is registered on it with a backlog of `backlog` slots — its newest recorded
 * slot seeded `backlog` seconds before the database clock's now, so the look-back finds that many
 * slots due — and the leader runs them back to back, oldest first: per slot a claim, the job, the
 * finish. Timed from the first slot's `'scheduleRun'` event to the last one's: `backlog − 1` whole
 * slots, each claimed, run and finished within the span. Two jobs take turns in each repetition:
 * an empty one (at-least-once: the claim, then the finish), and one that runs an empty
 * `run.transaction` (the claim, then the job's transaction, which records `done`). Over the same
 * span a logger counts the transactions that touched the runs table. Afterwards every backlog slot
 * must be `done` at attempt 1 in the runs table.
 *
 * Idle ticks: two LeaderElectors in this process, each on its own connection, lead a namespace
 * each: one has no schedule, the other `idleSchedules` schedules whose next slot is about 12 hours
 * away (by the database clock a tick read). Once every schedule's look-back (one statement when
 * its leadership starts) was sent, the statements each connection sends between two of its ticks
 * are kept for `ticks` ticks: their number, their text, whether any touched the runs table, and
 * each tick's own duration (the `'tick'` event's). Then the schedules are cancelled and the two
 * leaders swap roles for as many ticks again.
 */
import { ElectionService, LeaderElector, MAX_RUNS_LIMIT, type ElectorTick, type ScheduleRunEnded, type ScheduledRun } from 'gemstone-utils';
import type { DataSource } from 'typeorm';
import { BenchTarget, singleConnection } from '../lib/databases';
import { openLibrary } from '../lib/library';
import { seedDoneRun } from '../lib/seed';
import { median, nowMs, round, summarize } from '../lib/stats';
import { SentWindow, StatementLog } from '../lib/statement-log';

export interface SchedulesSizes {
  /** Slots of each backlog (at most MAX_CATCH_UP_RUNS, what one look-back runs). */
  backlog: number;
  /** Backlogs per job, the two jobs taking turns. */
  reps: number;
  /** Schedules of the idle leader. */
  idleSchedules: number;
  /** Ticks kept of each leader in the idle comparison. */
  ticks: number;
  /** Tick period of the idle comparison, ms. */
  intervalMs: number;
}

export type SlotJob = 'empty' | 'transaction';
export const SLOT_JOBS: readonly SlotJob[] = ['empty', 'transaction'];

/** One backlog run through. */
export interface BacklogRun {
  /** Slots timed: the backlog less the first. */
  slots: number;
  ms: number;
  slotsPerSecond: number;
  /** Transactions that touched the runs table, per timed slot. */
  runTransactionsPerSlot: number;
}

export interface SlotThroughput {
  reps: BacklogRun[];
  /** Median over repetitions. */
  slotsPerSecond: number;
  /** The most over repetitions. */
  runTransactionsPerSlot: number;
}

/** One leader of the idle comparison. */
export interface IdleLeader {
  schedules: number;
  /** Windows between two ticks kept, of both leaders in this role (those with the background pruning in them aside). */
  ticks: number;
  /** Statements per window: the fewest, the most, and those of the sequence most windows sent (the renewal). */
  statementsPerTick: { min: number; max: number; usual: number };
  /** Statements on the runs table in the kept windows. */
  runStatements: number;
  /** Tick duration, ms. */
  tickMs: { p50: number; p99: number };
  /** Windows left out because the background pruning (at most once a minute) ran in them. */
  prunedWindows: number;
  /** BEGINs refused while the other leader's connection held the SQLite write lock (retried; not counted as sent). */
  busyRetries: number;
  /** What most kept windows sent, in order (each statement's first 70 characters). */
  usual: string[];
  /** Kept windows that sent something else (a renewal that took the database's slower path, say), and the first of them. */
  other: { ticks: number; first?: string[] };
}

export interface IdlePhase {
  scheduled: string;
  p50With: number;
  p50Without: number;
}

export interface SchedulesResult {
  sizes: SchedulesSizes;
  throughput: Record<SlotJob, SlotThroughput>;
  /** `run.transaction` ÷ empty job slots per second: median of the per-repetition ratios. */
  transactionRatio: number;
  idle: {
    none: IdleLeader;
    idle: IdleLeader;
    /** Both sides' usual windows sent the same statements, in the same order (texts; parameters aside). */
    sameStatements: boolean;
    /** Tick p50 with the idle schedules ÷ without. */
    tickP50Ratio: number;
    /** Each phase: which leader had the schedules, the tick p50 (ms) with them and the other's without. */
    phases: IdlePhase[];
  };
  /** What went wrong: a slot not done once, an error event, a leader that did not lead. */
  failures: string[];
}

const S = 1000;

/** Resolves when `promise` does, or after `ms` with false (the timer does not keep the process alive). */
function within(promise: Promise<void>, ms: number): Promise<boolean> {
  return Promise.race([promise.then(() => true), new Promise<boolean>((resolve) => setTimeout(() => resolve(false), ms).unref())]);
}

/** A leader on its own connection, every statement it sends logged. */
async function leader(target: BenchTarget, ns: string, expireSeconds: number, intervalMs: number, failures: string[]) {
  const log = new StatementLog();
  const dataSource = await openLibrary(target, { ...singleConnection(target.kind), logger: log, logging: true });
  const elector = new LeaderElector({ dataSource, ns, expireSeconds, intervalMs });
  elector.on('error', (error: Error) => failures.push(`${ns}: ${error.message}`));
  await elector.start();
  if (!elector.isLeader) failures.push(`${ns}: the only candidate did not lead after start()`);
  return { log, dataSource, elector };
}

async function runBacklog(
  target: BenchTarget,
  dataSource: DataSource,
  elector: LeaderElector,
  log: StatementLog,
  name: string,
  job: SlotJob,
  size: number,
  failures: string[],
): Promise<BacklogRun | null> {
  const ns = elector.ns;
  await seedDoneRun(dataSource, target.kind, ns, name, size);
  const service = new ElectionService(dataSource);
  const newest = (await service.getRuns({ ns, name, limit: 1 }))[0]!.slot.getTime();
  const last = newest + size * S;
  const done: number[] = [];
  let txFirst = 0;
  let txLast = 0;
  let finish!: () => void;
  const finished = new Promise<void>((resolve) => (finish = resolve));
  const onRun = (event: ScheduleRunEnded) => {
    if (event.name !== name || event.slot.getTime() > last) return;
    if (event.state !== 'done') failures.push(`${name}: slot ${event.slot.toISOString()} ended ${event.state}`);
    done.push(nowMs());
    // The COMMIT that recorded this slot is logged before the event: counted already.
    if (done.length === 1) txFirst = log.runTransactions;
    if (done.length === size) {
      txLast = log.runTransactions;
      finish();
    }
  };
  elector.on('scheduleRun', onRun);
  const schedule = elector.schedule(
    { name, everyMs: S, catchUp: 'all', catchUpWindowMs: 2 * 3600 * S },
    job === 'empty' ? () => undefined : (run: ScheduledRun) => run.transaction(async () => undefined),
  );
  const ok = await within(finished, 30 * S + size * 100);
  elector.off('scheduleRun', onRun);
  await schedule.cancel();
  const runs = await service.getRuns({ ns, name, limit: MAX_RUNS_LIMIT });
  const once = runs.filter((r) => r.slot.getTime() > newest && r.slot.getTime() <= last && r.state === 'done' && r.attempt === 1).length;
  if (once !== size) failures.push(`${name}: ${once} of the ${size} backlog slots done at attempt 1`);
  if (!ok) {
    failures.push(`${name}: ${done.length} of ${size} backlog slots ran within the wait`);
    return null;
  }
  const ms = done[done.length - 1]! - done[0]!;
  const slots = size - 1;
  return { slots, ms: round(ms, 1), slotsPerSecond: round((slots / ms) * S, 1), runTransactionsPerSlot: round((txLast - txFirst) / slots, 3) };
}

async function runThroughput(target: BenchTarget, sizes: SchedulesSizes, stamp: string, failures: string[], log: (line: string) => void) {
  const l = await leader(target, `sched-bench-${stamp}`, 30, S, failures);
  const runs: Record<SlotJob, BacklogRun[]> = { empty: [], transaction: [] };
  try {
    for (let rep = 0; rep < sizes.reps; rep++) {
      for (const job of SLOT_JOBS) {
        const run = await runBacklog(target, l.dataSource, l.elector, l.log, `${job}-${rep}`, job, sizes.backlog, failures);
        if (run) runs[job].push(run);
      }
      log(`  schedules ${target.kind}: backlog repetition ${rep + 1}/${sizes.reps}: ${SLOT_JOBS.map((j) => `${j} ${runs[j][rep]?.slotsPerSecond ?? '–'} slots/s`).join(', ')}`);
    }
  } finally {
    await l.elector.stop();
    await l.dataSource.destroy();
  }
  const throughput = {} as Record<SlotJob, SlotThroughput>;
  for (const job of SLOT_JOBS) {
    const reps = runs[job];
    throughput[job] = {
      reps,
      slotsPerSecond: reps.length ? median(reps.map((r) => r.slotsPerSecond)) : Number.NaN,
      runTransactionsPerSlot: reps.length ? Math.max(...reps.map((r) => r.runTransactionsPerSlot)) : Number.NaN,
    };
  }
  const pairs = runs.empty.map((e, i) => (runs.transaction[i] ? runs.transaction[i]!.slotsPerSecond / e.slotsPerSecond : Number.NaN)).filter(Number.isFinite);
  return { throughput, transactionRatio: pairs.length ? round(median(pairs), 3) : Number.NaN };
}

/** What a connection sent between two ticks of its leader, and the later tick. */
type Window = { window: SentWindow; tick: ElectorTick };

/** The windows between two ticks, and each tick's duration, from the moment `keep` is called. */
function tickRecorder(elector: LeaderElector, log: StatementLog) {
  const windows: Window[] = [];
  let keeping = false;
  elector.on('tick', (tick) => {
    const window = log.take();
    if (keeping) windows.push({ window, tick });
  });
  return {
    windows,
    /** Keeps windows from the next whole one on (the ones kept before are dropped). */
    keep() {
      keeping = false;
      windows.length = 0;
      elector.once('tick', () => (keeping = true));
    },
  };
}

function describeLeader(schedules: number, windows: Window[], failures: string[]): IdleLeader {
  const kept = windows.filter((w) => !w.window.pruned);
  for (const { tick } of kept) if (tick.outcome !== 'renewed') failures.push(`${tick.ns}: a measured tick ${tick.outcome}, not renewed`);
  const counts = kept.map((w) => w.window.statements.length);
  const durations = summarize(kept.map((w) => w.tick.durationSeconds * S));
  const seen = new Map<string, number>();
  for (const w of kept) seen.set(JSON.stringify(w.window.statements), (seen.get(JSON.stringify(w.window.statements)) ?? 0) + 1);
  const usual = JSON.parse([...seen.entries()].sort((a, b) => b[1] - a[1])[0]?.[0] ?? '[]') as string[];
  const others = kept.filter((w) => JSON.stringify(w.window.statements) !== JSON.stringify(usual));
  const short = (statements: string[]) => statements.map((statement) => statement.slice(0, 70));
  return {
    schedules,
    ticks: kept.length,
    statementsPerTick: { min: Math.min(...counts), max: Math.max(...counts), usual: usual.length },
    runStatements: kept.reduce((sum, w) => sum + w.window.runStatements, 0),
    tickMs: { p50: round(durations.p50), p99: round(durations.p99) },
    prunedWindows: windows.length - kept.length,
    busyRetries: windows.reduce((sum, w) => sum + w.window.busyRetries, 0),
    usual: short(usual),
    other: { ticks: others.length, ...(others[0] ? { first: short(others[0].window.statements) } : {}) },
  };
}

/**
 * Two phases, the leaders swapping roles: the idle schedules on the second leader while the first
 * has none, then (those cancelled) on the first while the second has none — so that whatever
 * tells the two leaders apart (the order they tick in, their connection) falls on both sides.
 */
async function runIdle(target: BenchTarget, sizes: SchedulesSizes, stamp: string, failures: string[]) {
  const leaders = [await leader(target, `sched-idle-a-${stamp}`, 10, sizes.intervalMs, failures), await leader(target, `sched-idle-b-${stamp}`, 10, sizes.intervalMs, failures)];
  const recorders = leaders.map((l) => tickRecorder(l.elector, l.log));
  const withSchedules: Window[] = [];
  const without: Window[] = [];
  const phases: IdlePhase[] = [];
  try {
    // The next slot about 12 h away by the database clock, whatever the hour: daily at now's hour + 12 (UTC).
    const databaseNow = await new Promise<Date>((resolve) => leaders[0]!.elector.once('tick', (tick) => resolve(tick.clockSkew?.databaseNow ?? new Date(Number.NaN))));
    const hour = (databaseNow.getUTCHours() + 12) % 24;
    for (const [busy, other] of [
      [1, 0],
      [0, 1],
    ] as const) {
      const l = leaders[busy]!;
      const lookBacks = l.log.lookBacks + sizes.idleSchedules;
      const schedules = Array.from({ length: sizes.idleSchedules }, (_, i) =>
        l.elector.schedule({ name: `idle-${i}`, cron: `0 ${hour} * * *` }, () => void failures.push(`idle-${i}: an idle schedule ran`)),
      );
      // By construction no slot comes due while measured; one that ran anyway is a failure (its job says so).
      const soon = schedules.filter((schedule) => (schedule.nextSlot()?.getTime() ?? Number.POSITIVE_INFINITY) < databaseNow.getTime() + 11 * 3600 * S);
      if (soon.length) failures.push(`idle: ${soon.length} idle schedules come due within 11 h`);
      const lookedBack = async () => {
        while (l.log.lookBacks < lookBacks) await new Promise((resolve) => setTimeout(resolve, 20));
      };
      if (!(await within(lookedBack(), 30 * S))) failures.push(`idle: ${l.log.lookBacks - lookBacks + sizes.idleSchedules} of ${sizes.idleSchedules} look-backs sent`);
      for (const r of recorders) r.keep();
      const enough = async () => {
        while (recorders.some((r) => r.windows.length < sizes.ticks)) await new Promise((resolve) => setTimeout(resolve, sizes.intervalMs / 2));
      };
      if (!(await within(enough(), sizes.ticks * sizes.intervalMs * 4 + 30 * S))) failures.push(`idle: fewer than ${sizes.ticks} ticks of each leader within the wait`);
      const mine = recorders[busy]!.windows.slice(0, sizes.ticks);
      const theirs = recorders[other]!.windows.slice(0, sizes.ticks);
      withSchedules.push(...mine);
      without.push(...theirs);
      const p50 = (windows: Window[]) => round(summarize(windows.map((w) => w.tick.durationSeconds * S)).p50);
      phases.push({ scheduled: l.elector.ns, p50With: p50(mine), p50Without: p50(theirs) });
      await Promise.all(schedules.map((schedule) => schedule.cancel()));
    }
  } finally {
    await Promise.all(leaders.map((l) => l.elector.stop()));
    await Promise.all(leaders.map((l) => l.dataSource.destroy()));
  }
  const none = describeLeader(0, without, failures);
  const idle = describeLeader(sizes.idleSchedules, withSchedules, failures);
  const sameStatements = JSON.stringify(none.usual) === JSON.stringify(idle.usual);
  return { none, idle, sameStatements, tickP50Ratio: round(idle.tickMs.p50 / none.tickMs.p50, 3), phases };
}

export async function runSchedules(target: BenchTarget, sizes: SchedulesSizes, log: (line: string) => void): Promise<SchedulesResult> {
  const stamp = Date.now().toString(36);
  const failures: string[] = [];
  const { throughput, transactionRatio } = await runThroughput(target, sizes, stamp, failures, log);
  const idle = await runIdle(target, sizes, stamp, failures);
  log(
    `  schedules ${target.kind}: ${SLOT_JOBS.map((j) => `${j} job ${throughput[j].slotsPerSecond} slots/s (${throughput[j].runTransactionsPerSlot} runs-table txns/slot)`).join(', ')}; ` +
      `statements per tick ${idle.none.statementsPerTick.max} without schedules, ${idle.idle.statementsPerTick.min}..${idle.idle.statementsPerTick.max} with ${sizes.idleSchedules} idle (same: ${idle.sameStatements}), tick p50 ratio ${idle.tickP50Ratio}`,
  );
  return { sizes, throughput, transactionRatio, idle, failures };
}
