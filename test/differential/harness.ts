/**
 * Runs schedules against a database and the reference model side by side: every operation's
 * answer is compared with the model's, and the rows (leader, candidates, history, fenced writes)
 * after each concurrent round and at the end. Concurrent rounds are accepted when SOME order of
 * their operations, applied to the model, gives the same answers and rows (a linearizability
 * check by permutation).
 *
 * Time: leases last LEASE_UNITS + ½ time units, and "time passes" moves the database clock by
 * whole units (every stored instant of the schedule moves back), so no decision of a schedule is
 * ever within half a unit of a lease's end — except in hold rounds, where a lease is made to end
 * while a waiter is blocked on purpose. The model's clock is the shifted time plus the real time
 * elapsed since the schedule began, so instants compare within a tolerance.
 */
import fc from 'fast-check';
import { performance } from 'perf_hooks';
import type { QueryRunner } from 'typeorm';
import { compareNs } from '../../dist/src/election/group-store';
import * as model from './model';
import type { ModelState } from './model';
import { holdWaiters, scheduleArb, scheduleText, stepText, type Capabilities, type Schedule, type Step } from './schedule';
import * as w from './world';
import type { DbRows, Observed, World } from './world';
import { isOpen } from './known-defects';

/** One unit of "time passes" (ms). */
export const TIME_UNIT_MS = 20_000;
/** Leases and candidate rows last 2.5 units: never within half a unit of a decision. */
export const EXPIRE_SECONDS = (2.5 * TIME_UNIT_MS) / 1000;
/** Instants compare within this (ms): real time the model's clock approximates. */
const TOLERANCE_MS = 3000;
/** Hold rounds: the held lease ends this long after the holder's lock, which it keeps this long. */
const LEASE_ENDS_MS = 100;
const HOLD_MS = 300;
/** A waiter that took less than this cannot have waited for the holder. */
const QUICK_MS = 100;

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * What a hold round's waiters did while the holder held its lock (recorded where asked, see
 * `runSchedule`): how many the database showed waiting for the holder's lock before it
 * committed, and which answered only after that commit.
 */
export interface HoldWaits {
  waiters: string[];
  /** Sessions the database showed waiting for a lock of the holder's, at most (PostgreSQL, MySQL/MariaDB). */
  blocked: number;
  /** Per waiter: it answered after the holder's commit. */
  answeredAfterCommit: boolean[];
}

/** A prepared operation: names resolved, the fence's term chosen from the model. */
interface Prepared {
  step: Step;
  proc: number;
  c: string;
  run: () => Promise<Observed>;
  /**
   * Applies the operation to the model at `now`; `skipped`: namespaces a tick left unknown;
   * `seen`: where it read the other candidates' rows from (see `model.CandidateView`).
   */
  apply: (m: ModelState, now: number, skipped: ReadonlySet<string>, seen?: ModelState) => Observed;
  /** The namespaces whose leader rows the operation may lock. */
  touches: readonly string[];
  /** It runs in a caller's transaction (a conflict rolls it back: allowed, no effect). */
  callerTx: boolean;
  /** A fenced transaction (assertLeader): its own candidate's tick must never lose a lease to it. */
  fences?: boolean;
  /** It reads the other candidates' rows (besides `elect` and `tick` steps: a holder's elect). */
  reads?: boolean;
}

class Mismatch extends Error {
  /** The step that went wrong (undefined: the rows at the end). */
  atStep: number | undefined;
}

export class ScheduleRun {
  model: ModelState;
  readonly t0 = performance.now();
  shift = 0;
  readonly trace: string[] = [];
  readonly known = new Map<string, Set<string>>();

  constructor(
    readonly world: World,
    readonly names: w.Names,
    /** Hold rounds may run a group's tick beside its own candidate's fenced transaction. */
    readonly tickBesideOwnFence = true,
    /** Lapsed terms closed before anyone takes over are tolerated (open defect 8, SQLite). */
    readonly tolerateEarlyCloses = isOpen(8),
    /**
     * Where given: each hold round keeps its lock until the database shows every waiter waiting
     * for it (or each answered), HOLD_MS at least, and records what it saw here.
     */
    readonly holdWaits?: HoldWaits[],
  ) {
    this.model = model.emptyModel(world.expireSeconds * 1000);
  }

  now(): number {
    return this.shift + (performance.now() - this.t0);
  }

  /** Names as indices, for messages. */
  show(value: unknown): string {
    let text = JSON.stringify(value);
    this.names.ns.forEach((name, i) => (text = text.split(JSON.stringify(name).slice(1, -1)).join(`ns${i}`)));
    this.names.c.forEach((id, i) => (text = text.split(id).join(`c${i}`)));
    return text;
  }

  #proc(i: number): w.Process {
    return this.world.procs[i % this.world.procs.length]!;
  }

  /** Whether a lapsed term may already be closed before anyone takes over (open defect 8). */
  #earlyCloses(): boolean {
    return this.world.kind === 'sqlite' && this.tolerateEarlyCloses;
  }

  /** The namespaces a group (one per process and candidate) has seen rows of. */
  #known(proc: number, c: string): Set<string> {
    const key = `${proc % this.world.procs.length}:${c}`;
    let known = this.known.get(key);
    if (!known) this.known.set(key, (known = new Set()));
    return known;
  }

  #termOf(ns: string, choice: 'none' | 'current' | 'previous' | 'next'): number | undefined {
    const term = this.model.ns.get(ns)?.leader?.term;
    if (choice === 'none' || term === undefined) return undefined;
    const t = choice === 'current' ? term : choice === 'previous' ? term - 1 : term + 1;
    return t >= 0 ? t : undefined;
  }

  prepare(step: Step): Prepared {
    const { names } = this;
    const folds = this.world.kind !== 'sqlite';
    switch (step.op) {
      case 'register': {
        const p = this.#proc(step.proc);
        const ns = names.ns[step.ns]!;
        const c = names.c[step.c]!;
        return {
          step, proc: step.proc, c, touches: [], callerTx: false,
          run: () => w.register(p, ns, c, step.fields),
          apply: (m, now) => (model.touch(m, ns, c, { ...step.fields, metadata: w.metadataOf(step.fields.metadata) }, now), { kind: 'void' }),
        };
      }
      case 'elect': {
        const p = this.#proc(step.proc);
        const ns = names.ns[step.ns]!;
        const c = names.c[step.c]!;
        return {
          step, proc: step.proc, c, touches: [ns], callerTx: step.path === 'session' || step.path === 'locked-session',
          run: () => w.elect(p, ns, c, step.fields, step.path),
          apply: (m, now, _skipped, seen) => ({ kind: 'elect', ...model.elect(m, ns, c, { ...step.fields, metadata: w.metadataOf(step.fields.metadata) }, now, seen) }),
        };
      }
      case 'resign':
      case 'handOver':
      case 'unregister': {
        const p = this.#proc(step.proc);
        const ns = names.ns[step.ns]!;
        const c = names.c[step.c]!;
        const reason = step.op === 'resign' ? 'resigned' : step.op === 'handOver' ? 'handed-over' : 'unregistered';
        return {
          step, proc: step.proc, c, touches: [ns], callerTx: step.session,
          run: () => w.vacateOne(p, step.op as 'resign', ns, c, step.session),
          apply: (m, now) => {
            const result = model.vacate(m, ns, c, reason, now);
            return step.op === 'unregister' ? { kind: 'void' } : { kind: 'bool', value: result };
          },
        };
      }
      case 'assert': {
        const p = this.#proc(step.proc);
        const ns = names.ns[step.ns]!;
        const c = names.c[step.c]!;
        const term = this.#termOf(ns, step.term);
        return {
          step, proc: step.proc, c, touches: [ns], callerTx: true, fences: true,
          run: () => w.fence(p, ns, c, term),
          apply: (m, now) => {
            const v = model.fence(m, ns, c, term, now, true);
            return { kind: 'fence', pass: v.pass, leaderId: v.leaderId, term: v.term };
          },
        };
      }
      case 'tick': {
        const p = this.#proc(step.proc);
        const c = names.c[step.c]!;
        const namespaces = step.nss.map((i) => names.ns[i]!).sort(compareNs);
        const release = new Map(step.release.map((i) => [names.ns[i]!, step.reason] as const));
        const metadata = step.metadata ? w.metadataOf(1) : undefined;
        const groupKnown = this.#known(step.proc, c);
        return {
          step, proc: step.proc, c, touches: [...namespaces, ...release.keys()], callerTx: false,
          run: () => w.tick(p, { namespaces, id: c, priority: step.priority, eligible: step.eligible, metadata, balance: step.balance, expireSeconds: this.world.expireSeconds }, release, groupKnown),
          apply: (m, now, skipped, seen) => {
            const r = model.tick(m, { namespaces, candidateId: c, priority: step.priority, eligible: step.eligible, metadata, balance: step.balance, release, skipped }, now, seen);
            return {
              kind: 'tick',
              outcomes: r.outcomes,
              members: r.members,
              unregistered: r.unregistered,
              released: folds ? r.released.map((x) => `${x.ns}#${x.term}`).sort() : [...r.releasedLive].sort(),
            };
          },
        };
      }
      case 'vacate': {
        const p = this.#proc(step.proc);
        const c = names.c[step.c]!;
        const namespaces = step.nss.map((i) => names.ns[i]!);
        return {
          step, proc: step.proc, c, touches: namespaces, callerTx: false,
          run: () => w.groupVacate(p, namespaces, c, step.reason, step.unregister),
          apply: (m, now) => ({ kind: 'vacate', live: model.groupVacate(m, [...namespaces].sort(compareNs), c, step.reason, step.unregister, now).live }),
        };
      }
      case 'read': {
        const p = this.#proc(step.proc);
        const ns = names.ns[step.ns]!;
        const c = names.c[step.c]!;
        return {
          step, proc: step.proc, c, touches: [], callerTx: false,
          run: () => w.read(p, ns, c),
          apply: (m, now) => ({ kind: 'read', ...model.read(m, ns, c, now) }),
        };
      }
      default:
        throw new Error(`not a single operation: ${step.op}`);
    }
  }

  fail(message: string): never {
    throw new Mismatch(`${message}\n\ntrace:\n${this.trace.join('\n')}`);
  }

  async runStep(step: Step, index: number): Promise<void> {
    const label = `  ${index + 1}. ${stepText(step)}`;
    switch (step.op) {
      case 'time': {
        await this.#shift(step.units * TIME_UNIT_MS);
        this.trace.push(label);
        return;
      }
      case 'race':
        return this.#race(step, label);
      case 'hold':
        if (step.lapse) await this.#shift(3 * TIME_UNIT_MS);
        return this.#hold(step, label);
      case 'busy':
        return this.#busy(step, label);
      default: {
        const prepared = this.prepare(step);
        const now = this.now();
        const observed = await w.settle(prepared.run);
        const expected = prepared.apply(this.model, now, new Set());
        this.trace.push(`${label}\n       → ${this.show(observed)}`);
        if (!same(observed, expected)) this.fail(`step ${index + 1} (${stepText(step)}) answered\n  ${this.show(observed)}\nthe model answers\n  ${this.show(expected)}`);
      }
    }
  }

  async #shift(ms: number): Promise<void> {
    await w.shiftTime(this.world, this.names.ns, ms);
    this.shift += ms;
  }

  async #busy(step: Extract<Step, { op: 'busy' }>, label: string): Promise<void> {
    const prepared = this.prepare(step.step);
    const p = this.#proc(prepared.proc);
    const lock = await w.holdWriteLock(this.world);
    p.logger.arm(step.release, () => lock.release());
    const fallback = setTimeout(() => lock.release(), 300);
    const now = this.now();
    let observed: Observed;
    try {
      observed = await w.settle(prepared.run);
    } finally {
      clearTimeout(fallback);
      p.logger.disarm();
      lock.release();
      await lock.released;
    }
    const expected = prepared.apply(this.model, now, new Set());
    this.trace.push(`${label}\n       → ${this.show(observed)}`);
    if (!same(observed, expected)) this.fail(`busy step (${stepText(step.step)}) answered\n  ${this.show(observed)}\nthe model answers\n  ${this.show(expected)}`);
  }

  async #race(step: Extract<Step, { op: 'race' }>, label: string): Promise<void> {
    const prepared = step.steps.map((s) => this.prepare(s));
    const starts: number[] = [];
    const results = await Promise.all(
      prepared.map(async (p, i) => {
        starts[i] = this.now();
        return w.settle(p.run);
      }),
    );
    this.trace.push(`${label}\n       → ${results.map((r) => this.show(r)).join('\n         ')}`);
    const rows = await w.readRows(this.world, this.names.ns);
    const at = this.now();
    const ops = prepared.map((p, i) => ({ p, observed: results[i]!, now: () => starts[i]! }));
    this.#linearize(ops, rows, at, `race (${stepText(step)})`);
  }

  async #hold(step: Extract<Step, { op: 'hold' }>, label: string): Promise<void> {
    const { holder } = step;
    const hp = this.#proc(holder.proc);
    const ns = this.names.ns[holder.ns]!;
    // -1: the held namespace's leader (candidate 0 without one), as the round begins.
    const leaderIndex = this.names.c.indexOf(this.model.ns.get(ns)?.leader?.leaderId ?? '');
    const holderIndex = holder.c === -1 ? Math.max(0, leaderIndex) : holder.c;
    const hc = this.names.c[holderIndex]!;
    const term = this.#termOf(ns, 'current');
    const waiterSteps = holdWaiters(step.waiters, holderIndex, holder.kind, this.tickBesideOwnFence);
    // A group ticking beside its own fenced transaction holds that lease: it has seen the row
    // (MySQL/MariaDB: no insert of a row it knows, which would wait for the lock).
    for (const s of waiterSteps) {
      if (s.op === 'tick' && s.c === holderIndex && this.model.ns.get(ns)?.leader) this.#known(s.proc, hc).add(ns);
    }
    const waiters = waiterSteps.map((s) => this.prepare(s));
    const runner: QueryRunner = hp.ds.createQueryRunner();
    let held: Observed;
    let tHold = 0;
    let tShort = 0;
    let tCommit = 0;
    let tCommitSent = 0;
    const starts: number[] = [];
    const ends: number[] = [];
    let results: Observed[];
    let blocked = 0;
    try {
      await runner.connect();
      const session = this.holdWaits ? await w.sessionOf(this.world.kind, runner) : undefined;
      await runner.startTransaction();
      tHold = this.now();
      held = await w.settle(() => (holder.kind === 'assert' ? w.fenceIn(hp, runner, ns, hc, term) : w.elect(hp, ns, hc, {}, 'session', runner)));
      await w.shortenLease(this.world, runner, ns, LEASE_ENDS_MS);
      tShort = this.now();
      const pending = waiters.map(async (p, i) => {
        starts[i] = this.now();
        const result = await w.settle(p.run);
        ends[i] = this.now();
        return result;
      });
      const holdMs = sleep(HOLD_MS);
      if (session !== undefined) blocked = await this.#waitersBlocked(session, waiters.length, ends);
      await holdMs;
      // The waiter is let go when the server runs the COMMIT; its answer can reach this process
      // before the holder's own reply does. So "after the commit" means after it was sent.
      tCommitSent = this.now();
      await runner.commitTransaction();
      tCommit = this.now();
      results = await Promise.all(pending);
    } finally {
      if (runner.isTransactionActive) await runner.rollbackTransaction().catch(() => undefined);
      await runner.release();
    }
    this.holdWaits?.push({ waiters: waiterSteps.map(stepText), blocked, answeredAfterCommit: ends.map((end) => end >= tCommitSent) });
    this.trace.push(
      `${label}\n       holder c${holderIndex} → ${this.show(held)}\n       ${waiterSteps.map((w, i) => `${stepText(w)} → ${this.show(results[i])}`).join('\n       ')}`,
    );
    if (held.kind === 'error') this.fail(`the holder's ${holder.kind} failed: ${held.message}`);
    const holderOp = {
      p: {
        step: { op: 'read', c: holderIndex, ns: holder.ns, proc: holder.proc } as Step,
        proc: holder.proc,
        c: hc,
        touches: [ns],
        callerTx: true,
        fences: holder.kind === 'assert',
        run: async () => held,
        reads: holder.kind === 'elect',
        apply: (m: ModelState, _now: number, _skipped: ReadonlySet<string>, seen?: ModelState): Observed => {
          const answer: Observed =
            holder.kind === 'assert'
              ? (() => {
                  const v = model.fence(m, ns, hc, term, tHold, true);
                  return { kind: 'fence' as const, pass: v.pass, leaderId: v.leaderId, term: v.term };
                })()
              : { kind: 'elect', ...model.elect(m, ns, hc, {}, tHold, seen) };
          model.shortenLease(m, ns, tShort + LEASE_ENDS_MS, tShort);
          return answer;
        },
      } as Prepared,
      observed: held,
      now: () => tHold,
      holder: true,
    };
    const rows = await w.readRows(this.world, this.names.ns);
    const at = this.now();
    // A waiter that answered only after the holder committed, having taken longer than any
    // unblocked call, was blocked by the holder's lock (they were sent at once): it comes after
    // the holder and decides at its commit. (One that answered earlier may come before or after:
    // a holder that read a missing row locked nothing. Nor group ticks: a PostgreSQL tick reads
    // as of its statement's start even when its insert of a missing row waited for the holder,
    // and decides nothing about a row that changed after that start.)
    const ops = [
      holderOp,
      ...waiters.map((p, i) => ({
        p,
        observed: results[i]!,
        now: () => starts[i]!,
        afterHolder: () => Math.max(starts[i]!, tCommit),
        // The held row's lock is the holder's all along: waiters only queue for it.
        locks: p.touches.filter((t) => t !== ns),
        place: p.step.op !== 'tick' && ends[i]! >= tCommit && ends[i]! - starts[i]! > QUICK_MS ? ('after' as const) : undefined,
      })),
    ];
    this.#linearize(ops, rows, at, `hold round (${stepText(step)})`);
  }

  /**
   * Polls the database until it shows `count` sessions waiting for a lock of the holder's
   * `session`, or every waiter answered (one that answered while the lock was held never waited
   * for it), 10 s at most; returns the most it showed at once.
   */
  async #waitersBlocked(session: number, count: number, ends: readonly number[]): Promise<number> {
    let most = 0;
    const until = performance.now() + 10_000;
    while (most < count && ends.filter((e) => e !== undefined).length < count && performance.now() < until) {
      most = Math.max(most, await w.blockedBy(this.world.kind, this.world.observer, session));
      if (most < count) await sleep(w.blockedPollMs(this.world.kind));
    }
    return most;
  }

  /**
   * Accepts a concurrent round when some order of its operations explains every answer and the
   * rows after it. A waiter ordered after the holder decides at the holder's commit (it waited).
   */
  #linearize(
    ops: Array<{ p: Prepared; observed: Observed; now: () => number; afterHolder?: () => number; holder?: boolean; place?: 'after'; locks?: readonly string[] }>,
    rows: DbRows,
    at: number,
    what: string,
  ): void {
    const failures: string[] = [];
    const holderAt = ops.findIndex((o) => o.holder);
    const before = model.cloneModel(this.model);
    // Which operations read the other candidates' rows (without a lock, from a snapshot).
    const readers = new Set(ops.map((o, i) => (o.p.step.op === 'elect' || o.p.step.op === 'tick' || o.p.reads ? i : -1)).filter((i) => i >= 0));
    for (const [order, snapshots] of [...permutations(ops.map((_, i) => i))].flatMap((o) => [...snapshotChoices(o, readers)].map((v) => [o, v] as const))) {
      if (holderAt >= 0) {
        const h = order.indexOf(holderAt);
        if (order.some((i, k) => ops[i]!.place === 'after' && k < h)) continue;
      }
      const m = model.cloneModel(this.model);
      // The state after each prefix of the order: what a reader's snapshot can show.
      const states: model.ModelState[] = [before];
      let problem: string | undefined;
      let holderDone = false;
      for (const [k, i] of order.entries()) {
        if (k > 0) states.push(model.cloneModel(m));
        const op = ops[i]!;
        if (op.observed.kind === 'error' && op.observed.aborted && op.p.callerTx) continue;
        const now = holderDone && op.afterHolder ? op.afterHolder() : op.now();
        // A tick may leave alone a namespace another transaction of this round had locked (or
        // inserted first), and one its own candidate's fenced transaction locked unless it holds
        // that lease: its own fenced transactions never cost it a lease.
        const others = new Set(ops.filter((o) => o !== op && !(o.p.c === op.p.c && o.p.fences)).flatMap((o) => o.locks ?? o.p.touches));
        const ownFenced = new Set(ops.filter((o) => o !== op && o.p.c === op.p.c && o.p.fences).flatMap((o) => o.locks ?? o.p.touches));
        // (Judged when the round began: the holder's own test SQL shortens the lease it fences.)
        const holds = (ns: string) => {
          const leader = before.ns.get(ns)?.leader;
          return leader?.leaderId === op.p.c && leader.leaseExpiresAt !== null && leader.leaseExpiresAt > op.now();
        };
        // ... and one another candidate's operation of this round wrote, the held row included: a
        // PostgreSQL tick that waits for its own live lease's row (held by its fence) can find it
        // taken over by a waiter that got the lock first, a row changed after its statement's
        // snapshot, which it decides nothing about (seed 1366713891: `own` waited, c1's locked
        // elect took term 2 first, the tick answered ns2 unknown).
        const touchedByOthers = new Set(ops.filter((o) => o !== op && o.p.c !== op.p.c).flatMap((o) => o.p.touches));
        const skipped = new Set(
          op.observed.kind === 'tick'
            ? op.observed.outcomes
                .filter((o) => o.term === null && (others.has(o.ns) || touchedByOthers.has(o.ns) || (ownFenced.has(o.ns) && !holds(o.ns))))
                .map((o) => o.ns)
            : [],
        );
        const expected = op.p.apply(m, now, skipped, snapshots[k]! < k ? states[snapshots[k]!] : undefined);
        if (op.holder) holderDone = true;
        if (!same(op.observed, expected)) {
          problem = `${stepText(op.p.step)} answered ${this.show(op.observed)}, the model in this order ${this.show(expected)}`;
          break;
        }
      }
      if (problem === undefined) {
        // The operations of a round wrote at some moment between their start and the round's end.
        const diff = compareRows(m, rows, at, at - Math.min(...ops.map((o) => o.now())), this.#earlyCloses());
        if (diff.length === 0) {
          this.model = m;
          return;
        }
        problem = `rows differ: ${this.show(diff.slice(0, 6))}`;
      }
      if (snapshots.every((snapshot, k) => snapshot === k)) failures.push(`order ${order.map((i) => i + 1).join(',')}: ${problem}`);
    }
    this.fail(`no order of the ${what} explains what the database did:\n  ${failures.join('\n  ')}`);
  }

  async finish(): Promise<void> {
    const rows = await w.readRows(this.world, this.names.ns);
    const diff = compareRows(this.model, rows, this.now(), 0, this.#earlyCloses());
    if (diff.length > 0) this.fail(`the rows after the schedule differ from the model's:\n  ${diff.map((d) => this.show(d)).join('\n  ')}`);
  }
}

/**
 * Where each operation of `order` reads the other candidates' rows from: the state after the
 * first `snapshot` operations of the order, at most its own position `k` (k: the state it
 * decides on). Candidate rows are read without a lock, so a reader sees what had committed when
 * its statement began: every operation ordered before it, or only some prefix of them when they
 * ran beside it (two ticks that each register and read members in one statement see each other's
 * rows in neither order). Non-readers always read the state they decide on.
 */
function* snapshotChoices(order: readonly number[], readers: ReadonlySet<number>): Generator<number[]> {
  const choose = (k: number): number[][] => {
    if (k === order.length) return [[]];
    const own = readers.has(order[k]!) ? Array.from({ length: k + 1 }, (_, s) => s) : [k];
    return own.flatMap((snapshot) => choose(k + 1).map((rest) => [snapshot, ...rest]));
  };
  yield* choose(0);
}

function* permutations(items: number[]): Generator<number[]> {
  if (items.length <= 1) {
    yield items;
    return;
  }
  for (let i = 0; i < items.length; i++) {
    const rest = [...items.slice(0, i), ...items.slice(i + 1)];
    for (const tail of permutations(rest)) yield [items[i]!, ...tail];
  }
}

/** Deep equality of answers (tick outcomes are sorted by namespace on both sides). */
function same(a: Observed, b: Observed): boolean {
  return JSON.stringify(a) === JSON.stringify(b);
}

interface RowsView {
  leaders: Map<string, { leaderId: string | null; term: number; live: boolean; leaseIn: number | null }>;
  candidates: Map<string, { priority: number; eligible: boolean; metadata: string | null; live: boolean; expiresIn: number }>;
  history: Map<string, { leaderId: string; endReason: string | null; acquiredIn: number; endedIn: number | null }>;
  fenced: string[];
}

function viewOfModel(m: ModelState, now: number): RowsView {
  const view: RowsView = { leaders: new Map(), candidates: new Map(), history: new Map(), fenced: [] };
  for (const [ns, s] of m.ns) {
    if (s.leader) {
      const leaseIn = s.leader.leaseExpiresAt === null ? null : s.leader.leaseExpiresAt - now;
      view.leaders.set(ns, { leaderId: s.leader.leaderId, term: s.leader.term, live: s.leader.leaderId !== null && leaseIn !== null && leaseIn > 0, leaseIn });
    }
    for (const [id, c] of s.candidates) {
      view.candidates.set(`${ns}|${id}`, { priority: c.priority, eligible: c.eligible, metadata: c.metadata, live: c.expiresAt - now > 0, expiresIn: c.expiresAt - now });
    }
    for (const [term, h] of s.history) {
      view.history.set(`${ns}|${term}`, { leaderId: h.leaderId, endReason: h.endReason, acquiredIn: h.acquiredAt - now, endedIn: h.endedAt === null ? null : h.endedAt - now });
    }
  }
  view.fenced = m.fenced.map((f) => `${f.ns}|${f.term}|${f.writer}`).sort();
  return view;
}

function viewOfRows(rows: DbRows): RowsView {
  const view: RowsView = { leaders: new Map(), candidates: new Map(), history: new Map(), fenced: [] };
  for (const r of rows.leaders) view.leaders.set(r.ns, { leaderId: r.leaderId, term: r.term, live: r.leaderId !== null && r.leaseIn !== null && r.leaseIn > 0, leaseIn: r.leaseIn });
  for (const r of rows.candidates) view.candidates.set(`${r.ns}|${r.id}`, { priority: r.priority, eligible: r.eligible, metadata: r.metadata, live: r.expiresIn > 0, expiresIn: r.expiresIn });
  for (const r of rows.history) view.history.set(`${r.ns}|${r.term}`, { leaderId: r.leaderId, endReason: r.endReason, acquiredIn: r.acquiredIn, endedIn: r.endedIn });
  view.fenced = rows.fenced.map((f) => `${f.ns}|${f.term}|${f.writer}`).sort();
  return view;
}

/**
 * The current term of a lapsed lease that nobody took over yet is open in the history, except
 * where a statement closes lapsed terms it does not take (open defect 8: the SQLite group tick
 * closes every lapsed term of its namespaces): while that is open, both count as ended at the
 * lease's end.
 */
function lapsedTermsEnded(view: RowsView): RowsView {
  for (const [ns, l] of view.leaders) {
    if (l.leaderId === null || l.live || l.leaseIn === null) continue;
    const h = view.history.get(`${ns}|${l.term}`);
    if (h && h.endedIn === null) view.history.set(`${ns}|${l.term}`, { ...h, endReason: 'expired', endedIn: l.leaseIn });
  }
  return view;
}

/** The differences between the model's rows and the database's (empty: they agree); `slackMs` widens the tolerance of instants. */
export function compareRows(m: ModelState, rows: DbRows, now: number, slackMs: number, earlyCloses = false): string[] {
  const near = (a: number | null, b: number | null): boolean => {
    if (a === null || b === null) return a === b;
    return Math.abs(a - b) <= TOLERANCE_MS + slackMs;
  };
  const expected = earlyCloses ? lapsedTermsEnded(viewOfModel(m, now)) : viewOfModel(m, now);
  const actual = earlyCloses ? lapsedTermsEnded(viewOfRows(rows)) : viewOfRows(rows);
  const diff: string[] = [];
  const keys = <T>(a: Map<string, T>, b: Map<string, T>) => [...new Set([...a.keys(), ...b.keys()])].sort();
  for (const ns of keys(expected.leaders, actual.leaders)) {
    const e = expected.leaders.get(ns);
    const a = actual.leaders.get(ns);
    if (!e || !a || e.leaderId !== a.leaderId || e.term !== a.term || e.live !== a.live || !near(e.leaseIn, a.leaseIn)) {
      diff.push(`leader ${ns}: database ${JSON.stringify(a)} model ${JSON.stringify(e)}`);
    }
  }
  for (const key of keys(expected.candidates, actual.candidates)) {
    const e = expected.candidates.get(key);
    const a = actual.candidates.get(key);
    if (!e || !a || e.priority !== a.priority || e.eligible !== a.eligible || e.metadata !== a.metadata || e.live !== a.live || !near(e.expiresIn, a.expiresIn)) {
      diff.push(`candidate ${key}: database ${JSON.stringify(a)} model ${JSON.stringify(e)}`);
    }
  }
  for (const key of keys(expected.history, actual.history)) {
    const e = expected.history.get(key);
    const a = actual.history.get(key);
    if (!e || !a || e.leaderId !== a.leaderId || e.endReason !== a.endReason || !near(e.acquiredIn, a.acquiredIn) || !near(e.endedIn, a.endedIn)) {
      diff.push(`history ${key}: database ${JSON.stringify(a)} model ${JSON.stringify(e)}`);
    }
  }
  if (JSON.stringify(expected.fenced) !== JSON.stringify(actual.fenced)) diff.push(`fenced writes: database ${JSON.stringify(actual.fenced)} model ${JSON.stringify(expected.fenced)}`);
  return diff;
}

let runCounter = 0;

/** What the schedules of a property ran (printed after it, to size and to see the coverage). */
const stats = new Map<string, number>();
function count(step: Step): void {
  const key = step.op === 'elect' ? `elect:${step.path}` : step.op === 'hold' ? `hold:${step.holder.kind}` : step.op;
  stats.set(key, (stats.get(key) ?? 0) + 1);
  if (step.op === 'race') step.steps.forEach(count);
  if (step.op === 'hold') step.waiters.forEach(count);
  if (step.op === 'busy') count(step.step);
}

/** Runs one schedule on the world; throws a readable mismatch. */
export async function runSchedule(
  world: World,
  schedule: Schedule,
  tag: string,
  options: { tickBesideOwnFence?: boolean; tolerateEarlyCloses?: boolean; holdWaits?: HoldWaits[] } = {},
): Promise<void> {
  const prefix = `${tag}${String(runCounter++).padStart(6, '0')}`;
  const names = w.namesOf(prefix, schedule.namespaces, schedule.candidates, schedule.hostile);
  const run = new ScheduleRun(world, names, options.tickBesideOwnFence ?? true, options.tolerateEarlyCloses ?? isOpen(8), options.holdWaits);
  for (let i = 0; i < schedule.steps.length; i++) {
    count(schedule.steps[i]!);
    try {
      await run.runStep(schedule.steps[i]!, i);
    } catch (error) {
      if (error instanceof Mismatch) error.atStep = i;
      throw error;
    }
  }
  await run.finish();
  if (process.env.GEMSTONE_DIFF_TRACE === '1') console.log(`${scheduleText(schedule)}\n${run.trace.join('\n')}`);
}

/** How a property is run: numbers of runs, and the replay of a failure. */
export interface PropertyOptions {
  numRuns: number;
  rounds: boolean;
}

/**
 * Checks schedules with fast-check: generation, shrinking of a failing schedule to a minimal
 * one, and a replayable seed. `GEMSTONE_DIFF_SEED` / `GEMSTONE_DIFF_PATH` replay a failure
 * (printed with it); `GEMSTONE_DIFF_RUNS` multiplies the number of schedules.
 */
export async function checkSchedules(world: World, caps: Capabilities, options: PropertyOptions, title: string): Promise<void> {
  const seedText = process.env.GEMSTONE_DIFF_SEED;
  const replay = seedText !== undefined && seedText !== '';
  const factor = Number(process.env.GEMSTONE_DIFF_RUNS ?? '1') || 1;
  const tag = title.replace(/[^a-z0-9]+/gi, '').slice(0, 6);
  const property = fc.asyncProperty(scheduleArb(caps, { rounds: options.rounds }), (schedule) => runSchedule(world, schedule, tag, { tickBesideOwnFence: caps.tickBesideOwnFence }));
  stats.clear();
  const started = performance.now();
  const details = await fc.check(property, {
    // A schedule that hangs (a lock never released) is a failure, not a stuck run.
    timeout: 60_000,
    numRuns: replay ? 1 : Math.round(options.numRuns * factor),
    ...(replay ? { seed: Number(seedText), path: process.env.GEMSTONE_DIFF_PATH, endOnFailure: true } : {}),
  });
  const seconds = ((performance.now() - started) / 1000).toFixed(1);
  const ran = [...stats].sort(([a], [b]) => a.localeCompare(b)).map(([k, n]) => `${k} ${n}`).join(', ');
  console.log(`${world.name} — ${title}: ${details.numRuns} schedule(s) in ${seconds} s${details.failed ? ' (failed)' : ''}; operations: ${ran}`);
  if (!details.failed) return;
  const schedule = details.counterexample?.[0] as Schedule | undefined;
  const failure = details.errorInstance;
  const error = failure instanceof Error ? failure.message : String(failure);
  // Steps after the one that went wrong play no part (the shrinker cannot always drop them).
  const atStep = failure instanceof Mismatch ? failure.atStep : undefined;
  const shown = schedule && atStep !== undefined ? { ...schedule, steps: schedule.steps.slice(0, atStep + 1) } : schedule;
  const known = process.env.GEMSTONE_DIFF_KNOWN_DEFECTS;
  const replayHint = [
    `GEMSTONE_DIFF_SEED=${details.seed}`,
    `GEMSTONE_DIFF_PATH=${details.counterexamplePath ?? ''}`,
    ...(known === undefined ? [] : [`GEMSTONE_DIFF_KNOWN_DEFECTS=${known}`]),
    ...(process.env.GEMSTONE_TYPEORM_LINE ? [`GEMSTONE_TYPEORM_LINE=${process.env.GEMSTONE_TYPEORM_LINE}`] : []),
  ].join(' ');
  throw new Error(
    [
      `${world.name} — ${title}: a schedule the model does not explain (after ${details.numRuns} schedule(s), ${details.numShrinks} shrink(s)).`,
      `replay: ${replayHint} npx --prefix test/deps jest <this file> -t '${(expect.getState().currentTestName ?? '').replace(/[[\]().*+?^$|\\{}]/g, '\\$&')}'`,
      shown ? scheduleText(shown) : '(no counterexample)',
      '',
      error,
    ].join('\n'),
  );
}
