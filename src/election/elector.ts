import { EventEmitter } from 'events';
import type { DataSource } from 'typeorm';
import { getDataSource } from '../db/default-data-source';
import { GemstoneError, ValidationError } from '../errors';
import { checkElectorOptions, CheckedElectorOptions, Lease, LeaderElectorOptions, TICK_JITTER } from './elector-options';
import { LocalDeadline } from './monotonic';
import { listenForLeaseChanges, ListenSubscriber } from './pg-listener';
import { ElectionService, ElectOutcome } from './service';
import { stopOnSignals } from './shutdown';
import type { LeaseChange } from './store';

/**
 * Why a leadership ended:
 * - `lost`: the database says another candidate leads, or the lease was vacated behind this
 *   elector's back (`resign`/`unregisterCandidate` by someone else);
 * - `lease-expired-locally`: no renewal succeeded before the local deadline (database down or
 *   slow, network cut, event loop blocked, process paused);
 * - `stopped`: `stop()` was called.
 */
export type DemotionReason = 'lost' | 'lease-expired-locally' | 'stopped';

/** The `reason` of an aborted `lease.signal`. */
export class LeadershipEndedError extends GemstoneError {
  readonly reason: DemotionReason;
  readonly ns: string;
  readonly term: number;

  constructor(lease: Lease, reason: DemotionReason) {
    super(`leadership of namespace ${JSON.stringify(lease.ns)} (term ${lease.term}) ended: ${reason}; stop leader-only work`);
    this.reason = reason;
    this.ns = lease.ns;
    this.term = lease.term;
  }
}

/** What failed inside the loop; the loop carries on (a tick is retried on the next tick). */
export type ElectorErrorPhase = 'tick' | 'listen' | 'callback' | 'stop';

/** An error the elector reports through `'error'` (or its logger); the original is its `cause`. */
export class LeaderElectorError extends GemstoneError {
  readonly phase: ElectorErrorPhase;
  readonly ns: string;
  readonly candidateId: string;

  constructor(phase: ElectorErrorPhase, elector: { ns: string; candidateId: string }, message: string, cause: unknown) {
    const detail = cause instanceof Error ? cause.message : String(cause);
    super(`LeaderElector ${elector.candidateId} in namespace ${JSON.stringify(elector.ns)}: ${message}: ${detail}`, { cause });
    this.phase = phase;
    this.ns = elector.ns;
    this.candidateId = elector.candidateId;
  }
}

/** Events of a {@link LeaderElector}. */
export interface LeaderElectorEvents {
  /** This elector became leader (after `onStartedLeading` was called). */
  elected: [lease: Lease];
  /** This elector's leadership ended (its signal has aborted; after `onStoppedLeading` was called). */
  demoted: [lease: Lease, reason: DemotionReason];
  /** The observed leader or term changed (`null, null` when the lease is known to be vacant). */
  leader: [leaderId: string | null, term: number | null];
  /** A tick, the LISTEN connection or a callback failed; the loop carries on. */
  error: [error: LeaderElectorError];
}

interface Leadership {
  readonly lease: Lease;
  readonly controller: AbortController;
  deadline: LocalDeadline;
  timer: NodeJS.Timeout | undefined;
  /** The leadership reached `onStartedLeading`: only then may `onStoppedLeading` fire. */
  started: boolean;
}

type State = 'idle' | 'starting' | 'running' | 'stopping';

/** `setTimeout`'s longest delay; a longer deadline is re-armed in steps. */
const MAX_TIMER_MS = 2_147_483_647;

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
 * in the write's transaction is for (see the README's fencing pattern).
 */
export class LeaderElector extends EventEmitter<LeaderElectorEvents> {
  readonly #o: CheckedElectorOptions;
  #service: ElectionService | undefined;
  #state: State = 'idle';
  #starting: Promise<void> | undefined;
  #stopping: Promise<void> | undefined;
  #tickTimer: NodeJS.Timeout | undefined;
  #ticking: Promise<void> | undefined;
  #tickAgain = false;
  #leadership: Leadership | undefined;
  #observedLeader: string | null = null;
  #observedTerm: number | null = null;
  /** Orders observations: term * 2, + 1 once that term's lease is known vacated. */
  #observedRank = -1;
  #stoppedCallbacks = new Set<Promise<void>>();
  #unlisten: (() => Promise<void>) | undefined;
  #removeSignalHandlers: (() => void) | undefined;

  /** Validates the options (throws {@link ValidationError} naming the option); touches no database. */
  constructor(options?: LeaderElectorOptions) {
    super();
    this.#o = checkElectorOptions(options);
  }

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
   */
  start(): Promise<void> {
    if (this.#starting) return this.#starting;
    if (this.#state === 'running') return Promise.resolve();
    const starting = this.#start().catch((error: unknown) => {
      if (this.#starting === starting) this.#starting = undefined;
      throw error;
    });
    this.#starting = starting;
    return starting;
  }

  async #start(): Promise<void> {
    if (this.#stopping) await this.#stopping;
    const dataSource = this.#o.dataSource ?? getDataSource();
    if (!dataSource.isInitialized) {
      throw new ValidationError(
        'options.dataSource',
        'is not initialized: call `await initDb(dataSource)` before `elector.start()`',
      );
    }
    this.#service = new ElectionService(dataSource, { expireSeconds: this.#o.expireSeconds });
    this.#state = 'starting';
    if (this.#o.handleSignals) this.#removeSignalHandlers = stopOnSignals(this);
    if (dataSource.options.type === 'postgres') await this.#listen(dataSource);
    await this.#tickLoop();
    if (this.#state === 'starting') this.#state = 'running';
  }

  /**
   * Ends leadership at once (the signal aborts, `onStoppedLeading` fires), stops ticking, waits
   * for a tick in flight and for `onStoppedLeading` to settle (so leader work can finish before
   * anyone else starts), then unregisters — which vacates a held lease, so another elector takes
   * over at once (PostgreSQL) or on its next tick. Never rejects: a failed unregister is reported
   * as `'error'` (the lease then runs out by itself). A database call that hangs (no statement
   * timeout, network partition) delays it: configure your driver's timeouts.
   */
  stop(): Promise<void> {
    if (this.#stopping) return this.#stopping;
    if (this.#state === 'idle' && !this.#starting) return Promise.resolve();
    this.#stopping = this.#stop().finally(() => {
      this.#stopping = undefined;
    });
    return this.#stopping;
  }

  async #stop(): Promise<void> {
    const starting = this.#starting;
    this.#state = 'stopping';
    clearTimeout(this.#tickTimer);
    this.#tickTimer = undefined;
    // Leader work stops first; a tick still in flight can no longer renew (its answer is ignored).
    let held = this.#leadership?.lease;
    this.#demote('stopped');
    await starting?.catch(() => undefined);
    if (this.#starting === starting) this.#starting = undefined;
    await this.#ticking;
    // start() may have been mid-way through its first elect, which could have made us leader in
    // the database without a local leadership: unregister below vacates it either way.
    held ??= this.#leadership?.lease;
    this.#demote('stopped');
    await Promise.all([...this.#stoppedCallbacks]);
    if (this.#service) {
      try {
        await this.#service.unregisterCandidate(this.candidateId, { ns: this.ns });
        if (held) this.#observe(null, held.term);
      } catch (error) {
        this.#report(new LeaderElectorError('stop', this, 'unregistering failed; the lease and candidate row will expire by themselves', error));
      }
    }
    const unlisten = this.#unlisten;
    this.#unlisten = undefined;
    await unlisten?.().catch((error: unknown) => this.#report(new LeaderElectorError('listen', this, 'closing the LISTEN connection failed', error)));
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

  // ---- the loop -------------------------------------------------------------------------------

  get #active(): boolean {
    return this.#state === 'starting' || this.#state === 'running';
  }

  /** Runs ticks until no extra one was requested meanwhile, then schedules the next. Never rejects. */
  async #tickLoop(): Promise<void> {
    if (this.#ticking) {
      this.#tickAgain = true;
      return this.#ticking;
    }
    clearTimeout(this.#tickTimer);
    this.#tickTimer = undefined;
    const run = async () => {
      do {
        this.#tickAgain = false;
        await this.#tick();
      } while (this.#tickAgain && this.#active);
    };
    this.#ticking = run();
    try {
      await this.#ticking;
    } finally {
      this.#ticking = undefined;
    }
    if (this.#active) this.#schedule();
  }

  #schedule(): void {
    clearTimeout(this.#tickTimer);
    const jitter = 1 - TICK_JITTER + 2 * TICK_JITTER * Math.random();
    this.#tickTimer = setTimeout(() => {
      this.#tickTimer = undefined;
      void this.#tickLoop();
    }, this.#o.intervalMs * jitter);
  }

  /** Elects at once (a vacancy was announced): the current tick is followed by another right away. */
  #kick(): void {
    if (this.#active) void this.#tickLoop();
  }

  async #tick(): Promise<void> {
    const service = this.#service;
    if (!service) return;
    // Taken before the statement is sent: the database cannot grant the lease any earlier.
    const deadline = LocalDeadline.startingNow(this.#o.clock, this.#o.expireSeconds * 1000);
    // A hung statement (network cut, lock held elsewhere) blocks the loop: say so once per lease.
    const leaseMs = this.#o.expireSeconds * 1000;
    const hung = setTimeout(() => {
      this.#report(
        new LeaderElectorError(
          'tick',
          this,
          `elect has not answered within the lease (${leaseMs} ms); still waiting, no other tick runs meanwhile`,
          new Error('set statement/connection timeouts on the DataSource so a hung call fails'),
        ),
      );
    }, Math.min(leaseMs, MAX_TIMER_MS));
    hung.unref();
    let outcome: ElectOutcome;
    try {
      outcome = await service.electOutcome(this.candidateId, { ns: this.ns });
    } catch (error) {
      this.#report(new LeaderElectorError('tick', this, `elect failed (retrying in about ${Math.round(this.#o.intervalMs)} ms)`, error));
      this.#currentLeadership(); // demotes if the deadline passed while the statement hung
      return;
    } finally {
      clearTimeout(hung);
    }
    // stop() was called meanwhile: it ends any leadership and vacates the lease itself.
    if (!this.#active) return;
    this.#apply(outcome, deadline);
  }

  #apply(outcome: ElectOutcome, deadline: LocalDeadline): void {
    const current = this.#currentLeadership();
    if (outcome.isLeader && !deadline.passed) {
      if (current && current.lease.term === outcome.term) {
        current.deadline = deadline;
        this.#armDeadline(current);
      } else {
        if (current) this.#demote('lost');
        this.#lead(outcome.term, deadline);
      }
    } else if (current && !(outcome.isLeader && outcome.term === current.lease.term)) {
      this.#demote('lost');
    }
    // An answer that arrived after its own deadline grants nothing: the next tick renews.
    this.#observe(outcome.leaderId, outcome.term);
  }

  // ---- leadership -----------------------------------------------------------------------------

  /** The leadership if its local deadline has not passed; ends it on the spot if it has. */
  #currentLeadership(): Leadership | undefined {
    const leadership = this.#leadership;
    if (leadership && leadership.deadline.passed) {
      this.#demote('lease-expired-locally');
      return undefined;
    }
    return leadership;
  }

  #lead(term: number, deadline: LocalDeadline): void {
    const controller = new AbortController();
    const lease: Lease = Object.freeze({ ns: this.ns, candidateId: this.candidateId, term, signal: controller.signal });
    const leadership: Leadership = { lease, controller, deadline, timer: undefined, started: false };
    this.#leadership = leadership;
    this.#armDeadline(leadership);
    leadership.started = true;
    const onStartedLeading = this.#o.onStartedLeading;
    if (onStartedLeading) void this.#callback('onStartedLeading', () => onStartedLeading(lease));
    if (this.#leadership === leadership) this.#emitSafely('elected', lease);
  }

  #armDeadline(leadership: Leadership): void {
    clearTimeout(leadership.timer);
    const remaining = leadership.deadline.remainingMs();
    if (remaining <= 0) {
      if (this.#leadership === leadership) this.#demote('lease-expired-locally');
      return;
    }
    // +1: timers may fire a fraction of a millisecond before the clock reaches the deadline.
    leadership.timer = setTimeout(() => {
      if (this.#leadership !== leadership) return;
      if (leadership.deadline.passed) this.#demote('lease-expired-locally');
      else this.#armDeadline(leadership);
    }, Math.min(remaining + 1, MAX_TIMER_MS));
    // The tick timer keeps a running elector's process alive; this one alone need not.
    leadership.timer.unref();
  }

  /** Ends the current leadership: isLeader false, signal aborted, onStoppedLeading, 'demoted' — in that order. */
  #demote(reason: DemotionReason): void {
    const leadership = this.#leadership;
    if (!leadership) return;
    this.#leadership = undefined;
    clearTimeout(leadership.timer);
    const { lease } = leadership;
    leadership.controller.abort(new LeadershipEndedError(lease, reason));
    const onStoppedLeading = this.#o.onStoppedLeading;
    if (leadership.started && onStoppedLeading) {
      const settled = this.#callback('onStoppedLeading', () => onStoppedLeading(lease));
      this.#stoppedCallbacks.add(settled);
      void settled.then(() => this.#stoppedCallbacks.delete(settled));
    }
    this.#emitSafely('demoted', lease, reason);
  }

  /** Records the observed leader; emits `'leader'` and calls `onNewLeader` when it changed. Stale news is ignored. */
  #observe(leaderId: string | null, term: number): void {
    const rank = term * 2 + (leaderId === null ? 1 : 0);
    if (rank <= this.#observedRank) return;
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

  async #listen(dataSource: DataSource): Promise<void> {
    const subscriber: ListenSubscriber = {
      ns: this.ns,
      onChange: (change) => this.#onLeaseChange(change),
      onError: (error) => this.#report(new LeaderElectorError('listen', this, 'the PostgreSQL LISTEN connection failed (reconnecting with backoff; ticks go on)', error)),
      onResync: () => this.#kick(),
    };
    this.#unlisten = await listenForLeaseChanges(dataSource, subscriber);
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
    if (current && change.term > current.lease.term) this.#demote('lost');
    this.#observe(change.leaderId, change.term);
  }

  // ---- errors ---------------------------------------------------------------------------------

  /** Calls user code; a throw or rejection is reported, never propagated. */
  #callback(name: string, fn: () => unknown): Promise<void> {
    const report = (error: unknown) => this.#report(new LeaderElectorError('callback', this, `${name} threw`, error));
    try {
      return Promise.resolve(fn()).then(() => undefined, report);
    } catch (error) {
      report(error);
      return Promise.resolve();
    }
  }

  #emitSafely<K extends 'elected' | 'demoted' | 'leader'>(event: K, ...args: LeaderElectorEvents[K]): void {
    try {
      (this.emit as (event: string, ...args: unknown[]) => boolean)(event, ...args);
    } catch (error) {
      this.#report(new LeaderElectorError('callback', this, `a '${event}' listener threw`, error));
    }
  }

  #report(error: LeaderElectorError): void {
    if (this.listenerCount('error') > 0) {
      try {
        this.emit('error', error);
        return;
      } catch (listenerError) {
        this.#log(new LeaderElectorError('callback', this, "an 'error' listener threw", listenerError));
      }
    }
    this.#log(error);
  }

  #log(error: LeaderElectorError): void {
    try {
      this.#o.logger.error(`gemstone-utils: ${error.message}`, error);
    } catch {
      // A broken logger must not take the loop down with it.
    }
  }
}

export type { Lease, LeaderElectorOptions } from './elector-options';
