import type { DataSource } from 'typeorm';
import { getDataSource } from '../../../db/default-data-source';
import { TablesMissingError, ValidationError } from '../../../errors';
import { warnIfLocalElection } from '../../../db/sqlite-warning';
import { assertEntitiesRegistered } from '../../entities-check';
import { deliversLeaseChanges, LeaseChangeSubscription, ListenSubscriber, subscribeToLeaseChanges } from '../../observe/lease-changes';
import type { VacateReason } from '../../observe/history';
import type { LeaseChange } from '../../store';
import type { CheckedElectorOptions } from '../elector-options';
import type { LeaderElectorError } from '../errors';
import { ElectorHealth, TickHealth } from '../health';
import { LocalDeadline } from '../monotonic';
import { LoopRun } from '../../../db/loop-run';
import { settlesWithin } from '../../../db/timers';
import { pruneIfDue } from '../loop-support';
import { NotificationsReporter } from '../notifications-state';
import { stopOnSignals } from '../shutdown';
import { ClockSkew, ClockSkewAlarm, measureClockSkew } from '../tick';
import type { Campaign, CampaignAnswer } from './campaign';
import type { Leadership, LeadershipWatcher } from './leadership';
import { DatabaseClock } from '../database-clock';
import { applyAnswer } from './apply';
import { Leaderships, Observed, ObservedLeaders } from './leaderships';
import { ErrorFactory, LoopEmitter, Reporter } from './reporter';
import { Ticks } from './ticks';

/**
 * THE loop, written once for every campaign (client-go's leaderelection loop, apart from its
 * `resourcelock.Interface`): `LeaderElector` (one namespace) and `LeaderElectorGroup` (many) are
 * facades over it, and anything else that needs leadership (schedules) builds on it the same way.
 *
 * How to build on it:
 * 1. Implement {@link Campaign} (`campaign.ts`): what one tick asks the store and what it found per
 *    namespace, how given-up leases are vacated, the stop's last statement. Or use one of
 *    `campaigns/`.
 * 2. Implement {@link EngineHost}: the facade that is the `EventEmitter` (events `'elected'`,
 *    `'demoted'`, `'error'` are emitted on it by the engine), how its errors read, and what it
 *    emits when the observed leader changes and after each tick.
 * 3. `new LoopEngine(options, campaign, host, namespaces)`; `start()`, `stop()`, `current(ns)`,
 *    `observed(ns)`, `health(ns)`, `add(ns)`, `remove(ns)`; `reporter` for user code of its own.
 * 4. Work that lives as long as a leadership (schedules, `src/schedules/`) does not poll
 *    `current(ns)` nor run a loop of its own: it {@link LoopEngine.watch}es the leaderships (told
 *    when each starts and ends; what it returns from the end is waited for like
 *    `onStoppedLeading`, within the stop's bound — outside a stop within a bound of its own, see
 *    `LeadershipWatcher`), and reads the database's time from
 *    {@link LoopEngine.databaseClock}, measured by every tick.
 *
 * Its parts, one job each: `leadership.ts` (one leadership and the callback rule), `leaderships.ts`
 * (the leaderships and observed leaders per namespace), `apply.ts` (a tick's answer applied),
 * `ticks.ts` (tick sequencing and jitter), `reporter.ts` (events, user code, errors), and this
 * file: the lifecycle (start/stop driver, bounded stop), the tick, hand-overs, LISTEN, pruning.
 *
 * What it guarantees, per namespace:
 * - Ticks never overlap; the next one is scheduled `intervalMs` ±10% after the last ended;
 *   `kick()` (a vacancy announced on LISTEN) runs one at once.
 * - A grant's local deadline (the monotonic time taken just before the tick's transaction was
 *   sent, plus `expireSeconds`) is armed when the answer arrives, before any user code; the
 *   callback order is the one of `leadership.ts`: started before stopped, stopped only after
 *   started, never a start after the demotion.
 * - A lease given up (hand-over for priority or balance, `remove`) is vacated only after its
 *   `onStoppedLeading` settled, so the next leader starts after this one's work is finished; the
 *   ticks renew it meanwhile.
 * - `start()`/`stop()` in any order, the latest call wins; `stop()` resolves within
 *   `stopTimeoutMs` whatever the database does, and once it has, nothing the engine started runs
 *   or is scheduled (see {@link LoopEngine.stop}).
 * - Errors (ticks, LISTEN, callbacks, prunes, hand-overs) are reported through the host's
 *   `'error'` (or the logger), never thrown and never unhandled.
 */

/** The options the engine reads (those of `LeaderElector` without `ns` and `onNewLeader`). */
export type EngineOptions = Omit<CheckedElectorOptions, 'ns' | 'onNewLeader' | 'metadata' | 'metadataJson' | 'priority' | 'eligible'>;

/** The facade an engine serves. */
export interface EngineHost {
  /** Where the engine's events go; `stopOnSignals` (option `handleSignals`) stops it. */
  readonly emitter: LoopEmitter;
  /** How the facade's errors read. */
  readonly error: ErrorFactory;
  /** LISTEN for this one namespace; null: for the engine's namespaces, as they change. */
  readonly listenNs: string | null;
  /** The error of a stop that resolved at its bound without `pending`. */
  stopTimedOut(pending: readonly string[], vacated: boolean): LeaderElectorError;
  /** The observed leader of `ns` changed. */
  observed(ns: string, observed: Observed): void;
  /** A tick ended (answered or failed), after its other events. */
  ticked(summary: TickSummary): void;
  /** Whether the loop has schedules now: its prunes then include the finished runs. */
  hasSchedules(): boolean;
}

/** One tick, for the host's `'tick'` event. */
export interface TickSummary {
  /** From just before the tick's transaction was sent until its answer or error (monotonic clock). */
  readonly durationMs: number;
  /** How many namespaces the tick campaigned for. */
  readonly asked: number;
  /** Null on error. */
  readonly answer: CampaignAnswer | null;
  /** Leaderships after the tick. */
  readonly held: number;
  readonly acquired: number;
  readonly lost: number;
  readonly clockSkew: ClockSkew | null;
  readonly error: LeaderElectorError | null;
}

type State = 'idle' | 'starting' | 'running' | 'stopping';

/** One run of the loop, from start() until its stop. */
interface Run {
  /** Its ticks, vacates, prunes and their timers: ended as soon as a stop begins. */
  readonly loop: LoopRun;
  readonly ticks: Ticks;
  /** The vacate of given-up leases in flight (waiting for onStoppedLeading, then vacating), if any. */
  vacating: Promise<void> | undefined;
  pruning: Promise<void> | undefined;
  /** PostgreSQL: the LISTEN subscription, closed by the stop. */
  listening: LeaseChangeSubscription | undefined;
}

export class LoopEngine {
  readonly #o: EngineOptions;
  readonly #campaign: Campaign;
  readonly #host: EngineHost;
  readonly reporter: Reporter;
  /** The namespaces campaigned for, in the order given and added. */
  readonly #namespaces: Set<string>;
  readonly #leaderships: Leaderships;
  readonly #observed = new ObservedLeaders();
  /** The library's work per leadership (schedules): see {@link watch}. */
  readonly #watchers = new Set<LeadershipWatcher>();
  /** The database's time as the ticks measure it. */
  readonly databaseClock = new DatabaseClock();
  /** Leases being given up (no local leadership), with the reason their term ends with. */
  readonly #giving = new Map<string, VacateReason>();
  readonly #health: TickHealth;
  readonly #skewAlarm: ClockSkewAlarm;
  #state: State = 'idle';
  #dataSource: DataSource | undefined;
  /** The missing-tables error of start()'s first tick, which start() rejects with. */
  #startFailure: TablesMissingError | undefined;
  /** What the latest start()/stop() asked for. */
  #want: 'run' | 'stop' = 'stop';
  /** The driver moving the state towards #want, while one runs. */
  #driving: Promise<void> | undefined;
  /** The leases held when a stop began (namespace → term): their vacancy is observed once the stop vacated them. */
  readonly #heldAtStop = new Map<string, number>();
  /** The current run (from start() until its stop has finished). */
  #run: Run | undefined;
  /** performance.now() by which the current stop must have resolved. */
  #stopBy: number | undefined;
  /** The statements of the current stop: ended when that stop is over, so one abandoned at its bound sends nothing more. */
  #stopWork: LoopRun | undefined;
  /** The #stop under way, if any (it bounds and reports its own steps). */
  #stopping: Promise<void> | undefined;
  #removeSignalHandlers: (() => void) | undefined;
  /** Send the metadata with the next tick: when registering, and when the last tick found a candidate row missing. */
  #sendMetadata = true;

  constructor(options: EngineOptions, campaign: Campaign, host: EngineHost, namespaces: Iterable<string>) {
    this.#o = options;
    this.#campaign = campaign;
    this.#host = host;
    this.#namespaces = new Set(namespaces);
    this.reporter = new Reporter(host.emitter, options.logger, host.error);
    this.#health = new TickHealth(options.clock, options.expireSeconds * 1000);
    this.#skewAlarm = new ClockSkewAlarm(options.clockSkewWarningSeconds);
    this.#leaderships = new Leaderships({
      watchers: this.#watchers,
      onStartedLeading: options.onStartedLeading,
      onStoppedLeading: options.onStoppedLeading,
      call: (ns, name, fn) => this.reporter.callback(ns, name, fn),
      elected: (lease) => this.reporter.emit('elected', lease),
      demoted: (lease, reason) => this.reporter.emit('demoted', lease, reason),
    });
  }

  // ---- what the facades read ------------------------------------------------------------------

  /** Between start() and the beginning of a stop (also while start() is under way). */
  get active(): boolean {
    return this.#state === 'starting' || this.#state === 'running';
  }

  get namespaces(): readonly string[] {
    return Object.freeze([...this.#namespaces]);
  }

  /** The leadership of `ns` if its local deadline has not passed; ends it on the spot if it has. */
  current(ns: string): Leadership | undefined {
    return this.#leaderships.current(ns);
  }

  /** The namespaces led now (deadlines checked). */
  held(): string[] {
    return this.#leaderships.names().filter((ns) => this.current(ns) !== undefined);
  }

  observed(ns: string): Observed | undefined {
    return this.#observed.of(ns);
  }

  /** `health()` of the loop, as seen from `ns` (its leadership, if any). */
  health(ns: string): ElectorHealth {
    if (!this.active) return this.#health.report('stopped', false, false);
    // Freshness is read first: a leadership's deadline is never later than the last successful
    // tick's, so a report that finds the ticks stale also finds the leadership over (one read
    // never says "leader" and "no tick within the lease" together, as clocks move between reads).
    const stale = this.#health.stale;
    const held = this.#leaderships.get(ns) !== undefined;
    const leading = this.current(ns) !== undefined;
    return this.#health.report(leading ? 'leader' : 'follower', held && !leading, stale);
  }

  /** The DataSource of the current (or last) run; undefined before the first start(). */
  get dataSource(): DataSource | undefined {
    return this.#dataSource;
  }

  /** The configured stop bound, in ms. */
  get stopTimeoutMs(): number {
    return this.#o.stopTimeoutMs;
  }

  /** The tick period, in ms. */
  get intervalMs(): number {
    return this.#o.intervalMs;
  }

  /**
   * Tells `watcher` of every leadership that starts or ends from now on (not of one under way:
   * read {@link current} for that). Returns a function that stops telling it.
   */
  watch(watcher: LeadershipWatcher): () => void {
    this.#watchers.add(watcher);
    return () => void this.#watchers.delete(watcher);
  }

  // ---- namespaces -----------------------------------------------------------------------------

  /** Campaigns for `ns` too; while running, resolves after a tick that included it (run at once). */
  async add(ns: string): Promise<void> {
    if (this.#namespaces.has(ns)) return;
    this.#namespaces.add(ns);
    this.#sendMetadata = true;
    const run = this.#run;
    if (this.active && run) await run.ticks.run(true);
  }

  /** Stops campaigning for `ns`: a held lease is resigned (vacated once `onStoppedLeading` settled); resolves after that. */
  async remove(ns: string): Promise<void> {
    if (!this.#namespaces.delete(ns)) return;
    if (this.#leaderships.get(ns)) {
      this.#leaderships.demote(ns, 'stopped');
      this.#giving.set(ns, 'resigned');
    }
    const run = this.#run;
    if (this.active && run && this.#giving.has(ns)) await this.#flushVacates(run);
  }

  // ---- start and stop -------------------------------------------------------------------------

  /**
   * On PostgreSQL LISTEN, then the first tick, then one every `intervalMs` ±10%. Resolves after
   * the first tick; rejects only without a usable DataSource (or without tables). The latest of
   * start()/stop() wins.
   */
  start(): Promise<void> {
    this.#want = 'run';
    return this.#drive();
  }

  /**
   * Ends every leadership at once (signals abort, `onStoppedLeading`, `'demoted'` with reason
   * `stopped`), stops ticking, waits for a tick in flight and for the `onStoppedLeading`
   * callbacks, then sends the campaign's `unregister`. Never rejects; resolves within
   * `stopTimeoutMs` whatever the database does (what has not settled by then is abandoned and
   * reported as phase `stop`). Once resolved nothing the engine started runs or is scheduled; a
   * statement already sent that hangs stays in flight, and nothing follows from its answer.
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
    if (this.active) this.#halt();
    const driving = this.#drive().catch(() => undefined);
    // A start() stuck in its first statement holds the driver: the bound holds for it too.
    return settlesWithin(driving, stopBy - performance.now()).then(async (inTime) => {
      if (this.#want !== 'stop') return;
      if (!inTime) {
        // A running #stop bounds its own steps by the same instant and reports what it abandoned:
        // it is done within a few timer turns.
        if (this.#stopping) await this.#stopping;
        else this.reporter.report(this.#host.stopTimedOut([this.#campaign.words.startInFlight], false));
      }
      // Whatever of this stop is still on its way (the driver may still be in start()) sends nothing.
      stopWork.end();
    });
  }

  /** Moves the loop towards `#want` until it is there; one driver at a time. */
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
        } else if (this.#want === 'stop' && this.active) {
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

  /** #start; when it fails, the loop is left idle and stays stopped until the next start(). */
  async #startOrUndo(): Promise<void> {
    try {
      await this.#start();
    } catch (error) {
      this.#want = 'stop';
      if (this.active) this.#halt();
      if (this.#state === 'stopping') await this.#stopOnce();
      throw error;
    }
  }

  async #start(): Promise<void> {
    const dataSource = this.#o.dataSource ?? getDataSource();
    if (!dataSource.isInitialized) {
      const owner = this.#campaign.words.owner;
      throw new ValidationError('options.dataSource', `is not initialized: call \`await initDb(dataSource)\` before \`${owner}.start()\``);
    }
    // A DataSource without the entities fails every tick the same way: refuse it up front.
    assertEntitiesRegistered(dataSource);
    warnIfLocalElection(dataSource);
    this.#campaign.open(dataSource);
    this.#dataSource = dataSource;
    this.#health.started();
    this.#sendMetadata = true;
    this.#state = 'starting';
    const loop = new LoopRun();
    const run: Run = {
      loop,
      ticks: new Ticks(loop, this.#o.intervalMs, () => this.#tick(run)),
      vacating: undefined,
      pruning: undefined,
      listening: undefined,
    };
    this.#run = run;
    if (this.#o.handleSignals) this.#removeSignalHandlers = stopOnSignals(this.#host.emitter);
    if (deliversLeaseChanges(dataSource) && this.#o.listen) {
      run.listening = this.#listen(dataSource, this.#o.listen.url);
      // A stop meanwhile need not wait for the connection: it closes the subscription.
      await Promise.race([run.listening.ready, run.loop.whenEnded()]);
    }
    // stop() may have been called while LISTEN was being set up.
    if (this.#state !== 'starting') return;
    await run.ticks.run();
    const failure = this.#startFailure;
    this.#startFailure = undefined;
    if (failure) {
      // Nothing was written (there are no tables): the undoing stop has nothing to vacate.
      this.#campaign.close();
      throw failure;
    }
    if (this.#state === 'starting') this.#state = 'running';
  }

  /**
   * The synchronous first half of a stop: every leadership ends at once; no tick, vacate or prune
   * starts any more, and those under way send no further statement (a tick's answer is ignored).
   */
  #halt(): void {
    this.#state = 'stopping';
    this.#run?.loop.end();
    this.#endAll();
  }

  /** Ends every leadership with reason `stopped`, remembering its term for the stop's vacate. */
  #endAll(): void {
    for (const ns of this.#leaderships.names()) {
      const leadership = this.#leaderships.get(ns);
      if (leadership && !this.#heldAtStop.has(ns)) this.#heldAtStop.set(ns, leadership.lease.term);
      this.#leaderships.demote(ns, 'stopped');
    }
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
   * The rest of a stop, after #halt: waits for the loop, then unregisters — each step only as long
   * as the stop's bound leaves (see `stopTimeoutMs`); what has not settled by then is abandoned.
   */
  async #stop(): Promise<void> {
    const words = this.#campaign.words;
    const stopBy = this.#stopBy ?? performance.now() + this.#o.stopTimeoutMs;
    const stopWork = (this.#stopWork ??= new LoopRun());
    const left = () => stopBy - performance.now();
    // A stop() that already resolved (its bound passed while start() held the driver) has
    // reported what it abandoned; this late remainder reports nothing more.
    const fail = (phase: 'stop' | 'listen', message: string, cause: unknown) => {
      if (!stopWork.ended) this.reporter.fail(phase, null, message, cause);
    };
    const run = this.#run;
    const pending: string[] = [];
    run?.loop.end();
    // The tick and vacate in flight first: a tick answering after the unregister could leave
    // leases nobody renews. A prune is independent of the leases: waited for at the end.
    if (run && !(await settlesWithin(Promise.all([run.ticks.inFlight, run.vacating]), left()))) pending.push(words.tickInFlight);
    // start() may have been mid-way through its first tick, which could have made us leader in
    // the database without a local leadership: the unregister below vacates it either way.
    this.#endAll();
    const held = new Map(this.#heldAtStop);
    this.#heldAtStop.clear();
    const finished = await settlesWithin(this.#leaderships.stoppedCallbacks.settled(), left());
    if (!finished) pending.push(words.callbacksInFlight);
    // Vacating while leader work still runs would let the next leader start beside it. After an
    // abandoned tick it is still sent: it is never worse than leaving the leases to run out.
    let vacated = false;
    // With no time left the unregister would only be abandoned mid-way: the leases run out instead.
    if (this.#campaign.opened && finished && left() > 0) {
      const names = [...new Set([...this.#namespaces, ...this.#giving.keys()])];
      let failed: unknown;
      const unregistering = stopWork
        .start(() => this.#campaign.unregister(names))
        ?.catch((error: unknown) => {
          failed = error ?? new Error('unregistering failed');
        });
      if (!unregistering) {
        // This stop is over already: nothing more is sent for it.
      } else if (!(await settlesWithin(unregistering, left()))) {
        pending.push(words.unregistering);
      } else if (failed !== undefined) {
        fail('stop', words.unregisterFailed, failed);
      } else {
        vacated = true;
        for (const [ns, term] of held) this.#observe(ns, null, term);
      }
      this.#giving.clear();
    }
    const listening = run?.listening;
    if (run) run.listening = undefined;
    if (listening) {
      // Ends the connection attempt, reconnects and probe at once; the server's goodbye is waited
      // for within the bound (closing bounds itself to about a second).
      const closing = listening.close().catch((error: unknown) => fail('listen', 'closing the LISTEN connection failed', error));
      await settlesWithin(closing, left());
    }
    if (run && !(await run.loop.settled(left()))) pending.push('a prune in flight answering');
    if (pending.length > 0) {
      // Callbacks still in flight belong to the run that is over: the next run's hand-overs and
      // stops do not wait for them.
      this.#leaderships.stoppedCallbacks.abandon();
      if (!stopWork.ended) this.reporter.report(this.#host.stopTimedOut(pending, vacated));
    }
    stopWork.end();
    if (this.#stopWork === stopWork) this.#stopWork = undefined;
    if (this.#run === run) this.#run = undefined;
    this.#stopBy = undefined;
    this.#removeSignalHandlers?.();
    this.#removeSignalHandlers = undefined;
    this.#state = 'idle';
    // Leadership work the stop gave up waiting for (its bound passed) sends nothing more either.
    for (const watcher of this.#watchers) watcher.loopStopped();
  }

  // ---- ticks ----------------------------------------------------------------------------------

  /** Ticks at once (a vacancy was announced): the current tick is followed by another right away. */
  kick(): void {
    const run = this.#run;
    if (run && this.active) void run.ticks.run();
  }

  /** One tick of `run` (once the run has ended, its late answer is ignored). */
  async #tick(run: Run): Promise<void> {
    const campaign = this.#campaign;
    if (!campaign.opened) return;
    // Leases given up whose onStoppedLeading has settled: vacated by this tick's own transaction
    // (where the campaign can), instead of being renewed.
    const release = new Map<string, VacateReason>();
    if (campaign.foldsVacates && !run.vacating) {
      for (const [ns, reason] of this.#giving) if (!this.#leaderships.stoppedCallbacks.has(ns)) release.set(ns, reason);
    }
    const namespaces = [...this.#namespaces].filter((ns) => !release.has(ns));
    const leaseMs = this.#o.expireSeconds * 1000;
    const sentAt = performance.now();
    // The local deadline starts when the transaction that renews begins: taken before it is sent,
    // since the database cannot grant the lease any earlier; again before a rerun.
    let deadline = LocalDeadline.startingNow(this.#o.clock, leaseMs);
    let attemptAt = sentAt;
    const beforeAttempt = () => {
      deadline = LocalDeadline.startingNow(this.#o.clock, leaseMs);
      attemptAt = performance.now();
    };
    // A hung statement (network cut, lock held elsewhere) blocks the loop: say so once per lease.
    const hung = run.loop.timer(
      () => {
        const error = this.#host.error(
          'tick',
          null,
          `${campaign.words.tick} has not answered within the lease (${leaseMs} ms); still waiting, no other tick runs meanwhile`,
          new Error('set statement/connection timeouts on the DataSource so a hung call fails'),
        );
        this.#health.failed(error);
        this.reporter.report(error);
      },
      leaseMs,
      false,
    );
    const sendingMetadata = this.#sendMetadata;
    let answer: CampaignAnswer;
    try {
      answer = await campaign.elect({ namespaces, release, sendMetadata: sendingMetadata, beforeAttempt });
    } catch (caught) {
      if (run.loop.ended) return;
      const error = campaign.explain(caught);
      // start()'s first tick found no tables: every tick would fail alike, so start() rejects.
      if (this.#state === 'starting' && error instanceof TablesMissingError) {
        this.#startFailure = error;
        return;
      }
      const durationMs = performance.now() - sentAt;
      const failure = this.#host.error('tick', null, `${campaign.words.tick} failed (retrying in about ${Math.round(this.#o.intervalMs)} ms)`, error);
      this.#health.failed(failure);
      if (!this.reporter.isRepeatedMisconfiguration(error)) this.reporter.report(failure);
      // Ends the leaderships whose deadline passed while the statement hung.
      for (const ns of this.#leaderships.names()) this.current(ns);
      this.#host.ticked({ durationMs, asked: namespaces.length, answer: null, held: this.#leaderships.size, acquired: 0, lost: 0, clockSkew: null, error: failure });
      return;
    } finally {
      run.loop.clear(hung);
    }
    // The answer of a tick whose run was stopped meanwhile: the stop ends every leadership and
    // vacates the leases itself.
    if (run.loop.ended) return;
    const answeredAt = performance.now();
    // Before the answer is applied: work that starts with a leadership reads the database's time.
    this.databaseClock.observe(answer.databaseNow, attemptAt, answeredAt);
    this.reporter.succeeded();
    this.#sendMetadata = !sendingMetadata && answer.candidateMissing;
    this.#health.succeeded(deadline);
    const skipped = new Set(answer.releaseSkipped);
    for (const [ns, reason] of release) {
      // Vacated, or no longer held; one still held but locked by another transaction is retried.
      if (this.#giving.get(ns) === reason && !skipped.has(ns)) this.#giving.delete(ns);
    }
    const counts = applyAnswer(
      {
        me: this.#o.candidateId,
        leaderships: this.#leaderships,
        namespaces: this.#namespaces,
        giving: this.#giving,
        get vacating() {
          return run.vacating !== undefined;
        },
        begin: (granted) => this.#begin(granted),
        observe: (ns, leaderId, term) => this.#observe(ns, leaderId, term),
        refused: (ns, term) =>
          void this.reporter.fail(
            'tick',
            ns,
            `${campaign.words.tick} answered that this candidate leads under term ${String(term)}, which no grant hands out (terms start at 1)`,
            new Error('not led: the lease is given up, so that the next grant is a real one'),
          ),
        surplus: (held) => this.#campaign.surplus(answer, this.#namespaces, held),
      },
      answer,
      deadline,
    );
    // After applyAnswer, which arms this tick's deadlines before any listener runs.
    for (const { ns, term } of answer.released) if (release.has(ns)) this.#observe(ns, null, term);
    if (!campaign.foldsVacates) void this.#flushVacates(run);
    this.#maybePrune(run);
    // The round trip of the attempt that answered, ended when the answer came: not after it was
    // applied (callbacks and events run in #apply), which would skew the skew by half that time.
    const clockSkew = measureClockSkew(answer.databaseNow, deadline.startedAt.getTime(), answeredAt - attemptAt);
    this.#host.ticked({ durationMs: answeredAt - sentAt, asked: namespaces.length, answer, held: this.#leaderships.size, ...counts, clockSkew, error: null });
    const warning = this.#skewAlarm.check(clockSkew);
    if (warning) {
      this.reporter.fail('clock', null, warning, new Error('leases are judged by the database clock alone; check NTP on this host and the database server'));
    }
  }

  /**
   * Starts `granted` unless, while earlier callbacks ran, the loop stopped, its namespace was
   * removed or is being given up, or another leadership of it began (a stop() inside
   * onStoppedLeading): then it ends unstarted (a removed namespace's lease is given up). Whether
   * it started.
   */
  #begin(granted: Leadership): boolean {
    const { ns } = granted.lease;
    if (!this.active || !this.#namespaces.has(ns) || this.#giving.has(ns) || this.#leaderships.get(ns)) {
      void granted.end('stopped');
      if (this.active && !this.#namespaces.has(ns) && !this.#giving.has(ns)) this.#giving.set(ns, 'resigned');
      return false;
    }
    this.#leaderships.begin(granted);
    return true;
  }

  /**
   * Vacates the leases being given up, once their `onStoppedLeading` callbacks have settled (the
   * next leader starts after this one's work is finished), in one transaction per reason. Ticks
   * keep renewing them meanwhile, so nobody else starts early; on PostgreSQL the vacancy is
   * announced to the others at once. A failure is reported and retried after the next tick.
   */
  #flushVacates(run: Run): Promise<void> {
    if (run.vacating) return run.vacating;
    if (this.#giving.size === 0 || !this.#campaign.opened) return Promise.resolve();
    const campaign = this.#campaign;
    const batch = new Map(this.#giving);
    const vacating = run.loop.start(async () => {
      await this.#leaderships.stoppedCallbacks.settled(batch.keys());
      for (const reason of new Set(batch.values())) {
        // The stop vacates every lease itself.
        if (run.loop.ended) return;
        const names = [...batch].filter(([, r]) => r === reason).map(([ns]) => ns);
        try {
          await campaign.vacate(names, reason);
          for (const ns of names) {
            if (this.#giving.get(ns) === reason) this.#giving.delete(ns);
            const observed = this.#observed.of(ns);
            if (!run.loop.ended && observed?.leaderId === this.#o.candidateId && observed.term !== null) this.#observe(ns, null, observed.term);
          }
        } catch (error) {
          if (!run.loop.ended) this.reporter.fail('hand-over', null, campaign.words.vacateFailed(names.length), error);
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

  /**
   * Deletes long-expired candidate rows and old history rows, after a successful tick and outside
   * its transaction, at most once per `PRUNE_INTERVAL_MS` per DataSource. Not awaited: the tick goes on.
   */
  #maybePrune(run: Run): void {
    const dataSource = this.#dataSource;
    if (!dataSource || run.pruning) return;
    const pruning = run.loop.start(async () => {
      try {
        await pruneIfDue(dataSource, this.#o, this.#host.hasSchedules());
      } catch (error) {
        if (!run.loop.ended) this.reporter.fail('prune', null, 'pruning expired candidates or old history failed (retried later)', error);
      } finally {
        run.pruning = undefined;
      }
    });
    if (pruning) run.pruning = pruning;
  }

  /** Records the observed leader of `ns`; the host hears of a change. */
  #observe(ns: string, leaderId: string | null, term: number): void {
    const changed = this.#observed.observe(ns, leaderId, term);
    if (changed) this.#host.observed(ns, changed);
  }

  // ---- PostgreSQL LISTEN ----------------------------------------------------------------------

  #listen(dataSource: DataSource, url: string | undefined): LeaseChangeSubscription {
    const only = this.#host.listenNs;
    const notifications = new NotificationsReporter(
      (message, error) => void this.reporter.fail('listen', null, message, error),
      (state) => this.reporter.emit('notifications', state),
    );
    const subscriber: ListenSubscriber = {
      ...(only === null ? { ns: '', matches: (ns: string) => this.#namespaces.has(ns) } : { ns: only }),
      onChange: (change) => this.#onLeaseChange(change),
      onError: (error) => notifications.down(error),
      onResync: () => this.kick(),
      onRestored: (outage) => notifications.up(outage),
      onUnavailable: (error) => notifications.off(error),
    };
    return subscribeToLeaseChanges(dataSource, subscriber, { url });
  }

  #onLeaseChange(change: LeaseChange): void {
    if (!this.active) return;
    const current = this.#leaderships.get(change.ns);
    if (change.leaderId === null) {
      // Our own lease vacated by someone else's resign/unregister: stop acting at once.
      if (current && change.term >= current.lease.term) this.#leaderships.demote(change.ns, 'lost');
      this.#observe(change.ns, null, change.term);
      this.kick();
      return;
    }
    // Our own acquisitions are observed through the tick that made them (in order with 'elected').
    if (change.leaderId === this.#o.candidateId) return;
    // Someone else holds the lease at our term or a later one. The same term for another leader
    // happens when the database lost our grant (a failover to a replica that had not received it)
    // and granted that number again: it is no longer ours either way.
    if (current && change.term >= current.lease.term) this.#leaderships.demote(change.ns, 'lost');
    this.#observe(change.ns, change.leaderId, change.term);
  }
}
