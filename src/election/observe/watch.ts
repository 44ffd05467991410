// Kept in the emitted declarations, whose public types use Node's (AbortSignal, Symbol.asyncDispose): TypeScript 7
// projects load no @types by default (`types: []`).
/// <reference types="node" preserve="true" />
import type { DataSource } from 'typeorm';
import { EntitiesNotRegisteredError, NotInitializedError, UnsupportedConfigurationError, UnsupportedDatabaseError, ValidationError, shown } from '../../errors';
import { outsideRuns } from '../../db/run-guard';
import { DEFAULT_STOP_TIMEOUT_MS } from '../loop/elector-options';
import { LoopRun } from '../../db/loop-run';
import { deliversLeaseChanges, LeaseChangeSubscription, ListenSubscriber, subscribeToLeaseChanges } from './lease-changes';
import type { HistoryEntry } from './history';
import type { ObservedLeader } from '../rows';
import { checkNs, checkOptions } from '../validate';
import { hasMethods } from '../../db/shape';

/** How often a watcher reads the leader row, in ms: 1000. On PostgreSQL it is the safety net behind LISTEN. */
export const DEFAULT_WATCH_POLL_MS = 1_000;
/** The longest accepted `pollMs`: `setTimeout`'s limit (about 24.8 days). */
export const MAX_WATCH_POLL_MS = 2_147_483_647;
/** After a failed read a watcher waits `pollMs`, doubling per failure up to this (30 s) or `pollMs` if longer. */
export const DEFAULT_WATCH_RETRY_MAX_MS = 30_000;
/** A watcher re-reads this long (ms) after the instant a lease ends by the database clock, to report the expiry. */
const EXPIRY_MARGIN_MS = 10;

/** One state of a namespace's leadership, as {@link LeaderWatch} yields it. */
export interface LeaderChange {
  /** The namespace watched. */
  readonly ns: string;
  /** The holder of the unexpired lease; null when the lease is vacant or has expired. */
  readonly leaderId: string | null;
  /**
   * The leader's term; for a vacancy, the term of the leadership that ended last (so every state
   * is ordered: term k, then the vacancy after term k, then term k + 1). Null when the namespace
   * never had a leader.
   */
  readonly term: number | null;
  /** The leader's candidate metadata; null when vacant or when the leader registered none. */
  readonly metadata: Readonly<Record<string, unknown>> | null;
  /**
   * When this state began, by the database clock: the acquisition of a leader's term, the end of
   * an expired lease, the instant of a vacating resign/unregister/hand-over; for a namespace that
   * never had a leader, the instant it was read.
   */
  readonly at: Date;
}

/** Options of `ElectionService.watch`. */
export interface WatchOptions {
  /** Namespace to watch. Default `"default"`. */
  readonly ns?: string;
  /** Ends the watch: the `for await` loop finishes normally (no error is thrown). Default: none. */
  readonly signal?: AbortSignal;
  /**
   * How often the leader row is read, in ms. Default {@link DEFAULT_WATCH_POLL_MS} (1000). On
   * PostgreSQL changes arrive by LISTEN/NOTIFY and the poll is a safety net.
   */
  readonly pollMs?: number;
  /**
   * Receives errors the watch survives (a failed read, a dropped LISTEN connection): it retries
   * with backoff. Throwing from it ends the watch with that error. Default: errors are retried
   * silently.
   */
  readonly onError?: (error: unknown) => void;
}

/** Options of the module-level `watch`: {@link WatchOptions} plus the DataSource. */
export interface WatchFunctionOptions extends WatchOptions {
  /** The DataSource to watch. Default `getDataSource()`. */
  readonly dataSource?: DataSource;
}

export interface CheckedWatchOptions {
  ns: string;
  signal: AbortSignal | undefined;
  pollMs: number;
  onError: ((error: unknown) => void) | undefined;
}

/** An AbortSignal by its shape (one of another realm or a polyfill passes too). */
export function isAbortSignal(value: unknown): value is AbortSignal {
  return hasMethods(value, ['addEventListener', 'removeEventListener']) && typeof (value as AbortSignal).aborted === 'boolean';
}

/** Validates {@link WatchOptions} (plus `extra` keys the caller handles). */
export function checkWatchOptions(value: unknown, extra: readonly string[] = []): CheckedWatchOptions & Record<string, unknown> {
  const o = checkOptions(value, ['ns', 'signal', 'pollMs', 'onError', ...extra]);
  if (o.signal !== undefined && !isAbortSignal(o.signal)) throw new ValidationError('options.signal', 'must be an AbortSignal');
  const pollMs = o.pollMs ?? DEFAULT_WATCH_POLL_MS;
  if (typeof pollMs !== 'number' || !Number.isFinite(pollMs) || pollMs <= 0 || pollMs > MAX_WATCH_POLL_MS) {
    throw new ValidationError('options.pollMs', `must be a finite number of milliseconds > 0 and <= ${MAX_WATCH_POLL_MS} (got ${shown(pollMs)})`);
  }
  if (o.onError !== undefined && typeof o.onError !== 'function') throw new ValidationError('options.onError', 'must be a function');
  return {
    ...o,
    ns: checkNs(o.ns),
    signal: o.signal as AbortSignal | undefined,
    pollMs,
    onError: o.onError as ((error: unknown) => void) | undefined,
  };
}

/** Errors no retry can fix: the watch ends with them. */
function isPermanent(error: unknown): boolean {
  return (
    error instanceof ValidationError ||
    error instanceof EntitiesNotRegisteredError ||
    error instanceof NotInitializedError ||
    error instanceof UnsupportedConfigurationError ||
    error instanceof UnsupportedDatabaseError
  );
}

/** A history row as a watch fills a gap with it. */
export interface MissedTerm extends HistoryEntry {
  /** The candidate's metadata, if its row still exists. */
  readonly metadata: Readonly<Record<string, unknown>> | null;
}

/** What a watch needs from the service. */
export interface WatchSource {
  readonly dataSource: DataSource;
  /** One read of the leader row with the database clock. */
  observe(): Promise<ObservedLeader>;
  /** The history rows of terms `from`..`to`, oldest first, with the leader's metadata: the states a watch missed between two reads. */
  missed(from: number, to: number): Promise<MissedTerm[]>;
}

/** Orders states: term k's leader is 2k, the vacancy after it 2k + 1; never led is 0. */
function rankOf(change: LeaderChange): number {
  if (change.term === null) return 0;
  return change.term * 2 + (change.leaderId === null ? 1 : 0);
}

/** Whether `change` names a leader other than `holder`, the leader of the state yielded last (same rank). */
function isOtherHolder(change: LeaderChange, holder: string | null): boolean {
  return change.leaderId !== null && change.leaderId !== holder;
}

/** The state an observation shows. */
function toChange(ns: string, seen: ObservedLeader): LeaderChange {
  const { row, now, metadata, acquiredAt, endedAt } = seen;
  if (!row || (row.term === 0 && !row.live)) return Object.freeze({ ns, leaderId: null, term: null, metadata: null, at: now });
  // A lease granted before the history existed has no acquisition instant: the row's last write
  // (a renewal, or on MySQL/MariaDB a fenced transaction) stands in.
  if (row.live) return Object.freeze({ ns, leaderId: row.leaderId, term: row.term, metadata, at: acquiredAt ?? row.updatedAt });
  // The history's end of the term; without it (not closed yet, or no history row): an expired
  // lease at its end, a vacated one at the row's last change.
  const at = endedAt ?? (row.leaderId !== null && row.leaseExpiresAt ? row.leaseExpiresAt : row.updatedAt);
  return Object.freeze({ ns, leaderId: null, term: row.term, metadata: null, at });
}

interface Waiter {
  resolve(result: IteratorResult<LeaderChange, undefined>): void;
  reject(error: unknown): void;
}

/**
 * A watch on one namespace's leadership: an async iterator of {@link LeaderChange}s. Nothing runs
 * until the first `next()` (the first `for await` step): then it yields the current state, then
 * every change it observes, in term order, never the same state twice.
 *
 * It reads the leader row every `pollMs`, and again just after a known lease's end (an expiry
 * sends no notification); on PostgreSQL it also LISTENs (on the DataSource's shared connection)
 * and reads at once when a change is announced. A read that fails is retried with backoff and
 * reported to `onError`; errors no retry can fix (missing entities, no default DataSource) end
 * the watch by rejecting `next()`.
 *
 * It ends when `signal` aborts, on `break` / `return()`, or with an error as above. When it has
 * ended (`return()` resolved, or the pending `next()` resolved `done` after the abort) nothing of
 * it runs or is scheduled any more: no poll, no retry, no LISTEN subscription. A read whose
 * statement was sent and has not answered within {@link DEFAULT_STOP_TIMEOUT_MS} is not waited
 * for; its late answer starts nothing. Changes that arrive while the consumer is busy are queued.
 */
export class LeaderWatch implements AsyncIterableIterator<LeaderChange, undefined> {
  /** The namespace watched. */
  readonly ns: string;
  readonly #source: WatchSource;
  readonly #pollMs: number;
  readonly #signal: AbortSignal | undefined;
  readonly #onError: ((error: unknown) => void) | undefined;
  readonly #queue: LeaderChange[] = [];
  readonly #waiters: Waiter[] = [];
  /** The error the watch ended with, until a `next()` has received it. */
  #failure: { error: unknown } | undefined;
  #started = false;
  #closed = false;
  #closing: Promise<void> | undefined;
  #rank = -1;
  /** The leader of the state last yielded (null for a vacancy or before the first). */
  #holder: string | null = null;
  /** A read was asked for while one ran (a notification): read again at once. */
  #dirty = false;
  #timer: NodeJS.Timeout | undefined;
  #wake: (() => void) | undefined;
  /** The reads, their timers and retries: ended when the watch ends. */
  readonly #run = new LoopRun();
  #subscription: LeaseChangeSubscription | undefined;
  readonly #onAbort = () => void this.#close();

  /** @internal Use `ElectionService.watch` or the module-level `watch`. */
  constructor(source: WatchSource, options: CheckedWatchOptions) {
    this.ns = options.ns;
    this.#source = source;
    this.#pollMs = options.pollMs;
    this.#signal = options.signal;
    this.#onError = options.onError;
  }

  /** The watch itself: `for await (const change of watch)`. */
  [Symbol.asyncIterator](): this {
    return this;
  }

  /** The next state; starts the watch on the first call. Resolves `done` once the watch ended. */
  next(): Promise<IteratorResult<LeaderChange, undefined>> {
    const queued = this.#queue.shift();
    if (queued) return Promise.resolve({ value: queued, done: false });
    if (this.#failure) {
      const { error } = this.#failure;
      this.#failure = undefined;
      return Promise.reject(error);
    }
    if (this.#closed) return Promise.resolve({ value: undefined, done: true });
    const pending = new Promise<IteratorResult<LeaderChange, undefined>>((resolve, reject) => this.#waiters.push({ resolve, reject }));
    if (!this.#started) this.#start();
    return pending;
  }

  /** Ends the watch (what `break` calls): resolves once its timers and LISTEN subscription are released. */
  async return(): Promise<IteratorResult<LeaderChange, undefined>> {
    this.#queue.length = 0;
    this.#failure = undefined;
    await this.#close();
    return { value: undefined, done: true };
  }

  /** Same as {@link return}: `await using watch = service.watch(...)`. */
  async [Symbol.asyncDispose](): Promise<void> {
    await this.return();
  }

  #start(): void {
    this.#started = true;
    if (this.#signal?.aborted) {
      void this.#close();
      return;
    }
    this.#signal?.addEventListener('abort', this.#onAbort, { once: true });
    void this.#run.start(() => this.#read());
  }

  async #read(): Promise<void> {
    const { dataSource } = this.#source;
    if (deliversLeaseChanges(dataSource)) {
      // Subscribed before the first read, so no change falls between the two.
      const subscription = this.#listen(dataSource);
      if (subscription) await Promise.race([subscription.ready, this.#run.whenEnded()]);
    }
    let failures = 0;
    while (!this.#closed) {
      let delay = this.#pollMs;
      try {
        const seen = await this.#source.observe();
        const change = toChange(this.ns, seen);
        const gap = await this.#missedBefore(change);
        failures = 0;
        if (this.#closed) return;
        for (const missed of gap) this.#offer(missed);
        this.#offer(change);
        const { row, now } = seen;
        if (row?.live && row.leaseExpiresAt) {
          // Read again just after the lease's end, by the database clock's distance to it.
          delay = Math.min(delay, Math.max(0, row.leaseExpiresAt.getTime() - now.getTime()) + EXPIRY_MARGIN_MS);
        }
      } catch (error) {
        if (this.#closed) return;
        // A destroyed DataSource fails every read the same way: end the watch instead of spinning.
        // (Not awaited: the end waits for this read loop.)
        if (isPermanent(error) || !dataSource.isInitialized) return void this.#fail(error);
        if (!this.#report(error)) return;
        delay = Math.min(Math.max(this.#pollMs, DEFAULT_WATCH_RETRY_MAX_MS), this.#pollMs * 2 ** failures++);
      }
      await this.#sleep(delay);
    }
  }

  /**
   * The states between the last one yielded and `next` that this watch did not see (a term that
   * began and ended between two reads, a vacancy as short as a hand-over, another holder of the
   * term last yielded: a term granted twice whose second holder left before this read), from the
   * history table, oldest first. Terms the history no longer has (pruned) are skipped.
   */
  async #missedBefore(next: LeaderChange): Promise<LeaderChange[]> {
    const last = this.#rank;
    const rank = rankOf(next);
    // Nothing yielded yet (the current state comes first), or nothing in between: after a
    // vacancy, the next term's holder; after a holder, only that term's history can name another.
    if (last < 0 || rank <= last || (rank === last + 1 && last % 2 === 1)) return [];
    const states: LeaderChange[] = [];
    for (const entry of await this.#source.missed(Math.ceil(last / 2), Math.floor((rank - 1) / 2))) {
      const { term } = entry;
      const otherHolder = 2 * term === last && entry.leaderId !== this.#holder;
      if ((2 * term > last || otherHolder) && 2 * term < rank) {
        states.push(Object.freeze({ ns: this.ns, leaderId: entry.leaderId, term, metadata: entry.metadata, at: entry.acquiredAt }));
      }
      if (entry.endedAt && 2 * term + 1 > last && 2 * term + 1 < rank) {
        states.push(Object.freeze({ ns: this.ns, leaderId: null, term, metadata: null, at: entry.endedAt }));
      }
    }
    return states;
  }

  #listen(dataSource: DataSource): LeaseChangeSubscription | undefined {
    const subscriber: ListenSubscriber = {
      ns: this.ns,
      onChange: () => this.#poke(),
      onResync: () => this.#poke(),
      onError: (error) => void this.#report(error),
      // Behind a transaction-mode pooler: reported once; polling carries on.
      onUnavailable: (error) => void this.#report(error),
    };
    try {
      this.#subscription = subscribeToLeaseChanges(dataSource, subscriber);
      return this.#subscription;
    } catch (error) {
      // Polling still works without LISTEN.
      this.#report(error);
      return undefined;
    }
  }

  /** Reads again now (or right after the read in flight). */
  #poke(): void {
    this.#dirty = true;
    this.#wake?.();
  }

  #sleep(ms: number): Promise<void> {
    if (this.#dirty || this.#closed) {
      this.#dirty = false;
      return Promise.resolve();
    }
    return new Promise((resolve) => {
      this.#wake = () => {
        this.#run.clear(this.#timer);
        this.#timer = undefined;
        this.#wake = undefined;
        this.#dirty = false;
        resolve();
      };
      this.#timer = this.#run.timer(() => this.#wake?.(), ms);
    });
  }

  #offer(change: LeaderChange): void {
    const rank = rankOf(change);
    // Older or the same state (a late notification, an unchanged row): nothing new. Another holder
    // under the term last yielded is new: a term granted twice (a failover that lost the first
    // grant) has a second leader, and the database now names it.
    if (rank < this.#rank || (rank === this.#rank && !isOtherHolder(change, this.#holder))) return;
    this.#rank = rank;
    this.#holder = change.leaderId;
    const waiter = this.#waiters.shift();
    if (waiter) waiter.resolve({ value: change, done: false });
    else this.#queue.push(change);
  }

  /** Passes a survived error to `onError`; false when it threw (the watch then ended with that). */
  #report(error: unknown): boolean {
    const onError = this.#onError;
    if (!onError) return true;
    try {
      outsideRuns(() => onError(error));
      return true;
    } catch (thrown) {
      void this.#fail(thrown);
      return false;
    }
  }

  async #fail(error: unknown): Promise<void> {
    if (this.#closed) return;
    const waiter = this.#waiters.shift();
    if (waiter) waiter.reject(error);
    else this.#failure = { error };
    await this.#close();
  }

  /**
   * Idempotent: ends the run (no further read, timer or retry; a read in flight sends nothing
   * more), waits for the read in flight (bounded), releases LISTEN, then ends pending `next()` calls.
   */
  #close(): Promise<void> {
    this.#closing ??= (async () => {
      this.#closed = true;
      this.#signal?.removeEventListener('abort', this.#onAbort);
      this.#run.end();
      this.#wake?.();
      await this.#run.settled(DEFAULT_STOP_TIMEOUT_MS);
      await this.#subscription?.close().catch((error: unknown) => this.#report(error));
      for (const waiter of this.#waiters.splice(0)) waiter.resolve({ value: undefined, done: true });
    })();
    return this.#closing;
  }
}
