// Kept in the emitted declarations, whose public types use Node's (EventEmitter, AbortSignal, Symbol.asyncDispose): TypeScript 7
// projects load no @types by default (`types: []`).
/// <reference types="node" preserve="true" />
import { EventEmitter } from 'events';
import type { DataSource } from 'typeorm';
import { getDataSource } from '../../db/default-data-source';
import { outsideRuns } from '../../db/run-guard';
import { EntitiesNotRegisteredError, TablesMissingError, ValidationError } from '../../errors';
import { warnIfLocalElection } from '../../db/sqlite-warning';
import { checkElectorOptions, CheckedElectorOptions, Lease, LeaderElectorOptions, PRUNE_INTERVAL_MS, TICK_JITTER } from './elector-options';
import { assertEntitiesRegistered } from '../entities-check';
import { ElectorHealth, ElectorRole, TickHealth } from './health';
import { LocalDeadline } from './monotonic';
import { LoopRun } from './loop-run';
import { pruneIfDue, settlesWithin } from './loop-support';
import { deliversLeaseChanges, LeaseChangeSubscription, ListenSubscriber, ListenTarget, subscribeToLeaseChanges } from '../observe/lease-changes';
import { ElectionService, ElectOutcome } from '../service';
import { stopOnSignals } from './shutdown';
import type { LeaseChange } from '../store';
import type { NotificationsState } from './notifications-state';
import { ClockSkewAlarm, ElectorTick, measureClockSkew } from './tick';
import { DemotionReason, LeaderElectorError } from './errors';
import { Leadership, LeadershipHooks, StoppedCallbacks } from './leadership';
import { NotificationsReporter } from './notifications-state';
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
}

type State = 'idle' | 'starting' | 'running' | 'stopping';

/** One run of the loop, from start() until its stop. */
interface Run {
  /** Its ticks, prunes, hand-overs and their timers: ended as soon as a stop begins. */
  readonly loop: LoopRun;
  ticking: Promise<void> | undefined;
  tickAgain: boolean;
  tickTimer: NodeJS.Timeout | undefined;
  /** The prune in flight, if any. */
  pruning: Promise<void> | undefined;
  /** The hand-over in progress (waiting for onStoppedLeading, then resigning), if any. */
  handingOver: Promise<void> | undefined;
  /** PostgreSQL: the LISTEN subscription, closed by the stop. */
  listening: LeaseChangeSubscription | undefined;
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
  #service: ElectionService | undefined;
  #state: State = 'idle';
  #dataSource: DataSource | undefined;
  /** Messages of misconfiguration errors already reported since the last successful tick. */
  readonly #reportedMisconfigurations = new Set<string>();
  /** The missing-tables error of start()'s first elect, which start() rejects with. */
  #startFailure: TablesMissingError | undefined;
  /** What the latest start()/stop() asked for. */
  #want: 'run' | 'stop' = 'stop';
  /** The driver moving the state towards #want, while one runs. */
  #driving: Promise<void> | undefined;
  /** The lease held when a stop began: its vacancy is observed once the stop unregistered. */
  #heldAtStop: Lease | undefined;
  /** The current run (from start() until its stop has finished). */
  #run: Run | undefined;
  #leadership: Leadership | undefined;
  #observedLeader: string | null = null;
  #observedTerm: number | null = null;
  /** Orders observations: term * 2, + 1 once that term's lease is known vacated. */
  #observedRank = -1;
  readonly #stoppedCallbacks = new StoppedCallbacks();
  /** The callbacks and events of a leadership (see `leadership.ts` for their order). */
  readonly #hooks: LeadershipHooks;
  /** performance.now() by which the current stop must have resolved. */
  #stopBy: number | undefined;
  /**
   * The statements of the current stop (unregister): ended when that stop is over, so that one
   * it abandoned at its bound sends nothing more.
   */
  #stopWork: LoopRun | undefined;
  /** The #stop under way, if any (it bounds and reports its own steps). */
  #stopping: Promise<void> | undefined;
  #removeSignalHandlers: (() => void) | undefined;
  readonly #health: TickHealth;
  readonly #skewAlarm: ClockSkewAlarm;
  /** Send the metadata with the next elect: when registering, and when the last elect found no candidate row. */
  #sendMetadata = true;

  /** Validates the options (throws {@link ValidationError} naming the option); touches no database. */
  constructor(options?: LeaderElectorOptions) {
    super();
    this.#o = checkElectorOptions(options);
    this.#health = new TickHealth(this.#o.clock, this.#o.expireSeconds * 1000);
    this.#skewAlarm = new ClockSkewAlarm(this.#o.clockSkewWarningSeconds);
    this.#hooks = {
      onStartedLeading: this.#o.onStartedLeading,
      onStoppedLeading: this.#o.onStoppedLeading,
      call: (_ns, name, fn) => this.#callback(name, fn),
      elected: (lease) => this.#emitSafely('elected', lease),
      demoted: (lease, reason) => this.#emitSafely('demoted', lease, reason),
      expired: (leadership) => {
        if (this.#leadership === leadership) this.#demote('lease-expired-locally');
      },
    };
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
    return this.#currentLeadership() !== undefined;
  }

  /** The fencing token of the current leadership; null when not leader. */
  get term(): number | null {
    return this.#currentLeadership()?.lease.term ?? null;
  }

  /** The current lease (as passed to `onStartedLeading`); null when not leader. */
  get lease(): Lease | null {
    return this.#currentLeadership()?.lease ?? null;
  }

  /** The last observed leader (from this elector's ticks and, on PostgreSQL, notifications); null if vacant or unknown. */
  get leaderId(): string | null {
    return this.#observedLeader;
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
    let role: ElectorRole = 'stopped';
    let leaderOverdue = false;
    if (this.#active) {
      leaderOverdue = this.#leadership !== undefined && this.#leadership.passed;
      role = this.#currentLeadership() ? 'leader' : 'follower';
    }
    return this.#health.report(role, leaderOverdue);
  }

  /** Whether the loop is running (between `start()` and `stop()`). */
  get running(): boolean {
    return this.#state === 'starting' || this.#state === 'running';
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
    this.#want = 'run';
    return this.#drive();
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
    this.#want = 'stop';
    // A stop under way keeps its bound; otherwise the bound counts from this call.
    if (this.#state !== 'stopping' || this.#stopBy === undefined || !this.#stopWork) {
      this.#stopBy = performance.now() + this.#o.stopTimeoutMs;
      this.#stopWork = new LoopRun();
    }
    const stopBy = this.#stopBy;
    const stopWork = this.#stopWork;
    // Leader work stops now, not when the driver gets to it.
    if (this.#active) this.#halt();
    const driving = this.#drive().catch(() => undefined);
    // A start() stuck in its first statement holds the driver: the bound holds for it too.
    return settlesWithin(driving, stopBy - performance.now()).then(async (inTime) => {
      if (this.#want !== 'stop') return;
      if (!inTime) {
        // A running #stop bounds its own steps by the same instant and reports what it abandoned:
        // it is done within a few timer turns.
        if (this.#stopping) await this.#stopping;
        else this.#report(this.#stopTimedOut(['start() (its LISTEN connection or first elect has not answered)']));
      }
      // Whatever of this stop is still on its way (the driver may still be in start()) sends nothing.
      stopWork.end();
    });
  }

  #stopTimedOut(pending: readonly string[], vacated = false): LeaderElectorError {
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

  /** Moves the elector towards `#want` until it is there; one driver at a time. */
  #drive(): Promise<void> {
    if (this.#driving) return this.#driving;
    if (this.#state === (this.#want === 'run' ? 'running' : 'idle')) return Promise.resolve();
    const driving = this.#driveLoop();
    this.#driving = driving;
    return driving;
  }

  async #driveLoop(): Promise<void> {
    // Lets #drive record this promise before the loop can finish and clear it.
    await Promise.resolve();
    try {
      for (;;) {
        if (this.#state === 'stopping') {
          await this.#stopOnce();
        } else if (this.#want === 'stop' && this.#active) {
          this.#halt();
        } else if (this.#want === 'run' && this.#state === 'idle') {
          await this.#startOrUndo();
        } else {
          // Cleared in the same synchronous step as the last check: a later call starts a new driver.
          this.#driving = undefined;
          return;
        }
      }
    } catch (error) {
      this.#driving = undefined;
      throw error;
    }
  }

  /** #start; when it fails, the elector is left idle and stays stopped until the next start(). */
  async #startOrUndo(): Promise<void> {
    try {
      await this.#start();
    } catch (error) {
      this.#want = 'stop';
      if (this.#active) this.#halt();
      if (this.#state === 'stopping') await this.#stopOnce();
      throw error;
    }
  }

  async #start(): Promise<void> {
    const dataSource = this.#o.dataSource ?? getDataSource();
    if (!dataSource.isInitialized) {
      throw new ValidationError(
        'options.dataSource',
        'is not initialized: call `await initDb(dataSource)` before `elector.start()`',
      );
    }
    // A DataSource without the entities fails every tick the same way: refuse it up front.
    assertEntitiesRegistered(dataSource);
    warnIfLocalElection(dataSource);
    this.#service = new ElectionService(dataSource, { expireSeconds: this.#o.expireSeconds });
    this.#dataSource = dataSource;
    this.#health.started();
    this.#sendMetadata = true;
    this.#state = 'starting';
    const run: Run = {
      loop: new LoopRun(),
      ticking: undefined,
      tickAgain: false,
      tickTimer: undefined,
      pruning: undefined,
      handingOver: undefined,
      listening: undefined,
    };
    this.#run = run;
    if (this.#o.handleSignals) this.#removeSignalHandlers = stopOnSignals(this);
    if (deliversLeaseChanges(dataSource) && this.#o.listen) {
      run.listening = this.#listen(dataSource, this.#o.listen);
      // A stop meanwhile need not wait for the connection: it closes the subscription.
      await Promise.race([run.listening.ready, run.loop.whenEnded()]);
    }
    // stop() may have been called while LISTEN was being set up.
    if (this.#state !== 'starting') return;
    await this.#tickLoop(run);
    const failure = this.#startFailure;
    this.#startFailure = undefined;
    if (failure) {
      // Nothing was written (there are no tables): the undoing stop has no row to unregister.
      this.#service = undefined;
      throw failure;
    }
    if (this.#state === 'starting') this.#state = 'running';
  }

  /**
   * The synchronous first half of a stop: leadership ends at once; no tick, prune or hand-over
   * starts any more, and those under way send no further statement (a tick's answer is ignored).
   */
  #halt(): void {
    this.#state = 'stopping';
    this.#run?.loop.end();
    this.#heldAtStop ??= this.#leadership?.lease;
    this.#demote('stopped');
  }

  async #stopOnce(): Promise<void> {
    const stopping = this.#stop();
    this.#stopping = stopping;
    try {
      await stopping;
    } finally {
      this.#stopping = undefined;
    }
  }

  /**
   * The rest of a stop, after #halt: waits for the loop, then hands over — each step only as long
   * as the stop's bound leaves (see `stopTimeoutMs`); what has not settled by then is abandoned.
   */
  async #stop(): Promise<void> {
    const stopBy = this.#stopBy ?? performance.now() + this.#o.stopTimeoutMs;
    const stopWork = (this.#stopWork ??= new LoopRun());
    const left = () => stopBy - performance.now();
    // A stop() that already resolved (its bound passed while start() held the driver) has
    // reported what it abandoned; this late remainder reports nothing more.
    const report = (error: LeaderElectorError) => {
      if (!stopWork.ended) this.#report(error);
    };
    const run = this.#run;
    const pending: string[] = [];
    run?.loop.end();
    // The elect and hand-over in flight first: an elect answering after the unregister could
    // leave a lease nobody renews. A prune is independent of the lease: waited for at the end.
    if (run && !(await settlesWithin(Promise.all([run.ticking, run.handingOver]), left()))) pending.push('the elect in flight answering');
    // start() may have been mid-way through its first elect, which could have made us leader in
    // the database without a local leadership: unregister below vacates it either way.
    const held = this.#heldAtStop ?? this.#leadership?.lease;
    this.#heldAtStop = undefined;
    this.#demote('stopped');
    const finished = await settlesWithin(this.#stoppedCallbacks.settled(), left());
    if (!finished) pending.push('onStoppedLeading settling (the lease is left to run out, not vacated)');
    // Vacating while leader work still runs would let the next leader start beside it. After an
    // abandoned elect it is still sent: it is never worse than leaving the lease to run out.
    const service = this.#service;
    let vacated = false;
    // With no time left the unregister would only be abandoned mid-way: the lease runs out instead.
    if (service && finished && left() > 0) {
      let failed: unknown;
      const unregistering = stopWork
        .start(() => service.unregisterCandidate(this.candidateId, { ns: this.ns }))
        ?.catch((error: unknown) => {
          failed = error ?? new Error('unregisterCandidate failed');
        });
      if (!unregistering) {
        // This stop is over already: nothing more is sent for it.
      } else if (!(await settlesWithin(unregistering, left()))) {
        pending.push('unregistering (vacating the lease)');
      } else if (failed !== undefined) {
        report(new LeaderElectorError('stop', this, 'unregistering failed; the lease and candidate row will expire by themselves', failed));
      } else {
        vacated = true;
        if (held) this.#observe(null, held.term);
      }
    }
    const listening = run?.listening;
    if (run) run.listening = undefined;
    if (listening) {
      // Ends the connection attempt, reconnects and probe at once; the server's goodbye is waited
      // for within the bound (closing bounds itself to about a second).
      const closing = listening.close().catch((error: unknown) => report(new LeaderElectorError('listen', this, 'closing the LISTEN connection failed', error)));
      await settlesWithin(closing, left());
    }
    if (run && !(await run.loop.settled(left()))) pending.push('a prune in flight answering');
    if (pending.length > 0) {
      // Whatever is still in flight belongs to this run: its late outcome starts nothing.
      this.#stoppedCallbacks.abandon();
      report(this.#stopTimedOut(pending, vacated));
    }
    stopWork.end();
    if (this.#stopWork === stopWork) this.#stopWork = undefined;
    if (this.#run === run) this.#run = undefined;
    this.#stopBy = undefined;
    this.#removeSignalHandlers?.();
    this.#removeSignalHandlers = undefined;
    this.#state = 'idle';
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
    const leadership = this.#currentLeadership();
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
      void this.#callback('an onLeadership listener', () => listener(lease));
    };
    this.on('elected', deliver);
    const current = this.lease;
    if (current) deliver(current);
    return () => {
      this.off('elected', deliver);
    };
  }

  // ---- the loop -------------------------------------------------------------------------------

  get #active(): boolean {
    return this.#state === 'starting' || this.#state === 'running';
  }

  /** Runs ticks of `run` until no extra one was requested meanwhile, then schedules the next. Never rejects. */
  async #tickLoop(run: Run): Promise<void> {
    if (run.ticking) {
      run.tickAgain = true;
      return run.ticking;
    }
    run.loop.clear(run.tickTimer);
    run.tickTimer = undefined;
    const ticking = run.loop.start(async () => {
      do {
        run.tickAgain = false;
        await this.#tick(run);
      } while (run.tickAgain && !run.loop.ended);
    });
    if (!ticking) return;
    run.ticking = ticking;
    try {
      await ticking;
    } finally {
      if (run.ticking === ticking) run.ticking = undefined;
    }
    this.#schedule(run);
  }

  #schedule(run: Run): void {
    run.loop.clear(run.tickTimer);
    const jitter = 1 - TICK_JITTER + 2 * TICK_JITTER * Math.random();
    run.tickTimer = run.loop.timer(() => {
      run.tickTimer = undefined;
      void this.#tickLoop(run);
    }, this.#o.intervalMs * jitter);
  }

  /** Elects at once (a vacancy was announced): the current tick is followed by another right away. */
  #kick(): void {
    const run = this.#run;
    if (run && this.#active) void this.#tickLoop(run);
  }

  /** One elect of `run` (once the run has ended, its late answer is ignored). */
  async #tick(run: Run): Promise<void> {
    const service = this.#service;
    if (!service) return;
    // Taken before the statement is sent: the database cannot grant the lease any earlier.
    const deadline = LocalDeadline.startingNow(this.#o.clock, this.#o.expireSeconds * 1000);
    // A hung statement (network cut, lock held elsewhere) blocks the loop: say so once per lease.
    const leaseMs = this.#o.expireSeconds * 1000;
    const hung = run.loop.timer(() => {
      const error = new LeaderElectorError(
        'tick',
        this,
        `elect has not answered within the lease (${leaseMs} ms); still waiting, no other tick runs meanwhile`,
        new Error('set statement/connection timeouts on the DataSource so a hung call fails'),
      );
      this.#health.failed(error);
      this.#report(error);
    }, leaseMs, false);
    const sentAtWallMs = deadline.startedAt.getTime();
    const sentAt = performance.now();
    let outcome: ElectOutcome;
    // Priority and eligibility go with every elect: the statement decides by them, and a row
    // recreated without them (unregistered behind this elector's back) must not make an
    // ineligible elector a leader. Metadata (up to 4 KiB) goes only when registering, and again
    // after an elect found the row missing: a renewal writes no more than a heartbeat does.
    const sendingMetadata = this.#sendMetadata;
    const { priority, eligible } = this.#o;
    try {
      outcome = await service.electOutcome(this.candidateId, {
        ns: this.ns,
        priority,
        eligible,
        ...(sendingMetadata ? { metadata: this.#o.metadata } : {}),
      });
    } catch (caught) {
      if (run.loop.ended) return;
      const error = this.#explainFailure(caught);
      // start()'s first elect found no tables: every tick would fail alike, so start() rejects.
      if (this.#state === 'starting' && error instanceof TablesMissingError) {
        this.#startFailure = error;
        return;
      }
      const durationMs = performance.now() - sentAt;
      const failure = new LeaderElectorError('tick', this, `elect failed (retrying in about ${Math.round(this.#o.intervalMs)} ms)`, error);
      this.#health.failed(failure);
      if (!this.#isRepeatedMisconfiguration(error)) this.#report(failure);
      this.#currentLeadership(); // demotes if the deadline passed while the statement hung
      this.#emitTick({ outcome: 'error', durationMs, leaderId: null, term: null, clockSkew: null, error: failure });
      return;
    } finally {
      run.loop.clear(hung);
    }
    // The answer of a tick whose run was stopped meanwhile: stop() ends any leadership and
    // vacates the lease itself.
    if (run.loop.ended) return;
    const durationMs = performance.now() - sentAt;
    this.#reportedMisconfigurations.clear();
    this.#sendMetadata = !sendingMetadata && !outcome.wasRegistered;
    this.#health.succeeded(deadline);
    const clockSkew = measureClockSkew(outcome.databaseNow, sentAtWallMs, durationMs);
    this.#apply(run, outcome, deadline);
    this.#maybePrune(run);
    const tickOutcome = outcome.acquired ? 'acquired' : outcome.isLeader ? 'renewed' : 'follower';
    this.#emitTick({ outcome: tickOutcome, durationMs, leaderId: outcome.leaderId, term: outcome.term, clockSkew, error: null });
    const warning = this.#skewAlarm.check(clockSkew);
    if (warning) {
      this.#report(
        new LeaderElectorError('clock', this, warning, new Error('leases are judged by the database clock alone; check NTP on this host and the database server')),
      );
    }
  }

  #emitTick(tick: Omit<ElectorTick, 'ns' | 'candidateId' | 'durationSeconds'> & { durationMs: number }): void {
    const { durationMs, ...rest } = tick;
    this.#emitSafely('tick', Object.freeze({ ns: this.ns, candidateId: this.candidateId, durationSeconds: durationMs / 1000, ...rest }));
  }

  /**
   * Deletes long-expired candidate rows and old history rows, after a successful tick and outside its transaction, at
   * most once per {@link PRUNE_INTERVAL_MS} per DataSource. Not awaited: the tick goes on.
   */
  #maybePrune(run: Run): void {
    const dataSource = this.#dataSource;
    if (!dataSource || run.pruning) return;
    const pruning = run.loop.start(async () => {
      try {
        await pruneIfDue(dataSource, this.#o);
      } catch (error) {
        if (!run.loop.ended) this.#report(new LeaderElectorError('prune', this, 'pruning expired candidates or old history failed (retried later)', error));
      } finally {
        run.pruning = undefined;
      }
    });
    if (pruning) run.pruning = pruning;
  }

  #apply(run: Run, outcome: ElectOutcome, deadline: LocalDeadline): void {
    if (outcome.isLeader && (outcome.handOver || run.handingOver)) {
      // Held in the database, but to be given up: no (new) local leadership.
      this.#demote('handed-over');
      if (outcome.handOver) this.#handOver(run, outcome.term);
      this.#observe(outcome.leaderId, outcome.term);
      return;
    }
    const held = this.#leadership;
    if (outcome.isLeader && !deadline.passed) {
      // A renewal keeps the lease. An acquisition that hands out the term we believe we hold is
      // another grant of that number (ours was lost, e.g. with an unreplicated commit): a new
      // leadership, so that work fenced by the old lease stops. Either way the deadline is armed
      // before any user code runs (the old leadership's callbacks included).
      if (held && held.lease.term === outcome.term && !outcome.acquired && !held.passed) {
        held.renew(deadline);
      } else {
        const granted = new Leadership(this.#hooks, this.ns, this.candidateId, outcome.term, deadline);
        if (held) this.#demote(held.passed ? 'lease-expired-locally' : 'lost');
        this.#begin(granted);
      }
    } else {
      const current = this.#currentLeadership();
      if (current && !(outcome.isLeader && outcome.term === current.lease.term)) this.#demote('lost');
    }
    // An answer that arrived after its own deadline grants nothing: the next tick renews.
    this.#observe(outcome.leaderId, outcome.term);
  }

  /**
   * Gives the lease of `term` up as `stop()` does, but stays a candidate: leadership has already
   * ended locally (signal aborted); once `onStoppedLeading` has settled — so the next leader
   * starts after this one's work is finished — the lease is vacated (`resign`), which on
   * PostgreSQL announces the vacancy to the preferred candidate at once. Meanwhile the ticks
   * keep renewing the lease in the database, so nobody else starts early. One transaction
   * beyond the tick's, only on a hand-over; a failed resign is reported and retried by the
   * next tick (which reports the hand-over again).
   */
  #handOver(run: Run, term: number): void {
    if (run.handingOver) return;
    const service = this.#service;
    const handing = run.loop.start(async () => {
      try {
        await this.#stoppedCallbacks.settled();
        // stop() vacates the lease itself.
        if (run.loop.ended || !service) return;
        await service.handOver(this.candidateId, { ns: this.ns });
        if (!run.loop.ended) this.#observe(null, term);
      } catch (error) {
        if (!run.loop.ended) {
          this.#report(new LeaderElectorError('hand-over', this, 'vacating the lease for a preferred candidate failed (retried on the next tick)', error));
        }
      } finally {
        run.handingOver = undefined;
      }
    });
    if (handing) run.handingOver = handing;
  }

  // ---- leadership -----------------------------------------------------------------------------

  /** The leadership if its local deadline has not passed; ends it on the spot if it has. */
  #currentLeadership(): Leadership | undefined {
    const leadership = this.#leadership;
    if (leadership && leadership.passed) {
      this.#demote('lease-expired-locally');
      return undefined;
    }
    return leadership;
  }

  /**
   * Starts `granted` unless something ended the loop or began another leadership while the
   * previous one's callbacks ran (a stop() inside onStoppedLeading): then it ends unstarted.
   */
  #begin(granted: Leadership): void {
    if (!this.#active || this.#leadership) {
      void granted.end('stopped');
      return;
    }
    this.#leadership = granted;
    granted.start();
  }

  /** Ends the current leadership: isLeader false, then (see `leadership.ts`) signal aborted, onStoppedLeading, 'demoted'. */
  #demote(reason: DemotionReason): void {
    const leadership = this.#leadership;
    if (!leadership) return;
    this.#leadership = undefined;
    void leadership.end(reason);
    this.#stoppedCallbacks.track(leadership);
  }

  /**
   * Records the observed leader; emits `'leader'` and calls `onNewLeader` when it changed. Stale
   * news (an older term, or the grant of a term already seen vacated) is ignored. Another holder
   * at the same rank is news: a term granted twice (a failover that lost an acknowledged grant)
   * names a new leader under the number already seen, and the database's answer wins.
   */
  #observe(leaderId: string | null, term: number): void {
    const rank = term * 2 + (leaderId === null ? 1 : 0);
    if (rank < this.#observedRank || (rank === this.#observedRank && leaderId === this.#observedLeader)) return;
    this.#observedRank = rank;
    const observedTerm = leaderId === null ? null : term;
    if (leaderId === this.#observedLeader && observedTerm === this.#observedTerm) return;
    this.#observedLeader = leaderId;
    this.#observedTerm = observedTerm;
    const onNewLeader = this.#o.onNewLeader;
    if (onNewLeader) void this.#callback('onNewLeader', () => onNewLeader(leaderId, observedTerm));
    this.#emitSafely('leader', leaderId, observedTerm);
  }

  // ---- PostgreSQL LISTEN ----------------------------------------------------------------------

  #listen(dataSource: DataSource, target: ListenTarget): LeaseChangeSubscription {
    const notifications = new NotificationsReporter(
      (message, error) => this.#report(new LeaderElectorError('listen', this, message, error)),
      (state) => this.#emitSafely('notifications', state),
    );
    const subscriber: ListenSubscriber = {
      ns: this.ns,
      onChange: (change) => this.#onLeaseChange(change),
      onError: (error) => notifications.down(error),
      onResync: () => this.#kick(),
      onRestored: (outage) => notifications.up(outage),
      onUnavailable: (error) => notifications.off(error),
    };
    return subscribeToLeaseChanges(dataSource, subscriber, target);
  }

  #onLeaseChange(change: LeaseChange): void {
    if (!this.#active) return;
    const current = this.#leadership;
    if (change.leaderId === null) {
      // Our own lease vacated by someone else's resign/unregister: stop acting at once.
      if (current && change.term >= current.lease.term) this.#demote('lost');
      this.#observe(null, change.term);
      this.#kick();
      return;
    }
    // Our own acquisitions are observed through the tick that made them (in order with 'elected').
    if (change.leaderId === this.candidateId) return;
    // Someone else holds the lease at our term or a later one. The same term for another leader
    // happens when the database lost our grant (a failover to a replica that had not received it)
    // and granted that number again: it is no longer ours either way.
    if (current && change.term >= current.lease.term) this.#demote('lost');
    this.#observe(change.leaderId, change.term);
  }

  // ---- errors ---------------------------------------------------------------------------------

  /**
   * A tick in flight while its DataSource was initialized again without the election entities
   * fails inside TypeORM with an error that says nothing useful (e.g. "Class constructor
   * ElectionLeader cannot be invoked without 'new'"): name the real cause, as the next tick would.
   */
  #explainFailure(error: unknown): unknown {
    if (error instanceof EntitiesNotRegisteredError || !this.#dataSource) return error;
    try {
      assertEntitiesRegistered(this.#dataSource);
    } catch (missing) {
      return missing;
    }
    return error;
  }

  /**
   * A misconfiguration (missing entities) fails every tick with the same message: it is reported
   * once per distinct message until a tick succeeds, not once per tick.
   */
  #isRepeatedMisconfiguration(error: unknown): boolean {
    if (!(error instanceof EntitiesNotRegisteredError)) return false;
    if (this.#reportedMisconfigurations.has(error.message)) return true;
    this.#reportedMisconfigurations.add(error.message);
    return false;
  }

  /**
   * Calls user code, outside the loop's run (its statements are the user's own, not refused when
   * the loop stops); a throw or rejection is reported, never propagated.
   */
  #callback(name: string, fn: () => unknown): Promise<void> {
    const report = (error: unknown) => this.#report(new LeaderElectorError('callback', this, `${name} threw`, error));
    try {
      return Promise.resolve(outsideRuns(fn)).then(() => undefined, report);
    } catch (error) {
      report(error);
      return Promise.resolve();
    }
  }

  #emitSafely<K extends 'elected' | 'demoted' | 'leader' | 'tick' | 'notifications'>(event: K, ...args: LeaderElectorEvents[K]): void {
    try {
      outsideRuns(() => (this.emit as (event: string, ...args: unknown[]) => boolean)(event, ...args));
    } catch (error) {
      this.#report(new LeaderElectorError('callback', this, `a '${event}' listener threw`, error));
    }
  }

  #report(error: LeaderElectorError): void {
    if (this.listenerCount('error') > 0) {
      try {
        outsideRuns(() => this.emit('error', error));
        return;
      } catch (listenerError) {
        this.#log(new LeaderElectorError('callback', this, "an 'error' listener threw", listenerError));
      }
    }
    this.#log(error);
  }

  #log(error: LeaderElectorError): void {
    try {
      outsideRuns(() => this.#o.logger.error(`gemstone-utils: ${error.message}`, error));
    } catch {
      // A broken logger must not take the loop down with it.
    }
  }
}

export type { Lease, LeaderElectorOptions } from './elector-options';
