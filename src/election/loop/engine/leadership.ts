import { setMaxListeners } from 'events';
import { outsideRuns } from '../../../db/run-guard';
import { MAX_TIMER_MS } from '../../../db/timers';
import { Lease } from '../elector-options';
import { DemotionReason, LeadershipEndedError } from '../errors';
import type { LocalDeadline } from '../monotonic';

/**
 * The callback rule of the loop engine (so of `LeaderElector`, `LeaderElectorGroup` and whatever
 * else builds on `engine.ts`), written once:
 * - A leadership's local deadline is armed when the tick's answer grants it, before any user
 *   code runs (the old term's `onStoppedLeading` included); arming never ends it on the spot.
 * - It is started — `onStartedLeading` called, then `'elected'` — before anything can end it: an
 *   end asked for while it starts (a read of `isLeader` inside `onStartedLeading` after the
 *   deadline passed) waits until the start is over.
 * - It is ended at most once, and only after it started: the signal aborts, then
 *   `onStoppedLeading`, then `'demoted'`. One that never started (the loop stopped meanwhile)
 *   ends silently: its lease was never handed out. Never a start after an end.
 */

/**
 * Work of the library that lives as long as a leadership (schedules): told when one starts and
 * when it ends. What `ended` returns is waited for as `onStoppedLeading` is — hand-overs and
 * `stop()` vacate the lease only after it settled (a stop within its bound) — so the next leader
 * starts after this leadership's work is finished. A hand-over's wait has no bound of the
 * engine's (the ticks renew the lease meanwhile): a watcher bounds what it returns itself when the
 * loop is not stopping (schedules: `stopTimeoutMs`, then the run is abandoned).
 */
export interface LeadershipWatcher {
  /** A leadership of `lease.ns` started (after `onStartedLeading` was called, before `'elected'`). */
  started(lease: Lease): void;
  /** That leadership ended: its signal has aborted. */
  ended(lease: Lease): Promise<void> | void;
  /** The loop's stop is over (also when it gave up waiting at its bound): send nothing more. */
  loopStopped(): void;
}

/** What a {@link Leadership} calls: the loop's user callbacks and events, and the loop when the deadline passes. */
export interface LeadershipHooks {
  /** The library's own work per leadership (read at each start and end). */
  readonly watchers: ReadonlySet<LeadershipWatcher>;
  readonly onStartedLeading: ((lease: Lease) => unknown) | undefined;
  readonly onStoppedLeading: ((lease: Lease) => unknown) | undefined;
  /** Calls user code outside the loop's run; a throw or rejection is reported, never propagated. */
  call(ns: string, name: string, fn: () => unknown): Promise<void>;
  elected(lease: Lease): void;
  demoted(lease: Lease, reason: DemotionReason): void;
  /** The local deadline passed (found by its timer): the loop ends the leadership as it ends any other. */
  expired(leadership: Leadership): void;
}

type Phase = 'granted' | 'starting' | 'started' | 'ended';

/** One leadership of one namespace, from the grant to its end. */
export class Leadership {
  readonly lease: Lease;
  /** Settles once `onStoppedLeading` and the watchers' work have settled (at once when there is none or the leadership never started). */
  readonly stopped: Promise<void>;
  readonly #hooks: LeadershipHooks;
  readonly #controller = new AbortController();
  #deadline: LocalDeadline;
  #timer: NodeJS.Timeout | undefined;
  #phase: Phase = 'granted';
  /** An end asked for while starting: carried out once the start is over. */
  #endAfterStart: DemotionReason | undefined;
  #settleStopped!: () => void;

  /** A grant: the deadline is armed at once, nothing user-supplied runs. */
  constructor(hooks: LeadershipHooks, ns: string, candidateId: string, term: number, deadline: LocalDeadline) {
    this.#hooks = hooks;
    // Every schedule of the namespace listens to it (and the user's work may): no limit, so that
    // Node does not warn of a leak at the eleventh listener.
    setMaxListeners(0, this.#controller.signal);
    this.lease = Object.freeze({ ns, candidateId, term, signal: this.#controller.signal });
    this.stopped = new Promise<void>((resolve) => {
      this.#settleStopped = resolve;
    });
    this.#deadline = deadline;
    this.#arm();
  }

  /** Whether the local deadline has passed (the leadership is then over, whether ended yet or not). */
  get passed(): boolean {
    return this.#deadline.passed;
  }

  /** A renewal: the deadline moves to `deadline` (taken before the renewing statement was sent). */
  renew(deadline: LocalDeadline): void {
    this.#deadline = deadline;
    this.#arm();
  }

  /** `onStartedLeading`, then `'elected'`; an end asked for meanwhile follows right after. */
  start(): void {
    if (this.#phase !== 'granted') return;
    this.#phase = 'starting';
    const { onStartedLeading } = this.#hooks;
    if (onStartedLeading) void this.#hooks.call(this.lease.ns, 'onStartedLeading', () => onStartedLeading(this.lease));
    for (const watcher of this.#hooks.watchers) watcher.started(this.lease);
    this.#hooks.elected(this.lease);
    this.#phase = 'started';
    if (this.#endAfterStart !== undefined) this.#finish(this.#endAfterStart);
  }

  /** Ends it (once; while it starts, right after the start); returns {@link stopped}. */
  end(reason: DemotionReason): Promise<void> {
    clearTimeout(this.#timer);
    if (this.#phase === 'starting') this.#endAfterStart ??= reason;
    else if (this.#phase === 'started') this.#finish(reason);
    else if (this.#phase === 'granted') {
      // Never handed out: nobody is told of a leadership that never started.
      this.#phase = 'ended';
      this.#settleStopped();
    }
    return this.stopped;
  }

  #finish(reason: DemotionReason): void {
    this.#phase = 'ended';
    const { lease } = this;
    // The signal's listeners are user code: outside the loop's run (see `db/run-guard.ts`).
    outsideRuns(() => this.#controller.abort(new LeadershipEndedError(lease, reason)));
    const { onStoppedLeading } = this.#hooks;
    const settling: Promise<void>[] = [];
    if (onStoppedLeading) settling.push(this.#hooks.call(lease.ns, 'onStoppedLeading', () => onStoppedLeading(lease)));
    for (const watcher of this.#hooks.watchers) {
      const ending = watcher.ended(lease);
      if (ending) settling.push(ending.catch(() => undefined));
    }
    if (settling.length === 0) this.#settleStopped();
    else void Promise.all(settling).then(this.#settleStopped);
    this.#hooks.demoted(lease, reason);
  }

  /** A timer at the deadline, never a synchronous end: the loop ends it when the timer finds it passed. */
  #arm(): void {
    clearTimeout(this.#timer);
    if (this.#phase === 'ended') return;
    // +1: timers may fire a fraction of a millisecond before the clock reaches the deadline.
    const wait = Math.max(0, Math.min(this.#deadline.remainingMs() + 1, MAX_TIMER_MS));
    this.#timer = setTimeout(() => {
      if (this.#phase === 'ended') return;
      if (this.#deadline.passed) this.#hooks.expired(this);
      else this.#arm();
    }, wait);
    // The tick timer keeps a running loop's process alive; this one alone need not.
    this.#timer.unref();
  }
}

/**
 * The `onStoppedLeading` callbacks in flight, per namespace: what a hand-over and a stop wait for
 * before vacating, so that the next leader starts after this one's work is finished.
 */
export class StoppedCallbacks {
  #pending = new Map<string, Set<Promise<void>>>();

  /** Tracks `leadership`'s `onStoppedLeading` until it settles. */
  track(leadership: Leadership): void {
    const { ns } = leadership.lease;
    let set = this.#pending.get(ns);
    if (!set) this.#pending.set(ns, (set = new Set()));
    const tracked = set;
    const settled = leadership.stopped;
    tracked.add(settled);
    void settled.then(() => {
      tracked.delete(settled);
      if (tracked.size === 0 && this.#pending.get(ns) === tracked) this.#pending.delete(ns);
    });
  }

  /** Whether a callback of `ns` is in flight. */
  has(ns: string): boolean {
    return this.#pending.has(ns);
  }

  /** Settles when the callbacks in flight now (of `names`, default all) have settled. */
  settled(names?: Iterable<string>): Promise<void> {
    const sets = names ? [...names].map((ns) => this.#pending.get(ns)) : [...this.#pending.values()];
    return Promise.all(sets.flatMap((set) => (set ? [...set] : []))).then(() => undefined);
  }

  /**
   * Forgets the callbacks in flight: a stop that gave up on them (its bound passed) leaves them to
   * the run that is over, so that later hand-overs and stops of the next run do not wait for them.
   */
  abandon(): void {
    this.#pending = new Map();
  }
}
