import type { DataSource } from 'typeorm';
import { NotInitializedError, ValidationError } from '../errors';
import type { Lease } from '../election/loop/elector-options';
import type { LeadershipWatcher } from '../election/loop/engine/leadership';
import { settlesWithin } from '../db/timers';
import type { ScheduleHost } from './host';
import { LeadershipRun, ScheduledJob } from './leadership-run';
import { checkScheduleOptions, CheckedScheduleOptions } from './options';

/** A schedule registered on a loop, as `schedule()` returns it. */
export interface Schedule {
  /** The namespace whose leader runs it. */
  readonly ns: string;
  /** Its name, unique per namespace and loop. */
  readonly name: string;
  /**
   * The next slot it waits for, by the database's clock as this process estimates it: the next
   * one this leader runs, or (not leading) the next that comes due. Null once cancelled, or when
   * the pattern has no further slot.
   */
  nextSlot(): Date | null;
  /**
   * Stops it for good: no slot is claimed any more, the running job's `lease.signal` aborts, and
   * this resolves once that job has returned and its slot is recorded — at most the loop's
   * `stopTimeoutMs` later (then it is reported as `'error'`, phase `stop`, and the run sends
   * nothing more; a job abandoned so already, when its leadership ended, is not waited for
   * again). A job stopped so leaves its slot to the next leader. Never rejects.
   */
  cancel(): Promise<void>;
}

/** One schedule on one loop: follows the leaderships of its namespace, one {@link LeadershipRun} each. */
class ScheduleHandle implements Schedule, LeadershipWatcher {
  readonly ns: string;
  readonly name: string;
  readonly #host: ScheduleHost;
  readonly #o: CheckedScheduleOptions;
  readonly #job: ScheduledJob;
  readonly #cancel = new AbortController();
  readonly #runs = new Map<Lease, LeadershipRun>();
  readonly #forget: () => void;
  #unwatch: (() => void) | undefined;
  #cancelling: Promise<void> | undefined;

  constructor(host: ScheduleHost, ns: string, options: CheckedScheduleOptions, job: ScheduledJob, forget: () => void) {
    this.#host = host;
    this.ns = ns;
    this.name = options.name;
    this.#o = options;
    this.#job = job;
    this.#forget = forget;
    this.#unwatch = host.watch(this);
    // Registered while leading: this leadership runs it from now on.
    const current = host.current(ns);
    if (current) this.started(current.lease);
  }

  nextSlot(): Date | null {
    if (this.#cancel.signal.aborted) return null;
    for (const run of this.#runs.values()) {
      const next = run.nextSlot;
      if (next !== null) return new Date(next);
    }
    const next = this.#o.series.next(this.#host.clock.now());
    return next === null ? null : new Date(next);
  }

  started(lease: Lease): void {
    if (lease.ns !== this.ns || this.#cancel.signal.aborted || this.#runs.has(lease)) return;
    // After the runs of earlier leaderships still finishing here; one abandoned holds nothing back.
    const earlier = Promise.all([...this.#runs.values()].map((r) => r.released));
    const run = new LeadershipRun(this.#host, this.#o, this.#job, lease, this.#cancel.signal, earlier);
    this.#runs.set(lease, run);
    void run.done.then(() => this.#runs.delete(lease));
  }

  ended(lease: Lease): Promise<void> | void {
    if (lease.ns !== this.ns) return undefined;
    const run = this.#runs.get(lease);
    if (!run) return undefined;
    // A stop waits for the job within its own bound (past it the lease is left to run out, not
    // vacated beside the job), then abandons the run (`loopStopped`).
    if (this.#host.stopping) return run.done;
    return this.#releasedWithin(run, lease);
  }

  /**
   * The wait of a leadership that ended by anything but a stop — a hand-over (priority, balance,
   * `remove`) or a demotion — bounded as a stop's is: a given-up lease is renewed until this
   * settles, so a job that ignores its signal would otherwise keep it (and the next leadership
   * here) forever. Past the bound the run is abandoned: whatever its job tries through
   * `run.transaction` is refused (its signal has aborted), and its slot runs again on the next leader.
   */
  async #releasedWithin(run: LeadershipRun, lease: Lease): Promise<void> {
    await this.#settledOrAbandoned(
      [run],
      'schedule',
      (ms) => `its job still ran stopTimeoutMs (${ms} ms) after the leadership of term ${lease.term} ended; abandoned, the hand-over goes on without it`,
      'the job ignores run.lease.signal: its run.transaction commits nothing now, and its slot runs again on the next leader',
    );
  }

  /**
   * The one bound on waiting for jobs outside a stop: `runs` settle within the loop's
   * `stopTimeoutMs` (a run abandoned already is released, not waited for again), or past it they
   * are abandoned and reported as `phase`, `late` (given the bound) saying what was left, `cause` why.
   */
  async #settledOrAbandoned(runs: readonly LeadershipRun[], phase: 'schedule' | 'stop', late: (ms: number) => string, cause: string): Promise<void> {
    const ms = this.#host.stopTimeoutMs;
    if (await settlesWithin(Promise.all(runs.map((run) => run.released)), ms)) return;
    for (const run of runs) run.abandon();
    this.#host.report(phase, this.ns, `schedule ${JSON.stringify(this.name)}: ${late(ms)}`, new Error(cause));
  }

  loopStopped(): void {
    for (const run of this.#runs.values()) run.abandon();
  }

  cancel(): Promise<void> {
    this.#cancelling ??= this.#cancelOnce();
    return this.#cancelling;
  }

  async #cancelOnce(): Promise<void> {
    this.#cancel.abort();
    await this.#settledOrAbandoned(
      [...this.#runs.values()],
      'stop',
      (ms) => `cancel() resolved after stopTimeoutMs (${ms} ms) with its job still running`,
      'abandoned: the job ignores run.lease.signal; its slot runs again on the next leader',
    );
    // Watched until now: a leadership that ends while its runs settle (a hand-over, a stop) waits
    // for them before its lease is vacated, so the next leader never runs a slot beside them.
    this.#unwatch?.();
    this.#unwatch = undefined;
    this.#forget();
  }
}

/** The schedules of one loop, by namespace and name. */
export class Schedules {
  readonly #host: ScheduleHost;
  readonly #byKey = new Map<string, Schedule>();

  constructor(host: ScheduleHost) {
    this.#host = host;
  }

  /** How many schedules are registered (a cancelled one is gone once its runs settled). */
  get size(): number {
    return this.#byKey.size;
  }

  /**
   * The schedules of `ns` registered now, when this loop runs on `dataSource` (none while it has
   * no DataSource: not configured, not started, no default from `initDb`).
   */
  of(ns: string, dataSource: DataSource): Schedule[] {
    let own: DataSource;
    try {
      own = this.#host.dataSource();
    } catch (error) {
      if (error instanceof NotInitializedError) return [];
      throw error;
    }
    return own === dataSource ? [...this.#byKey.values()].filter((schedule) => schedule.ns === ns) : [];
  }

  /** Validates and registers a schedule of `ns` (a {@link ValidationError} naming the parameter). */
  add(ns: string, options: unknown, job: unknown): Schedule {
    const checked = checkScheduleOptions(options);
    if (typeof job !== 'function') throw new ValidationError('job', `must be a function (got ${typeof job})`);
    const key = JSON.stringify([ns, checked.name]);
    if (this.#byKey.has(key)) {
      throw new ValidationError('options.name', `must be unique per namespace: ${JSON.stringify(checked.name)} is already scheduled in ${JSON.stringify(ns)} on this loop`);
    }
    let schedule: Schedule | undefined;
    const forget = () => {
      if (schedule && this.#byKey.get(key) === schedule) this.#byKey.delete(key);
    };
    schedule = new ScheduleHandle(this.#host, ns, checked, job as ScheduledJob, forget);
    this.#byKey.set(key, schedule);
    return schedule;
  }
}
