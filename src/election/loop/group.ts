// Kept in the emitted declarations, whose public types use Node's (EventEmitter, AbortSignal, Symbol.asyncDispose): TypeScript 7
// projects load no @types by default (`types: []`).
/// <reference types="node" preserve="true" />
import { EventEmitter } from 'events';
import { DemotionReason, ElectorErrorPhase, LeaderElectorError } from './errors';
import type { Lease } from './elector-options';
import { checkGroupOptions, CheckedGroupOptions, GroupTick, LeaderElectorGroupOptions } from './group-options';
import { LoopEngine, TickSummary } from './engine/engine';
import type { LoopEmitter } from './engine/reporter';
import { GroupCampaign } from './campaigns/group';
import { checkNs } from '../validate';
import type { NotificationsState } from './notifications-state';
import { Schedules } from '../../schedules/schedule';
import { registerHosted } from '../../schedules/hosted';
import type { Schedule } from '../../schedules/schedule';
import type { ScheduleOptions } from '../../schedules/options';
import type { ScheduledRun } from '../../schedules/scheduled-run';
import type { ScheduleRunEnded } from '../../schedules/run-ended';
import { engineScheduleHost } from '../../schedules/engine-host';

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
  /** A schedule's slot reached a final state (done, failed, abandoned, missed, skipped), recorded in the database. */
  scheduleRun: [run: ScheduleRunEnded];
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
  /** The loop (`engine/engine.ts`), campaigning for the namespaces in one batched tick. */
  readonly #engine: LoopEngine;
  /** The schedules registered on this group (`src/schedules/`), each run by the leaderships of its namespace. */
  readonly #schedules: Schedules;

  /** Validates the options (throws {@link ValidationError} naming the option); touches no database. */
  constructor(options?: LeaderElectorGroupOptions) {
    super();
    const o = (this.#o = checkGroupOptions(options));
    const error = (phase: ElectorErrorPhase, ns: string | null, message: string, cause: unknown) =>
      new LeaderElectorGroupError(phase, o.candidateId, ns, message, cause);
    this.#engine = new LoopEngine(
      o,
      new GroupCampaign(o),
      {
        emitter: this as unknown as LoopEmitter,
        error,
        listenNs: null,
        stopTimedOut: (pending) =>
          error(
            'stop',
            null,
            `stop() resolved after stopTimeoutMs (${o.stopTimeoutMs} ms) without ${pending.join(', ')}`,
            new Error('abandoned: a lease still held at the database runs out by itself'),
          ),
        observed: (ns, { leaderId, term }) => this.#engine.reporter.emit('leader', ns, leaderId, term),
        ticked: (summary) => this.#ticked(summary),
        hasSchedules: () => this.#schedules.size > 0,
      },
      o.namespaces,
    );
    this.#schedules = registerHosted(this, new Schedules(engineScheduleHost(this.#engine, o.dataSource)));
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
    return this.#engine.namespaces;
  }

  /** Whether the loop runs (between `start()` and `stop()`). */
  get running(): boolean {
    return this.#engine.active;
  }

  /**
   * Local and synchronous: true while this group holds the lease of `ns` and its local deadline
   * has not passed (reading it after the deadline ends that leadership on the spot).
   */
  isLeader(ns: string): boolean {
    return this.#engine.current(ns) !== undefined;
  }

  /** The lease of `ns` if this group leads it now; null otherwise. */
  lease(ns: string): Lease | null {
    return this.#engine.current(ns)?.lease ?? null;
  }

  /**
   * The leases held now, by namespace: a snapshot (a new Map on each read), without leases whose
   * local deadline has passed.
   */
  get leases(): ReadonlyMap<string, Lease> {
    const held = new Map<string, Lease>();
    for (const ns of this.#engine.held()) held.set(ns, this.#engine.current(ns)!.lease);
    return held;
  }

  /** The last observed leader of `ns` (ticks, and on PostgreSQL notifications); null if vacant or unknown. */
  leaderOf(ns: string): string | null {
    return this.#engine.observed(ns)?.leaderId ?? null;
  }

  /**
   * Campaigns for `ns` too (a no-op when it already does). While running, resolves after a tick
   * that included it (run at once); database errors are reported as `'error'`, not thrown.
   */
  async add(ns: string): Promise<void> {
    const checked = checkNs(ns === undefined ? null : ns, 'ns');
    await this.#engine.add(checked);
  }

  /**
   * Stops campaigning for `ns` (a no-op when it does not). A held lease is resigned: its
   * leadership ends at once (`'demoted'` with reason `stopped`), and once `onStoppedLeading` has
   * settled the lease is vacated (history: `resigned`). Resolves after that; the candidate row of
   * `ns` is left to expire.
   */
  async remove(ns: string): Promise<void> {
    const checked = checkNs(ns === undefined ? null : ns, 'ns');
    await this.#engine.remove(checked);
  }

  /**
   * Starts the loop: on PostgreSQL LISTEN for lease changes of the namespaces, then the first
   * tick, then one every `intervalMs` ±10%. Resolves after the first tick. Database errors do not
   * reject it (they are reported as `'error'`); it rejects only without a usable DataSource.
   * Harmless while running. `start()` and `stop()` may be called in any order at any time: the
   * latest call wins (after `stop(); start()` the group runs again once the stop has completed).
   */
  start(): Promise<void> {
    return this.#engine.start();
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
    return this.#engine.stop();
  }

  /** Same as {@link stop}. */
  async [Symbol.asyncDispose](): Promise<void> {
    await this.stop();
  }

  /**
   * Runs `job` at each slot of `options` on the leader of `ns`, each slot once, as
   * `LeaderElector.schedule` does (see there and docs/schedules.md): while this group leads `ns`
   * (a namespace added later included), its leadership claims and runs the slots. The name must
   * be unique in `ns` on this group. Throws `ValidationError` naming the parameter.
   */
  schedule(ns: string, options: ScheduleOptions, job: (run: ScheduledRun) => unknown): Schedule {
    const checked = checkNs(ns === undefined ? null : ns, 'ns');
    return this.#schedules.add(checked, options, job);
  }

  #ticked({ durationMs, asked, answer, held, acquired, lost, clockSkew, error }: TickSummary): void {
    const tick: GroupTick = {
      candidateId: this.candidateId,
      durationSeconds: durationMs / 1000,
      namespaces: asked,
      held,
      acquired,
      lost,
      members: answer?.members.length ?? 0,
      clockSkew,
      error,
    };
    this.#engine.reporter.emit('tick', Object.freeze(tick));
  }
}

export type { LeaderElectorGroupOptions, GroupTick } from './group-options';
