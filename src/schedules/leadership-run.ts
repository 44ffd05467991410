import { NotLeaderError } from '../errors';
import { outsideRuns } from '../db/run-guard';
import type { Lease } from '../election/loop/elector-options';
import { LeadershipEndedError } from '../election/loop/errors';
import { LoopRun } from '../db/loop-run';
import { planCatchUp } from './catch-up';
import type { ScheduleHost } from './host';
import type { CheckedScheduleOptions } from './options';
import type { Claimant, RunsStore, SlotKey } from './runs-store';
import type { EndedRunState } from './run-ended';
import { RunHandle, ScheduledRun } from './scheduled-run';

/** A schedule's job. */
export type ScheduledJob = (run: ScheduledRun) => unknown;

/** One slot waiting to run: `reclaim` for a slot an earlier leadership (an older term, or this one's before a local demotion) left running. */
interface Queued {
  readonly slot: number;
  readonly reclaim: boolean;
}

/** A timer never waits less than this for a slot not yet due by the estimate (the database re-checks). */
const MIN_WAIT_MS = 1;

const isoOf = (slot: number) => new Date(slot).toISOString();

/** Why a job's throw means its run lost its leader (the slot runs again on the next one) rather than a failure. */
function lostLeader(error: unknown, signal: AbortSignal): boolean {
  return error instanceof NotLeaderError || error instanceof LeadershipEndedError || signal.aborted;
}

/**
 * A signal that aborts with the first of `a` and `b` to abort. (`AbortSignal.any` came in Node
 * 20.3; the package runs on every Node 20.) Both listeners go once it aborts: a schedule's cancel
 * signal outlives many leaderships and must not collect one listener per leadership.
 */
function firstOf(a: AbortSignal, b: AbortSignal): AbortSignal {
  const controller = new AbortController();
  const first = [a, b].find((signal) => signal.aborted);
  if (first) {
    controller.abort(first.reason);
    return controller.signal;
  }
  const onA = () => end(a);
  const onB = () => end(b);
  function end(signal: AbortSignal): void {
    a.removeEventListener('abort', onA);
    b.removeEventListener('abort', onB);
    controller.abort(signal.reason);
  }
  a.addEventListener('abort', onA, { once: true });
  b.addEventListener('abort', onB, { once: true });
  return controller.signal;
}

function messageOf(error: unknown): string {
  if (error instanceof Error) return error.message || error.name;
  try {
    return String(error);
  } catch {
    return 'a value that is not an Error';
  }
}

/**
 * One schedule's work during one leadership of its namespace, from the leadership's start until
 * its end (or the schedule's cancel): looks back once at the start (slots an older term left
 * running are claimed again, missed ones planned per `catchUp`), then a timer to each slot by the
 * database's clock; each slot is claimed in the database under the lease's term before its job
 * runs, and finished under it. One job at a time. Its statements run in a {@link LoopRun} of its
 * own, so that a job finishing while the loop stops still records its slot (the stop waits for it,
 * within its bound), and nothing is sent once it is abandoned ({@link abandon}).
 */
export class LeadershipRun {
  /** Settles when nothing of this run is in flight any more: its job returned and its slot was finished. */
  readonly done: Promise<void>;
  /**
   * Settles with {@link done}, or when the run is abandoned (its job may still run, but nothing of
   * it is recorded any more, and nothing waits for it): what hand-overs, the next leadership and
   * `cancel()` wait for.
   */
  readonly released: Promise<void>;
  #release!: () => void;
  readonly #host: ScheduleHost;
  readonly #o: CheckedScheduleOptions;
  readonly #job: ScheduledJob;
  readonly #ns: string;
  readonly #lease: Lease;
  /** Aborts when the leadership ends or the schedule is cancelled: what the job sees as `lease.signal`. */
  readonly #signal: AbortSignal;
  readonly #loop = new LoopRun();
  readonly #who: Claimant;
  #store: RunsStore | undefined;
  /** Every slot up to it (inclusive) is handled: queued, run or recorded. */
  #cursor = -Infinity;
  #nextSlot: number | null = null;
  readonly #queue: Queued[] = [];
  #running = false;
  /** A fence failed (the lease is not ours in the database): nothing more is claimed. */
  #fenced = false;
  #timer: NodeJS.Timeout | undefined;
  #wake: (() => void) | undefined;
  /** Records of skipped and missed slots made while the job loop goes on, one after another. */
  #recording: Promise<void> = Promise.resolve();

  /**
   * `after`: the runs of this schedule under earlier leaderships still finishing in this process
   * (a lease lost and won again while a job ran): this one starts after them, so that it never
   * runs a slot again beside the job that still runs it here.
   */
  constructor(host: ScheduleHost, options: CheckedScheduleOptions, job: ScheduledJob, lease: Lease, cancelled: AbortSignal, after: Promise<unknown>) {
    this.#host = host;
    this.#o = options;
    this.#job = job;
    this.#ns = lease.ns;
    this.#signal = firstOf(lease.signal, cancelled);
    this.#lease = Object.freeze({ ns: lease.ns, candidateId: lease.candidateId, term: lease.term, signal: this.#signal });
    this.#who = Object.freeze({ candidateId: lease.candidateId, term: lease.term });
    this.#signal.addEventListener('abort', () => this.#poke(), { once: true });
    const main = this.#loop.start(() => this.#main(after));
    this.done = (main ?? Promise.resolve())
      .catch((error: unknown) => this.#report(`the schedule stopped on an unexpected error during term ${lease.term}`, error))
      .finally(() => this.#loop.end());
    this.released = new Promise<void>((resolve) => {
      this.#release = resolve;
    });
    void this.done.then(this.#release);
  }

  /** The next slot this run waits for; null when none. */
  get nextSlot(): number | null {
    return this.#isOver() ? null : (this.#queue[0]?.slot ?? this.#nextSlot);
  }

  /**
   * Sends nothing more, and is {@link released}: a stop, a cancel or the end of its leadership gave
   * up waiting for this run (its job ignores `lease.signal`; whatever it tries through
   * `run.transaction` is refused, since that signal has aborted).
   */
  abandon(): void {
    this.#loop.end();
    this.#poke();
    this.#release();
  }

  /**
   * Whether this run is over. The leadership's local deadline may have passed before its timer
   * fired (a blocked event loop: the claim's answer, or a slot's timer, can come first): asking the
   * loop for the namespace's leadership ends it then and there, which aborts the signal, so no job
   * starts past the deadline.
   */
  #isOver(): boolean {
    if (!this.#signal.aborted) this.#host.current(this.#ns);
    return this.#signal.aborted || this.#fenced || this.#loop.ended;
  }

  async #main(after: Promise<unknown>): Promise<void> {
    await Promise.race([after, this.#sleep()]);
    this.#wake = undefined;
    if (this.#isOver()) return;
    this.#store = this.#host.store(this.#host.dataSource());
    const store = this.#store;
    const look = await this.#step('looking back at its runs', () => store.lookBack(this.#ns, this.#o.name));
    if (!look) return;
    const now = look.databaseNow.getTime();
    const newest = look.newest?.getTime() ?? null;
    const plan = planCatchUp({ series: this.#o.series, newest, now, catchUp: this.#o.catchUp, catchUpWindowMs: this.#o.catchUpWindowMs });
    if (plan.missed.length > 0) this.#record(plan.missed, 'missed');
    // Slots an older term left running first (oldest first), then the catch-up, oldest first.
    for (const key of look.unfinished) this.#queue.push({ slot: key.slot.getTime(), reclaim: true });
    for (const slot of plan.run) this.#queue.push({ slot, reclaim: false });
    this.#cursor = Math.max(now, newest ?? -Infinity);
    this.#arm();
    while (!this.#isOver()) {
      const next = this.#queue.shift();
      if (next) await this.#runSlot(next);
      else await this.#sleep();
    }
    this.#loop.clear(this.#timer);
    await this.#recording;
  }

  // ---- slots coming due ------------------------------------------------------------------------

  /** A timer to the next slot after the cursor, by the database's clock (estimated). */
  #arm(): void {
    this.#loop.clear(this.#timer);
    this.#timer = undefined;
    if (this.#isOver()) return;
    const next = this.#o.series.next(this.#cursor);
    this.#nextSlot = next;
    if (next === null) return;
    const wait = Math.max(MIN_WAIT_MS, next - this.#host.clock.now());
    // The loop's tick timer keeps the process alive while it runs; this one need not.
    this.#timer = this.#loop.timer(() => this.#due(), wait, false);
  }

  /** The timer fired: every slot after the cursor that is due by now is queued, skipped or missed. */
  #due(): void {
    this.#timer = undefined;
    if (this.#isOver()) return;
    const now = this.#host.clock.now();
    const plan = planCatchUp({ series: this.#o.series, newest: this.#cursor, now, catchUp: 'all', catchUpWindowMs: this.#o.catchUpWindowMs });
    // Every slot up to `now` is in the plan (those beyond its bound are left unrecorded).
    this.#cursor = Math.max(this.#cursor, now);
    if (plan.run.length > 0 || plan.missed.length > 0) {
      if (plan.missed.length > 0) this.#record(plan.missed, 'missed');
      const skipped: number[] = [];
      for (const slot of plan.run) {
        // `skip`: a slot that comes due while the previous run still runs is not run.
        if (this.#o.overlap === 'skip' && this.#running) skipped.push(slot);
        else this.#queue.push({ slot, reclaim: false });
      }
      if (skipped.length > 0) this.#record(skipped, 'skipped');
      this.#poke();
    }
    this.#arm();
  }

  // ---- running one slot ------------------------------------------------------------------------

  async #runSlot({ slot, reclaim }: Queued): Promise<void> {
    const store = this.#store!;
    const key: SlotKey = Object.freeze({ ns: this.#ns, name: this.#o.name, slot: new Date(slot) });
    // A slot never starts later than the window after it came due (a `wait` behind a long run, a
    // long catch-up); one an older term left running is run again whatever its age.
    if (!reclaim && slot < this.#host.clock.now() - this.#o.catchUpWindowMs) {
      this.#record([slot], 'missed');
      return;
    }
    let attempt: number;
    for (;;) {
      // A slot the look-back found running is retaken even under this very term: an earlier
      // leadership of the term here (a local demotion, then the lease renewed) left it, and this
      // run started only once that one was released.
      const claim = await this.#step(`claiming slot ${isoOf(slot)}`, () => store.claim(key, this.#who, this.#o.maxAttempts, reclaim));
      if (!claim) return;
      if (claim.claimed) {
        attempt = claim.attempt;
        break;
      }
      if (claim.why === 'not-due') {
        // This host's estimate ran ahead of the database's clock: wait by the database's own answer.
        await this.#sleep(Math.max(MIN_WAIT_MS, slot - claim.databaseNow.getTime()));
        if (this.#isOver()) return;
        continue;
      }
      if (claim.why === 'not-leader') this.#fenced = true;
      if (claim.why === 'abandoned') {
        this.#tell(key, 'abandoned', this.#o.maxAttempts, null);
        this.#report(
          `slot ${isoOf(slot)} is abandoned: its runs lost their leader ${this.#o.maxAttempts} times (maxAttempts)`,
          new Error('a job that outlives its leadership runs again on the next leader; watch run.lease.signal'),
        );
      }
      return;
    }
    // The leadership ended while the claim was on its way: the next leader runs the slot.
    if (this.#isOver()) return;
    await this.#execute(key, attempt);
  }

  async #execute(key: SlotKey, attempt: number): Promise<void> {
    const store = this.#store!;
    const dataSource = this.#host.dataSource();
    const run = new RunHandle({
      dataSource,
      store,
      key,
      who: this.#who,
      attempt,
      lease: this.#lease,
      assertLeader: (manager) => this.#host.assertLeader(dataSource, this.#lease, manager),
    });
    let failed = false;
    let thrown: unknown;
    const started = performance.now();
    this.#running = true;
    try {
      // User code: outside the run, so its own statements are never refused as the run's.
      await outsideRuns(() => this.#job(run));
    } catch (error) {
      failed = true;
      thrown = error;
    } finally {
      this.#running = false;
    }
    const durationSeconds = (performance.now() - started) / 1000;
    const slot = isoOf(key.slot.getTime());
    if (run.committed) {
      this.#tell(key, 'done', attempt, durationSeconds);
      if (failed) this.#report(`the job threw for slot ${slot} after its run.transaction committed (the slot stays done)`, thrown);
      return;
    }
    // Its leadership ended (or the schedule was cancelled) under it: the slot stays running under
    // this term, and the next leader runs it again.
    if (failed && lostLeader(thrown, this.#signal)) return;
    const state = failed ? 'failed' : 'done';
    const recorded = await this.#finish(key, state, failed ? messageOf(thrown) : undefined);
    if (recorded) this.#tell(key, state, attempt, durationSeconds);
    if (failed) {
      const outcome = recorded ? 'the slot is recorded failed and not run again' : 'the slot could not be recorded failed (its leadership ended): the next leader runs it again';
      this.#report(`the job threw for slot ${slot} (attempt ${attempt}); ${outcome}`, thrown);
    }
  }

  /**
   * Records the run's end; true once recorded. Fenced; a database error is retried while the
   * leadership lasts, tried once after.
   */
  async #finish(key: SlotKey, state: 'done' | 'failed', error: string | undefined): Promise<boolean> {
    const store = this.#store!;
    for (;;) {
      if (this.#loop.ended) return false;
      try {
        await store.finish(key, this.#who, state, error);
        return true;
      } catch (caught) {
        // Ended by this process: the stop (or cancel, or hand-over) that abandoned the run past
        // its bound refused the record's next statement (it rolled back). The slot stays running
        // and the next leader runs it again; the abandonment was reported once, by who did it.
        if (this.#quietAfter(caught)) return false;
        this.#report(`recording slot ${isoOf(key.slot.getTime())} ${state} failed${this.#signal.aborted ? '' : ' (retrying)'}`, caught);
        if (this.#signal.aborted) return false;
        await this.#sleep(this.#host.retryMs);
      }
    }
  }

  // ---- statements and waits --------------------------------------------------------------------

  /**
   * Runs a statement of the runner: undefined when the leadership ended first or a fence failed
   * (`NotLeaderError`: nothing more is claimed); another error is reported and the statement tried
   * again after the loop's tick period while the leadership lasts.
   */
  async #step<T>(what: string, statement: () => Promise<T>): Promise<T | undefined> {
    while (!this.#isOver()) {
      try {
        return await statement();
      } catch (error) {
        if (this.#quietAfter(error) || this.#isOver()) return undefined;
        this.#report(`${what} failed (retrying in about ${Math.round(this.#host.retryMs)} ms)`, error);
        await this.#sleep(this.#host.retryMs);
      }
    }
    return undefined;
  }

  /** Records slots that will never run, after the records before them; a failure is reported, not retried. */
  #record(slots: readonly number[], state: 'missed' | 'skipped'): void {
    const store = this.#store!;
    const keys = slots.map((slot) => Object.freeze({ ns: this.#ns, name: this.#o.name, slot: new Date(slot) }));
    this.#recording = this.#recording.then(async () => {
      if (this.#loop.ended || this.#fenced) return;
      try {
        await store.record(keys, this.#who, state);
        for (const key of keys) this.#tell(key, state, null, null);
      } catch (error) {
        if (!this.#quietAfter(error)) this.#report(`recording ${keys.length} slot(s) ${state} failed`, error);
      }
    });
  }

  /**
   * Whether a failed statement of this run goes unreported: a fence refused it (`NotLeaderError`:
   * the run claims nothing more), or the loop ended under it (the stop, cancel or hand-over that
   * ended it reports once what it abandoned). The one rule of the run's three ways of writing
   * ({@link #step}, {@link #finish}, {@link #record}), whose retries differ.
   */
  #quietAfter(error: unknown): boolean {
    if (error instanceof NotLeaderError) {
      this.#fenced = true;
      this.#poke();
      return true;
    }
    return this.#loop.ended;
  }

  /** Waits until poked (a slot queued, the leadership ended), or `ms` when given. */
  #sleep(ms?: number): Promise<void> {
    if (this.#isOver()) return Promise.resolve();
    return new Promise<void>((resolve) => {
      const timer = ms === undefined ? undefined : this.#loop.timer(() => this.#poke(), ms, false);
      this.#wake = () => {
        this.#loop.clear(timer);
        resolve();
      };
    });
  }

  #poke(): void {
    const wake = this.#wake;
    this.#wake = undefined;
    wake?.();
  }

  /** Tells the host a slot's final state was recorded (its observers: the loop's `'scheduleRun'` event). */
  #tell(key: SlotKey, state: EndedRunState, attempt: number | null, durationSeconds: number | null): void {
    const endedAt = new Date(this.#host.clock.now());
    this.#host.ended({ ns: key.ns, name: key.name, slot: key.slot, state, attempt, durationSeconds, endedAt });
  }

  #report(message: string, cause: unknown): void {
    this.#host.report('schedule', this.#ns, `schedule ${JSON.stringify(this.#o.name)}: ${message}`, cause);
  }
}
