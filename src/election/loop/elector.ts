// Kept in the emitted declarations, whose public types use Node's (EventEmitter, AbortSignal, Symbol.asyncDispose): TypeScript 7
// projects load no @types by default (`types: []`).
/// <reference types="node" preserve="true" />
import { EventEmitter } from 'events';
import { ValidationError } from '../../errors';
import { checkElectorOptions, CheckedElectorOptions, Lease, LeaderElectorOptions } from './elector-options';
import type { ElectorHealth } from './health';
import type { ElectorTick, TickOutcome } from './tick';
import { DemotionReason, LeaderElectorError } from './errors';
import { LoopEngine, TickSummary } from './engine/engine';
import type { LoopEmitter } from './engine/reporter';
import { NamespaceCampaign } from './campaigns/namespace';
import type { NotificationsState } from './notifications-state';
import { Schedules } from '../../schedules/schedule';
import { registerHosted } from '../../schedules/hosted';
import type { Schedule } from '../../schedules/schedule';
import type { ScheduleOptions } from '../../schedules/options';
import type { ScheduledRun } from '../../schedules/scheduled-run';
import type { ScheduleRunEnded } from '../../schedules/run-ended';
import { engineScheduleHost } from '../../schedules/engine-host';
export { LeaderElectorError, LeadershipEndedError } from './errors';
export type { DemotionReason, ElectorErrorPhase } from './errors';
export type { NotificationsState } from './notifications-state';

/** Events of a {@link LeaderElector}. */
export interface LeaderElectorEvents {
  /** This elector became leader (after `onStartedLeading` was called). */
  elected: [lease: Lease];
  /** This elector's leadership ended (its signal has aborted; after `onStoppedLeading` was called). */
  demoted: [lease: Lease, reason: DemotionReason];
  /** The observed leader or term changed (`null, null` when the lease is known to be vacant). */
  leader: [leaderId: string | null, term: number | null];
  /**
   * A tick, the LISTEN connection or a callback failed, or (phase `clock`) the database clock is
   * off this host's by more than `clockSkewWarningSeconds`; the loop carries on. A LISTEN outage
   * is one error (and a reminder a minute while it lasts), not one per reconnect attempt.
   */
  error: [error: LeaderElectorError];
  /**
   * PostgreSQL: LISTEN went `down` (hand-overs are noticed by ticks until it is back), is `up`
   * again after that, or is `off` for good (a transaction-mode pooler). See {@link NotificationsState}.
   */
  notifications: [state: NotificationsState];
  /**
   * A tick's `elect` answered or failed: outcome, duration and the database clock's skew. For
   * observers such as `gemstone-utils/metrics`; emitted after the tick's other events.
   */
  tick: [tick: ElectorTick];
  /** A schedule's slot reached a final state (done, failed, abandoned, missed, skipped), recorded in the database. */
  scheduleRun: [run: ScheduleRunEnded];
}

/**
 * The loop a worker runs: one `elect` per tick (which is also the heartbeat), callbacks and
 * events when leadership starts and ends, and a local deadline that ends leadership before
 * anyone else can take over.
 *
 * Guarantees:
 * - At most one transaction per tick; ticks never overlap; ±10% jitter on the period.
 * - `isLeader` is false, the lease's `signal` aborted and `onStoppedLeading` called as soon as
 *   leadership is known lost, and at the latest at the local deadline: the monotonic time taken
 *   just before the last successful `elect` was sent, plus `expireSeconds`. Since the database
 *   granted the lease no earlier than that, the local lease ends no later than the database's,
 *   as long as the local clock does not run slower than the database's.
 * - `onStoppedLeading` fires once per leadership and only after `onStartedLeading` was called.
 * - Errors (database, LISTEN connection, callbacks) are reported as `'error'` — or logged when
 *   nobody listens — and never crash the process or become unhandled rejections.
 * - On PostgreSQL, followers LISTEN for vacancies and elect at once: `stop()` hands over in
 *   milliseconds. Elsewhere the next tick (≤ 1.1 × `intervalMs`) picks it up.
 *
 * Not guaranteed: that leader work stops when the signal aborts (it has to watch it), nor that a
 * write commits only under the current leader — that is what `assertLeader` with `lease.term`
 * in the write's transaction is for (see the fencing pattern in docs/protocol.md).
 */
export class LeaderElector extends EventEmitter<LeaderElectorEvents> {
  readonly #o: CheckedElectorOptions;
  /** The loop (`engine/engine.ts`), campaigning for this one namespace. */
  readonly #engine: LoopEngine;
  /** The schedules registered on this elector (`src/schedules/`), run by its leaderships. */
  readonly #schedules: Schedules;

  /** Validates the options (throws {@link ValidationError} naming the option); touches no database. */
  constructor(options?: LeaderElectorOptions) {
    super();
    const o = (this.#o = checkElectorOptions(options));
    this.#engine = new LoopEngine(
      o,
      new NamespaceCampaign(o),
      {
        emitter: this as unknown as LoopEmitter,
        error: (phase, _ns, message, cause) => new LeaderElectorError(phase, this, message, cause),
        listenNs: o.ns,
        stopTimedOut: (pending, vacated) => this.#stopTimedOut(pending, vacated),
        observed: (_ns, { leaderId, term }) => {
          const onNewLeader = o.onNewLeader;
          if (onNewLeader) void this.#engine.reporter.callback(o.ns, 'onNewLeader', () => onNewLeader(leaderId, term));
          this.#engine.reporter.emit('leader', leaderId, term);
        },
        ticked: (summary) => this.#ticked(summary),
        hasSchedules: () => this.#schedules.size > 0,
      },
      [o.ns],
    );
    this.#schedules = registerHosted(this, new Schedules(engineScheduleHost(this.#engine, o.dataSource)));
  }

  /** The namespace this elector campaigns in. */
  get ns(): string {
    return this.#o.ns;
  }

  /** This elector's candidate UUID, lower-case. */
  get candidateId(): string {
    return this.#o.candidateId;
  }

  /** Lease and candidate expiry in seconds. */
  get expireSeconds(): number {
    return this.#o.expireSeconds;
  }

  /** How long `stop()` may take, in ms (default `min(expireSeconds * 1000, DEFAULT_STOP_TIMEOUT_MS)`). */
  get stopTimeoutMs(): number {
    return this.#o.stopTimeoutMs;
  }

  /** The tick period in ms (each tick is jittered by ±10%). */
  get intervalMs(): number {
    return this.#o.intervalMs;
  }

  /**
   * Local and synchronous: true while this elector holds a lease whose local deadline has not
   * passed. Reading it after the deadline passed ends the leadership on the spot (the signal
   * aborts, `onStoppedLeading` and `'demoted'` fire) even if the deadline timer has not run yet,
   * e.g. right after the event loop was blocked or the process was paused.
   */
  get isLeader(): boolean {
    return this.#engine.current(this.#o.ns) !== undefined;
  }

  /** The fencing token of the current leadership; null when not leader. */
  get term(): number | null {
    return this.#engine.current(this.#o.ns)?.lease.term ?? null;
  }

  /** The current lease (as passed to `onStartedLeading`); null when not leader. */
  get lease(): Lease | null {
    return this.#engine.current(this.#o.ns)?.lease ?? null;
  }

  /** The last observed leader (from this elector's ticks and, on PostgreSQL, notifications); null if vacant or unknown. */
  get leaderId(): string | null {
    return this.#engine.observed(this.#o.ns)?.leaderId ?? null;
  }

  /**
   * For liveness and readiness probes: synchronous, no query. `ok` is false when the elector is
   * not running, when no tick has succeeded for longer than the lease (database unreachable, a
   * statement hanging, the process paused or its event loop blocked — measured by the monotonic
   * and the wall clock, so it says so at once after a pause, before any timer has run), or when a
   * leader's renewal is overdue past its local deadline. Like {@link isLeader}, reading it ends an
   * overdue leadership on the spot. `lastError` is the failed latest tick's error, cleared by the
   * next successful tick.
   */
  health(): ElectorHealth {
    return this.#engine.health(this.#o.ns);
  }

  /** Whether the loop is running (between `start()` and `stop()`). */
  get running(): boolean {
    return this.#engine.active;
  }

  /**
   * Starts the loop: on PostgreSQL, LISTEN for lease changes; then the first `elect` (which
   * registers this candidate), then a tick every `intervalMs`. Resolves after the first tick, so
   * `isLeader` tells its outcome. Database errors do not reject it: they are reported as
   * `'error'` and retried on the next tick. Rejects only when there is no usable DataSource.
   * Calling it again while running is harmless.
   *
   * `start()` and `stop()` may be called in any order at any time: the latest call wins. After
   * `stop(); start()` the elector runs again once the stop's hand-over has completed; after
   * `start(); stop()` it ends stopped (and the start resolves).
   */
  start(): Promise<void> {
    return this.#engine.start();
  }

  /**
   * Ends leadership at once (the signal aborts, `onStoppedLeading` fires), stops ticking, waits
   * for a tick in flight and for `onStoppedLeading` to settle (so leader work can finish before
   * anyone else starts), then unregisters — which vacates a held lease, so another elector takes
   * over at once (PostgreSQL) or on its next tick. Never rejects: a failed unregister is reported
   * as `'error'` (the lease then runs out by itself).
   *
   * Resolves within `stopTimeoutMs` (default `min(lease, 5 s)`) whatever the database does: a
   * statement that hangs (network cut, lock held elsewhere) is abandoned at that bound and reported
   * as `'error'` (phase `stop`); the lease, if still held at the database, then runs out by itself.
   * A stop that waited for `onStoppedLeading` in vain does not vacate the lease, so the next
   * leader cannot start beside leader work still running. A `start()` called after it wins: the
   * elector then runs again once this stop has completed.
   *
   * When it has resolved, nothing the elector started runs or is scheduled any more: no tick,
   * prune, hand-over, retry, LISTEN connection or reconnect; the DataSource may be destroyed at
   * once. The one exception is a statement already sent that has not answered by the bound (it
   * hangs): it stays in flight, and when it answers nothing follows from it — no further
   * statement (only the ROLLBACK that ends the transaction it belongs to, so that its connection
   * goes back to the pool clean) and no event.
   */
  stop(): Promise<void> {
    return this.#engine.stop();
  }

  #stopTimedOut(pending: readonly string[], vacated: boolean): LeaderElectorError {
    const lease = vacated
      ? 'the lease was vacated'
      : `a lease still held at the database runs out by itself within expireSeconds (${this.#o.expireSeconds} s) of its last renewal`;
    return new LeaderElectorError(
      'stop',
      this,
      `stop() resolved after stopTimeoutMs (${this.#o.stopTimeoutMs} ms) without ${pending.join(', ')}; ${lease}`,
      new Error('abandoned: set statement/connection timeouts and TCP keepalives on the DataSource so a hung call fails'),
    );
  }

  /** Same as {@link stop}: `await using elector = new LeaderElector(...)`. */
  async [Symbol.asyncDispose](): Promise<void> {
    await this.stop();
  }

  /**
   * Runs `fn(lease)` if this elector is leader right now (local check, no query); resolves to
   * undefined otherwise. `fn`'s own errors reach the caller. For writes that must not commit
   * after leadership ends, fence them with `assertLeader(candidateId, { ns, term: lease.term, session })`.
   */
  async runIfLeader<T>(fn: (lease: Lease) => Promise<T> | T): Promise<T | undefined> {
    if (typeof fn !== 'function') throw new ValidationError('fn', `must be a function (got ${typeof fn})`);
    const leadership = this.#engine.current(this.#o.ns);
    if (!leadership) return undefined;
    return fn(leadership.lease);
  }

  /**
   * Calls `listener(lease)` for every leadership of this elector, the current one included: at
   * once if it leads now, then on each `'elected'`. For code that subscribes after `start()` — a
   * Nest `onApplicationBootstrap` hook runs after `ElectionModule`'s has elected — which
   * `on('elected')` would leave without the term already running. `lease.signal` aborts when that
   * leadership ends. Each leadership reaches a listener once. A throw or rejection is reported as
   * `'error'` (phase `callback`), as for the other callbacks. Returns a function that removes the
   * listener.
   */
  onLeadership(listener: (lease: Lease) => void | Promise<void>): () => void {
    if (typeof listener !== 'function') throw new ValidationError('listener', `must be a function (got ${typeof listener})`);
    let delivered: Lease | undefined;
    const deliver = (lease: Lease): void => {
      // A listener added inside onStartedLeading sees the lease now and again in its 'elected'.
      if (lease === delivered) return;
      delivered = lease;
      void this.#engine.reporter.callback(this.#o.ns, 'an onLeadership listener', () => listener(lease));
    };
    this.on('elected', deliver);
    const current = this.lease;
    if (current) deliver(current);
    return () => {
      this.off('elected', deliver);
    };
  }

  /**
   * Runs `job` at each slot of `options` (a cron pattern in a time zone, or every `everyMs`) on the
   * leader of this elector's namespace, each slot once: claimed in the database under the
   * leader's term before the job runs, and recorded `done`, `failed`, `missed`, `skipped` or
   * `abandoned` (see `ElectionService.getRuns`). A leader looks back when its leadership starts:
   * a slot whose run lost its leader runs again, and the slots that came due while nobody led are
   * caught up per `catchUp`. Slots come due by the database's clock. May be called before
   * `start()`; runs while this elector leads. Throws `ValidationError` naming the parameter (the
   * name must be unique in the namespace on this elector). See docs/schedules.md.
   *
   * The job gets a {@link ScheduledRun}: `run.lease.signal` aborts when the leadership ends (then
   * the slot runs again on the next leader), and `run.transaction(fn)` commits the job's writes
   * together with the slot's `done`, fenced by the term. A job that throws for another reason
   * makes its slot `failed` and is reported as `'error'` (phase `schedule`). `stop()` aborts the
   * running jobs and waits for them within `stopTimeoutMs`.
   */
  schedule(options: ScheduleOptions, job: (run: ScheduledRun) => unknown): Schedule {
    return this.#schedules.add(this.#o.ns, options, job);
  }

  #ticked({ durationMs, answer, clockSkew, error }: TickSummary): void {
    const decided = answer?.outcomes[0];
    const outcome: TickOutcome = !decided ? 'error' : decided.acquired ? 'acquired' : decided.isLeader ? 'renewed' : 'follower';
    const tick: ElectorTick = {
      ns: this.ns,
      candidateId: this.candidateId,
      durationSeconds: durationMs / 1000,
      outcome,
      leaderId: decided?.leaderId ?? null,
      term: decided?.term ?? null,
      clockSkew,
      error,
    };
    this.#engine.reporter.emit('tick', Object.freeze(tick));
  }
}

export type { Lease, LeaderElectorOptions } from './elector-options';
