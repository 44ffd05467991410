// Kept in the emitted declarations, whose public types use Node's (EventEmitter, AbortSignal, Symbol.asyncDispose): TypeScript 7
// projects load no @types by default (`types: []`).
/// <reference types="node" preserve="true" />
import { EventEmitter } from 'events';
import type { DataSource } from 'typeorm';
import { getDataSource } from '../../db/default-data-source';
import { outsideRuns } from '../../db/run-guard';
import { TablesMissingError, ValidationError } from '../../errors';
import { explainDatabaseError } from '../../db/explain-error';
import { warnIfLocalElection } from '../../db/sqlite-warning';
import { DemotionReason, ElectorErrorPhase, LeaderElectorError } from './errors';
import { Lease, TICK_JITTER } from './elector-options';
import { Leadership, LeadershipHooks, StoppedCallbacks } from './leadership';
import { assertEntitiesRegistered } from '../entities-check';
import { checkGroupOptions, CheckedGroupOptions, GroupTick, LeaderElectorGroupOptions } from './group-options';
import { compareNs, fairShare, GroupElectOutcome, groupStoreOf, GroupStore } from '../group-store';
import type { VacateReason } from '../observe/history';
import { LoopRun } from './loop-run';
import { LocalDeadline } from './monotonic';
import { pruneIfDue, settlesWithin } from './loop-support';
import { deliversLeaseChanges, LeaseChangeSubscription, ListenSubscriber, subscribeToLeaseChanges } from '../observe/lease-changes';
import { stopOnSignals } from './shutdown';
import type { LeaseChange } from '../store';
import { NotificationsReporter, type NotificationsState } from './notifications-state';
import { ClockSkewAlarm, measureClockSkew } from './tick';
import { checkNs } from '../validate';

/** An error a {@link LeaderElectorGroup} reports: `namespace` is the one concerned, or null for the whole group. */
export class LeaderElectorGroupError extends LeaderElectorError {
  /** The namespace concerned; null when the error is about the whole group (a failed tick). */
  readonly namespace: string | null;

  constructor(phase: ElectorErrorPhase, candidateId: string, namespace: string | null, message: string, cause: unknown) {
    super(phase, { ns: namespace ?? '', candidateId }, message, cause);
    const detail = cause instanceof Error ? cause.message : String(cause);
    this.message = `LeaderElectorGroup ${candidateId}${namespace === null ? '' : ` in namespace ${JSON.stringify(namespace)}`}: ${message}: ${detail}`;
    this.namespace = namespace;
  }
}

/** Events of a {@link LeaderElectorGroup}; every one names its namespace. */
export interface LeaderElectorGroupEvents {
  /** This group became leader of `lease.ns` (after `onStartedLeading` was called). */
  elected: [lease: Lease];
  /** Its leadership of `lease.ns` ended (the signal has aborted; after `onStoppedLeading` was called). */
  demoted: [lease: Lease, reason: DemotionReason];
  /** The observed leader or term of `ns` changed (`null, null` when known vacant). */
  leader: [ns: string, leaderId: string | null, term: number | null];
  /**
   * A tick, the LISTEN connection, a callback, a hand-over or the stop failed; the loop carries
   * on. A LISTEN outage is one error (and a reminder a minute while it lasts), not one per
   * reconnect attempt.
   */
  error: [error: LeaderElectorGroupError];
  /**
   * PostgreSQL, for the whole group: LISTEN went `down` (hand-overs are noticed by ticks until it
   * is back), is `up` again after that, or is `off` for good. See {@link NotificationsState}.
   */
  notifications: [state: NotificationsState];
  /** After every tick: counts, duration and the database clock's skew. */
  tick: [tick: GroupTick];
}

type State = 'idle' | 'running' | 'stopping';

/** One run of the loop, from start() until its stop. */
interface Run {
  /** Its ticks, vacates, prunes and their timers: ended as soon as a stop begins. */
  readonly loop: LoopRun;
  starting: Promise<void> | undefined;
  ticking: Promise<void> | undefined;
  tickAgain: boolean;
  tickTimer: NodeJS.Timeout | undefined;
  vacating: Promise<void> | undefined;
  pruning: Promise<void> | undefined;
  /** PostgreSQL: the LISTEN subscription, closed by the stop. */
  listening: LeaseChangeSubscription | undefined;
}

/**
 * One process campaigning for many namespaces (one lease per scheduled job, shard or tenant) at
 * the cost of one: each tick renews every held lease, acquires every vacant or expired one and
 * heartbeats in ONE transaction for all namespaces (PostgreSQL: one statement once their rows exist), however many
 * there are. See docs/group.md.
 *
 * Per namespace it keeps the guarantees of `LeaderElector`: a local deadline per lease (the
 * monotonic time taken just before the tick that granted or renewed it was sent, plus
 * `expireSeconds`), a term per namespace for fencing with `assertLeader(candidateId, { ns, term,
 * session })`, a `Lease.signal` that aborts when that leadership ends, `onStoppedLeading` and
 * `'demoted'` only for a leadership that started, priority and eligibility as the elector's.
 * With `balance: true` the live eligible candidates of the namespaces share them evenly.
 */
export class LeaderElectorGroup extends EventEmitter<LeaderElectorGroupEvents> {
  readonly #o: CheckedGroupOptions;
  /** The namespaces, in the order they were given or added. */
  readonly #namespaces: Set<string>;
  #state: State = 'idle';
  #dataSource: DataSource | undefined;
  #store: GroupStore | undefined;
  /** During start()'s first tick null; the missing-tables error it met, which start() rejects with. */
  #startFailure: TablesMissingError | null | undefined;
  /** MySQL: namespaces whose leader row is known to exist (the tick skips creating them). */
  readonly #known = new Set<string>();
  readonly #leaderships = new Map<string, Leadership>();
  readonly #observed = new Map<string, { leaderId: string | null; term: number | null; rank: number }>();
  /** Namespaces whose lease is being given up (no local leadership); the reason their term ends with. */
  readonly #giving = new Map<string, VacateReason>();
  /** onStoppedLeading callbacks in flight, per namespace. */
  readonly #stoppedCallbacks = new StoppedCallbacks();
  /** The callbacks and events of a leadership (see `leadership.ts` for their order). */
  readonly #hooks: LeadershipHooks;
  /** The current run (from start() until its stop has finished). */
  #run: Run | undefined;
  #sendMetadata = true;
  #stopping: Promise<void> | undefined;
  #removeSignalHandlers: (() => void) | undefined;
  readonly #skewAlarm: ClockSkewAlarm;

  /** Validates the options (throws {@link ValidationError} naming the option); touches no database. */
  constructor(options?: LeaderElectorGroupOptions) {
    super();
    this.#o = checkGroupOptions(options);
    this.#namespaces = new Set(this.#o.namespaces);
    this.#skewAlarm = new ClockSkewAlarm(this.#o.clockSkewWarningSeconds);
    this.#hooks = {
      onStartedLeading: this.#o.onStartedLeading,
      onStoppedLeading: this.#o.onStoppedLeading,
      call: (ns, name, fn) => this.#callback(ns, name, fn),
      elected: (lease) => this.#emitSafely('elected', lease),
      demoted: (lease, reason) => this.#emitSafely('demoted', lease, reason),
      expired: (leadership) => {
        if (this.#leaderships.get(leadership.lease.ns) === leadership) this.#demote(leadership.lease.ns, 'lease-expired-locally');
      },
    };
  }

  /** This group's candidate UUID, lower-case (default: a random UUID). */
  get candidateId(): string {
    return this.#o.candidateId;
  }

  /** Lease and candidate expiry in seconds (default 60). */
  get expireSeconds(): number {
    return this.#o.expireSeconds;
  }

  /** The tick period in ms, ±10% jitter (default `expireSeconds * 1000 / 3`). */
  get intervalMs(): number {
    return this.#o.intervalMs;
  }

  /** Whether the namespaces are shared evenly with the other candidates (default false). */
  get balance(): boolean {
    return this.#o.balance;
  }

  /** The namespaces this group campaigns for now, in the order given and added. */
  get namespaces(): readonly string[] {
    return Object.freeze([...this.#namespaces]);
  }

  /** Whether the loop runs (between `start()` and `stop()`). */
  get running(): boolean {
    return this.#state === 'running';
  }

  /**
   * Local and synchronous: true while this group holds the lease of `ns` and its local deadline
   * has not passed (reading it after the deadline ends that leadership on the spot).
   */
  isLeader(ns: string): boolean {
    return this.#current(ns) !== undefined;
  }

  /** The lease of `ns` if this group leads it now; null otherwise. */
  lease(ns: string): Lease | null {
    return this.#current(ns)?.lease ?? null;
  }

  /**
   * The leases held now, by namespace: a snapshot (a new Map on each read), without leases whose
   * local deadline has passed.
   */
  get leases(): ReadonlyMap<string, Lease> {
    const held = new Map<string, Lease>();
    for (const ns of [...this.#leaderships.keys()]) {
      const leadership = this.#current(ns);
      if (leadership) held.set(ns, leadership.lease);
    }
    return held;
  }

  /** The last observed leader of `ns` (ticks, and on PostgreSQL notifications); null if vacant or unknown. */
  leaderOf(ns: string): string | null {
    return this.#observed.get(ns)?.leaderId ?? null;
  }

  /**
   * Campaigns for `ns` too (a no-op when it already does). While running, resolves after a tick
   * that included it (run at once); database errors are reported as `'error'`, not thrown.
   */
  async add(ns: string): Promise<void> {
    const checked = checkNs(ns === undefined ? null : ns, 'ns');
    if (this.#namespaces.has(checked)) return;
    this.#namespaces.add(checked);
    this.#sendMetadata = true;
    const run = this.#run;
    if (this.#state === 'running' && run) await this.#tickLoop(run, true);
  }

  /**
   * Stops campaigning for `ns` (a no-op when it does not). A held lease is resigned: its
   * leadership ends at once (`'demoted'` with reason `stopped`), and once `onStoppedLeading` has
   * settled the lease is vacated (history: `resigned`). Resolves after that; the candidate row of
   * `ns` is left to expire.
   */
  async remove(ns: string): Promise<void> {
    const checked = checkNs(ns === undefined ? null : ns, 'ns');
    if (!this.#namespaces.delete(checked)) return;
    if (this.#leaderships.has(checked)) {
      this.#demote(checked, 'stopped');
      this.#giving.set(checked, 'resigned');
    }
    const run = this.#run;
    if (this.#state === 'running' && run && this.#giving.has(checked)) await this.#flushVacates(run);
  }

  /**
   * Starts the loop: on PostgreSQL LISTEN for lease changes of the namespaces, then the first
   * tick, then one every `intervalMs` ±10%. Resolves after the first tick. Database errors do not
   * reject it (they are reported as `'error'`); it rejects only without a usable DataSource.
   * Harmless while running; after a `stop()` it waits for the stop to finish.
   */
  async start(): Promise<void> {
    if (this.#stopping) await this.#stopping;
    if (this.#state === 'running') return this.#run?.starting;
    const dataSource = this.#o.dataSource ?? getDataSource();
    if (!dataSource.isInitialized) {
      throw new ValidationError('options.dataSource', 'is not initialized: call `await initDb(dataSource)` before `group.start()`');
    }
    assertEntitiesRegistered(dataSource);
    warnIfLocalElection(dataSource);
    this.#dataSource = dataSource;
    this.#store = groupStoreOf(dataSource);
    this.#startFailure = null;
    this.#state = 'running';
    this.#sendMetadata = true;
    const run: Run = {
      loop: new LoopRun(),
      starting: undefined,
      ticking: undefined,
      tickAgain: false,
      tickTimer: undefined,
      vacating: undefined,
      pruning: undefined,
      listening: undefined,
    };
    this.#run = run;
    if (this.#o.handleSignals) this.#removeSignalHandlers = stopOnSignals(this);
    const starting = (async () => {
      if (deliversLeaseChanges(dataSource) && this.#o.listen) {
        run.listening = this.#listen(dataSource, this.#o.listen.url);
        // A stop meanwhile need not wait for the connection: it closes the subscription.
        await Promise.race([run.listening.ready, run.loop.whenEnded()]);
      }
      if (run.loop.ended) return;
      await this.#tickLoop(run);
    })();
    run.starting = starting;
    await starting;
    // The first tick found no tables: every tick would fail alike, so start() stops and rejects.
    const failure = this.#startFailure;
    this.#startFailure = undefined;
    if (failure) {
      // Nothing was written (there are no tables): the stop has no rows to vacate.
      this.#store = undefined;
      await this.stop();
      throw failure;
    }
  }

  /**
   * Ends every leadership at once (signals abort, `onStoppedLeading` and `'demoted'` with reason
   * `stopped`), stops ticking, waits for a tick in flight and for the `onStoppedLeading`
   * callbacks, then vacates every held lease and deletes this candidate's rows in ONE transaction
   * (history: `unregistered`), so the others take over at once (PostgreSQL) or on their next tick.
   * Never rejects; resolves within `stopTimeoutMs` whatever the database does (what has not
   * settled by then is abandoned and reported as phase `stop`; held leases then run out).
   *
   * When it has resolved, nothing the group started runs or is scheduled any more: no tick,
   * vacate, prune, retry, LISTEN connection or reconnect; the DataSource may be destroyed at once.
   * The one exception is a statement already sent that has not answered by the bound (it hangs):
   * it stays in flight, and when it answers nothing follows from it — no further statement (only
   * the ROLLBACK that ends the transaction it belongs to) and no event.
   */
  stop(): Promise<void> {
    if (this.#stopping) return this.#stopping;
    if (this.#state !== 'running') return Promise.resolve();
    this.#state = 'stopping';
    // No tick, vacate or prune starts any more, and those under way send no further statement.
    this.#run?.loop.end();
    const held = new Map<string, number>();
    for (const [ns, leadership] of this.#leaderships) held.set(ns, leadership.lease.term);
    for (const ns of [...this.#leaderships.keys()]) this.#demote(ns, 'stopped');
    const stopping = this.#stop(held).finally(() => {
      this.#stopping = undefined;
    });
    this.#stopping = stopping;
    return stopping;
  }

  async #stop(held: Map<string, number>): Promise<void> {
    const stopBy = performance.now() + this.#o.stopTimeoutMs;
    const left = () => stopBy - performance.now();
    const pending: string[] = [];
    const run = this.#run;
    // The vacate below: ended when this stop is over, so that one abandoned at the bound sends nothing more.
    const stopWork = new LoopRun();
    // The tick and vacate in flight first: a tick answering after the final vacate could leave
    // leases nobody renews. A prune is independent of the leases: waited for at the end.
    if (run && !(await settlesWithin(Promise.all([run.starting, run.ticking, run.vacating]), left()))) {
      pending.push('the tick in flight answering');
    }
    // A tick that answered meanwhile may have started leaderships: they end here too.
    for (const [ns, leadership] of this.#leaderships) held.set(ns, leadership.lease.term);
    for (const ns of [...this.#leaderships.keys()]) this.#demote(ns, 'stopped');
    const finished = await settlesWithin(this.#stoppedCallbacks.settled(), left());
    if (!finished) pending.push('onStoppedLeading settling (the leases are left to run out, not vacated)');
    const store = this.#store;
    // With no time left the vacate would only be abandoned mid-way: the leases run out instead.
    if (store && finished && left() > 0) {
      const all = [...new Set([...this.#namespaces, ...this.#giving.keys()])];
      let failed: unknown;
      const vacating = stopWork
        .start(() => store.vacate(all, this.candidateId, 'unregistered', true))
        ?.catch((error: unknown) => {
          failed = error ?? new Error('vacating failed');
        });
      if (!(await settlesWithin(vacating ?? Promise.resolve(), left()))) pending.push('vacating the leases');
      else if (failed !== undefined) this.#report('stop', null, 'vacating the leases failed; they and the candidate rows will expire by themselves', failed);
      else for (const [ns, term] of held) this.#observe(ns, null, term);
      this.#giving.clear();
    }
    const listening = run?.listening;
    if (run) run.listening = undefined;
    // Ends the connection attempt, reconnects and probe at once; the server's goodbye is waited
    // for within the bound (closing bounds itself to about a second).
    if (listening) await settlesWithin(listening.close().catch((error: unknown) => this.#report('listen', null, 'closing the LISTEN connection failed', error)), left());
    if (run && !(await run.loop.settled(left()))) pending.push('a prune in flight answering');
    if (pending.length > 0) {
      // Callbacks still in flight belong to the run that is over: the next run's hand-overs and
      // stops do not wait for them (the elector's rule).
      this.#stoppedCallbacks.abandon();
      this.#report(
        'stop',
        null,
        `stop() resolved after stopTimeoutMs (${this.#o.stopTimeoutMs} ms) without ${pending.join(', ')}`,
        new Error('abandoned: a lease still held at the database runs out by itself'),
      );
    }
    stopWork.end();
    if (this.#run === run) this.#run = undefined;
    this.#removeSignalHandlers?.();
    this.#removeSignalHandlers = undefined;
    this.#state = 'idle';
  }

  /** Same as {@link stop}. */
  async [Symbol.asyncDispose](): Promise<void> {
    await this.stop();
  }

  // ---- the loop -------------------------------------------------------------------------------

  /** Runs ticks of `run` until no extra one was requested, then schedules the next. Never rejects. */
  async #tickLoop(run: Run, again = false): Promise<void> {
    if (run.ticking) {
      run.tickAgain = true;
      // A caller that needs a tick started after now (add) waits for the repeat too.
      if (again) while (run.ticking) await run.ticking;
      else await run.ticking;
      return;
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

  #kick(): void {
    const run = this.#run;
    if (this.#state === 'running' && run) void this.#tickLoop(run);
  }

  /** One tick of `run` (once the run has ended, its late answer is ignored). */
  async #tick(run: Run): Promise<void> {
    const store = this.#store;
    if (!store) return;
    // Leases given up whose onStoppedLeading has settled: vacated by this tick's own transaction
    // (where the store can), instead of being renewed.
    const release = new Map<string, VacateReason>();
    if (store.foldsVacates && !run.vacating) {
      for (const [ns, reason] of this.#giving) if (!this.#stoppedCallbacks.has(ns)) release.set(ns, reason);
    }
    const namespaces = [...this.#namespaces].filter((ns) => !release.has(ns)).sort(compareNs);
    const sentAt = performance.now();
    // The local deadline starts when the transaction that renews begins: the tick's first, or the
    // rerun after a lock wait ran out (a lease written by that transaction ends no earlier).
    let deadline = LocalDeadline.startingNow(this.#o.clock, this.#o.expireSeconds * 1000);
    let attemptAt = sentAt;
    const beforeAttempt = () => {
      deadline = LocalDeadline.startingNow(this.#o.clock, this.#o.expireSeconds * 1000);
      attemptAt = performance.now();
    };
    const sendingMetadata = this.#sendMetadata;
    let result: GroupElectOutcome;
    try {
      result = await store.elect(
        {
          namespaces,
          candidateId: this.candidateId,
          expireSeconds: this.#o.expireSeconds,
          priority: this.#o.priority,
          eligible: this.#o.eligible,
          metadataJson: sendingMetadata ? this.#o.metadataJson : undefined,
          balance: this.#o.balance,
          release,
          lockWaitMs: this.#lockWaitMs(),
        },
        { known: this.#known, beforeAttempt },
      );
    } catch (caught) {
      if (run.loop.ended) return;
      const error = explainDatabaseError(this.#dataSource!, caught);
      if (this.#startFailure === null && error instanceof TablesMissingError) {
        this.#startFailure = error;
        return;
      }
      const failure = this.#report('tick', null, `the group's tick failed (retrying in about ${Math.round(this.#o.intervalMs)} ms)`, error);
      for (const ns of [...this.#leaderships.keys()]) this.#current(ns); // demotes leases whose deadline passed
      this.#emitTick({ durationSeconds: (performance.now() - sentAt) / 1000, namespaces: namespaces.length, held: this.#leaderships.size, acquired: 0, lost: 0, members: 0, clockSkew: null, error: failure });
      return;
    }
    this.#startFailure = undefined;
    // The answer of a tick whose run was stopped meanwhile: stop() ends every leadership and
    // vacates the leases itself.
    if (run.loop.ended) return;
    const answeredAt = performance.now();
    const durationMs = answeredAt - sentAt;
    this.#sendMetadata = !sendingMetadata && result.unregistered > 0;
    const counts = { acquired: 0, lost: 0 };
    const vacated = new Map((result.released ?? []).map((r) => [r.ns, r.term]));
    const skipped = new Set(result.releaseSkipped ?? []);
    for (const [ns, reason] of release) {
      // Vacated, or no longer held; one still held but locked by another transaction is retried.
      if (this.#giving.get(ns) === reason && !skipped.has(ns)) this.#giving.delete(ns);
    }
    this.#apply(run, result, deadline, counts);
    // After #apply, which arms this tick's deadlines before any listener runs.
    for (const [ns, term] of vacated) if (release.has(ns)) this.#observe(ns, null, term);
    if (!store.foldsVacates) void this.#flushVacates(run);
    this.#maybePrune(run);
    // The round trip of the attempt that answered, ended when the answer came: not after it was
    // applied (callbacks and events run in #apply), which would skew the skew by half that time.
    const clockSkew = measureClockSkew(result.databaseNow, deadline.startedAt.getTime(), answeredAt - attemptAt);
    this.#emitTick({
      durationSeconds: durationMs / 1000,
      namespaces: namespaces.length,
      held: this.#leaderships.size,
      acquired: counts.acquired,
      lost: counts.lost,
      members: result.members.length,
      clockSkew,
      error: null,
    });
    const warning = this.#skewAlarm.check(clockSkew);
    if (warning) this.#report('clock', null, warning, new Error('leases are judged by the database clock alone; check NTP on this host and the database server'));
  }

  /**
   * How long a tick waits for a lock on the leader row of a lease this group holds (its own
   * fenced transactions take it for a moment): half a tick interval, and at most half of what
   * is left of a lease the previous tick renewed (the lease minus the longest interval), so that
   * a transaction holding such a row for longer (a rival's) delays the renewal of the other
   * leases by a fraction of their remaining time. From the options alone: a lease that could not
   * be renewed for a while must not shorten the wait for the others.
   */
  #lockWaitMs(): number {
    const left = this.#o.expireSeconds * 1000 - this.#o.intervalMs * (1 + TICK_JITTER);
    return Math.max(1, Math.floor(Math.min(this.#o.intervalMs, left) / 2));
  }

  #apply(run: Run, result: GroupElectOutcome, deadline: LocalDeadline, counts: { acquired: number; lost: number }): void {
    const me = this.candidateId;
    const handOver: string[] = [];
    // First, before any user code runs (a namespace's callbacks must not eat into another's
    // lease): this tick's renewals and grants arm their deadlines.
    const granted = new Map<string, Leadership>();
    if (!deadline.passed) {
      for (const { ns, isLeader, term, acquired, handOver: handing } of result.outcomes) {
        if (!isLeader || term === null || handing || !this.#namespaces.has(ns) || this.#giving.has(ns)) continue;
        const held = this.#leaderships.get(ns);
        if (held && held.lease.term === term && !acquired && !held.passed) held.renew(deadline);
        else granted.set(ns, new Leadership(this.#hooks, ns, me, term, deadline));
      }
    }
    for (const outcome of result.outcomes) {
      const { ns } = outcome;
      const current = this.#current(ns);
      if (!this.#namespaces.has(ns)) {
        // Removed while the tick was in flight: a lease it took or renewed is given up.
        if (outcome.isLeader && !this.#giving.has(ns)) this.#giving.set(ns, 'resigned');
        continue;
      }
      if (outcome.term === null) {
        // Unknown this tick (its row was locked by another transaction and skipped, it changed
        // hands after the statement began, or a racing first insert won): not renewed, so a
        // leadership held here keeps its local deadline unextended and ends by it unless a later
        // tick renews it. Safe as for a failed tick: nobody can take the lease before its end by
        // the database clock, which is no earlier than the local deadline. Ending it at once
        // would make a lock held for a moment by a rival's tick demote and re-elect the same term.
        continue;
      }
      if (outcome.isLeader && (outcome.handOver || this.#giving.has(ns))) {
        if (current) {
          this.#demote(ns, 'handed-over');
          counts.lost++;
        }
        if (!this.#giving.has(ns)) this.#giving.set(ns, 'handed-over');
        this.#observe(ns, outcome.leaderId, outcome.term);
        continue;
      }
      if (!outcome.isLeader && this.#giving.has(ns) && !run.vacating) this.#giving.delete(ns);
      const grant = granted.get(ns);
      if (grant) {
        granted.delete(ns);
        if (current) {
          this.#demote(ns, 'lost');
          counts.lost++;
        }
        if (this.#begin(grant)) counts.acquired++;
      } else if (current && !(outcome.isLeader && outcome.term === current.lease.term)) {
        this.#demote(ns, 'lost');
        counts.lost++;
      }
      this.#observe(ns, outcome.leaderId, outcome.term);
    }
    // Grants a callback made moot (a namespace removed or handed over meanwhile): never started.
    for (const unused of granted.values()) void unused.end('stopped');
    if (this.#o.balance) {
      // Surplus over the fair share goes back, as far as the others lack theirs.
      const n = this.#namespaces.size;
      const members = result.members;
      const target = fairShare(n, members, me);
      const heldBy = new Map<string, number>();
      let vacant = 0;
      for (const outcome of result.outcomes) {
        if (!this.#namespaces.has(outcome.ns)) continue;
        if (outcome.leaderId === null) vacant++;
        else heldBy.set(outcome.leaderId, (heldBy.get(outcome.leaderId) ?? 0) + 1);
      }
      let deficit = 0;
      for (const member of members) if (member !== me) deficit += Math.max(0, fairShare(n, members, member) - (heldBy.get(member) ?? 0));
      const mine = [...this.#leaderships.keys()].sort(compareNs).reverse();
      const give = Math.max(0, Math.min(mine.length - target, deficit - vacant));
      for (const ns of mine.slice(0, give)) handOver.push(ns);
    }
    for (const ns of handOver) {
      this.#demote(ns, 'handed-over');
      counts.lost++;
      this.#giving.set(ns, 'handed-over');
    }
  }

  /**
   * Vacates the leases being given up, once their `onStoppedLeading` callbacks have settled (the
   * next leader starts after this one's work is finished), in one transaction per reason. Ticks
   * keep renewing them meanwhile, so nobody else starts early. A failure is reported and retried
   * after the next tick.
   */
  #flushVacates(run: Run): Promise<void> {
    if (run.vacating) return run.vacating;
    if (this.#giving.size === 0 || !this.#store) return Promise.resolve();
    const store = this.#store;
    const batch = new Map(this.#giving);
    const vacating = run.loop.start(async () => {
      await this.#stoppedCallbacks.settled(batch.keys());
      for (const reason of new Set(batch.values())) {
        // stop() vacates every lease itself.
        if (run.loop.ended) return;
        const names = [...batch].filter(([, r]) => r === reason).map(([ns]) => ns);
        try {
          await store.vacate(names, this.candidateId, reason, false);
          for (const ns of names) {
            if (this.#giving.get(ns) === reason) this.#giving.delete(ns);
            const observed = this.#observed.get(ns);
            if (observed?.leaderId === this.candidateId && observed.term !== null) this.#observe(ns, null, observed.term);
          }
        } catch (error) {
          if (!run.loop.ended) this.#report('hand-over', null, `vacating ${names.length} lease(s) failed (retried after the next tick)`, error);
        }
      }
    });
    if (!vacating) return Promise.resolve();
    const tracked = vacating.finally(() => {
      if (run.vacating === tracked) run.vacating = undefined;
    });
    run.vacating = tracked;
    return tracked;
  }

  #maybePrune(run: Run): void {
    const dataSource = this.#dataSource;
    if (!dataSource || run.pruning) return;
    const pruning = run.loop.start(async () => {
      try {
        await pruneIfDue(dataSource, this.#o);
      } catch (error) {
        if (!run.loop.ended) this.#report('prune', null, 'pruning expired candidates or old history failed (retried later)', error);
      } finally {
        run.pruning = undefined;
      }
    });
    if (pruning) run.pruning = pruning;
  }

  // ---- leadership, per namespace ------------------------------------------------------------------

  #current(ns: string): Leadership | undefined {
    const leadership = this.#leaderships.get(ns);
    if (leadership && leadership.passed) {
      this.#demote(ns, 'lease-expired-locally');
      return undefined;
    }
    return leadership;
  }

  /**
   * Starts `granted` unless, while earlier callbacks ran, the loop stopped, its namespace was
   * removed or is being given up, or another leadership of it began: then it ends unstarted (a
   * removed namespace's lease is given up). Whether it started.
   */
  #begin(granted: Leadership): boolean {
    const { ns } = granted.lease;
    if (this.#state !== 'running' || !this.#namespaces.has(ns) || this.#giving.has(ns) || this.#leaderships.has(ns)) {
      void granted.end('stopped');
      if (this.#state === 'running' && !this.#namespaces.has(ns) && !this.#giving.has(ns)) this.#giving.set(ns, 'resigned');
      return false;
    }
    this.#leaderships.set(ns, granted);
    granted.start();
    return true;
  }

  /** Ends the leadership of `ns`: isLeader false, then (see `leadership.ts`) signal aborted, onStoppedLeading, 'demoted'. */
  #demote(ns: string, reason: DemotionReason): void {
    const leadership = this.#leaderships.get(ns);
    if (!leadership) return;
    this.#leaderships.delete(ns);
    void leadership.end(reason);
    this.#stoppedCallbacks.track(leadership);
  }

  /** Records the observed leader of `ns` (the rules of {@link LeaderElector}'s: a term granted twice is news). */
  #observe(ns: string, leaderId: string | null, term: number): void {
    const rank = term * 2 + (leaderId === null ? 1 : 0);
    const previous = this.#observed.get(ns) ?? { leaderId: null, term: null, rank: -1 };
    if (rank < previous.rank || (rank === previous.rank && leaderId === previous.leaderId)) return;
    const observedTerm = leaderId === null ? null : term;
    this.#observed.set(ns, { leaderId, term: observedTerm, rank });
    if (previous.leaderId === leaderId && previous.term === observedTerm) return;
    this.#emitSafely('leader', ns, leaderId, observedTerm);
  }

  // ---- PostgreSQL LISTEN ----------------------------------------------------------------------

  #listen(dataSource: DataSource, url: string | undefined): LeaseChangeSubscription {
    const notifications = new NotificationsReporter(
      (message, error) => void this.#report('listen', null, message, error),
      (state) => this.#emitSafely('notifications', state),
    );
    const subscriber: ListenSubscriber = {
      ns: '',
      matches: (ns) => this.#namespaces.has(ns),
      onChange: (change) => this.#onLeaseChange(change),
      onError: (error) => notifications.down(error),
      onResync: () => this.#kick(),
      onRestored: (outage) => notifications.up(outage),
      onUnavailable: (error) => notifications.off(error),
    };
    return subscribeToLeaseChanges(dataSource, subscriber, { url });
  }

  #onLeaseChange(change: LeaseChange): void {
    if (this.#state !== 'running') return;
    const current = this.#leaderships.get(change.ns);
    if (change.leaderId === null) {
      if (current && change.term >= current.lease.term) this.#demote(change.ns, 'lost');
      this.#observe(change.ns, null, change.term);
      this.#kick();
      return;
    }
    if (change.leaderId === this.candidateId) return;
    if (current && change.term >= current.lease.term) this.#demote(change.ns, 'lost');
    this.#observe(change.ns, change.leaderId, change.term);
  }

  // ---- errors -----------------------------------------------------------------------------------

  #callback(ns: string, name: string, fn: () => unknown): Promise<void> {
    const report = (error: unknown) => {
      this.#report('callback', ns, `${name} threw`, error);
    };
    try {
      return Promise.resolve(outsideRuns(fn)).then(() => undefined, report);
    } catch (error) {
      report(error);
      return Promise.resolve();
    }
  }

  #emitTick(tick: Omit<GroupTick, 'candidateId'>): void {
    this.#emitSafely('tick', Object.freeze({ candidateId: this.candidateId, ...tick }));
  }

  #emitSafely<K extends 'elected' | 'demoted' | 'leader' | 'tick' | 'notifications'>(event: K, ...args: LeaderElectorGroupEvents[K]): void {
    try {
      outsideRuns(() => (this.emit as (event: string, ...args: unknown[]) => boolean)(event, ...args));
    } catch (error) {
      this.#report('callback', null, `a '${event}' listener threw`, error);
    }
  }

  #report(phase: ElectorErrorPhase, ns: string | null, message: string, cause: unknown): LeaderElectorGroupError {
    const error = new LeaderElectorGroupError(phase, this.candidateId, ns, message, cause);
    if (this.listenerCount('error') > 0) {
      try {
        outsideRuns(() => this.emit('error', error));
        return error;
      } catch (listenerError) {
        this.#log(new LeaderElectorGroupError('callback', this.candidateId, null, "an 'error' listener threw", listenerError));
      }
    }
    this.#log(error);
    return error;
  }

  #log(error: LeaderElectorGroupError): void {
    try {
      outsideRuns(() => this.#o.logger.error(`gemstone-utils: ${error.message}`, error));
    } catch {
      // A broken logger must not take the loop down with it.
    }
  }
}

export type { LeaderElectorGroupOptions, GroupTick } from './group-options';
