/// <reference types="node" preserve="true" />
import type { DataSource } from 'typeorm';
import { contextOf } from '../../db/context';
import { subscribeToLeaseChanges } from '../../election/observe/lease-changes';
import type { Overview } from '../queries/overview';
import { SharedRuns } from './shared-runs';

/** The shortest pause between two reads of one overview page, however many notifications arrive. */
export const MIN_OVERVIEW_READ_GAP_MS = 100;

/** What a poll tells its subscribers after each read. */
export type PollResult = { readonly overview: Overview } | { readonly error: unknown };

/**
 * The reads behind the overview streams of one DataSource: one poll per page (filter, order,
 * offset, limit), however many streams show it (its read takes the totals and the order from the
 * interval's snapshot, shared with the other pages of its filter and order), shared as
 * {@link SharedRuns} are. A poll reads every `pollMs`, and at once when a lease changes hands
 * where the database announces it (PostgreSQL LISTEN/NOTIFY, one subscription per poll), and
 * tells every subscriber. A failed read goes to `onError` once, and to the subscribers.
 */
export class OverviewPolls {
  readonly #runs = new SharedRuns<PollResult>();
  readonly #dataSource: DataSource;
  readonly #pollMs: number;
  readonly #onError: (error: unknown) => void;

  constructor(dataSource: DataSource, pollMs: number, onError: (error: unknown) => void) {
    this.#dataSource = dataSource;
    this.#pollMs = pollMs;
    this.#onError = onError;
  }

  /** Polls running now. */
  get size(): number {
    return this.#runs.size;
  }

  /**
   * Subscribes `listener` to the poll of `key` (started with `read` when there is none; the
   * latest result, if any, is passed at once) until `signal` aborts. Resolves after that, once
   * the poll stopped if this was its last subscriber. `read` gets the poll's signal, which aborts
   * when the poll stops: its read in progress is then cancelled at the database.
   */
  follow(key: string, read: (signal: AbortSignal) => Promise<Overview>, listener: (result: PollResult) => void, signal: AbortSignal): Promise<void> {
    return this.#runs.follow(key, (emit, stop) => this.#run(read, emit, stop), listener, signal);
  }

  async #run(read: (signal: AbortSignal) => Promise<Overview>, emit: (result: PollResult) => void, signal: AbortSignal): Promise<void> {
    let dirty = false;
    let wake: (() => void) | undefined;
    const poke = () => {
      dirty = true;
      wake?.();
    };
    const onError = this.#onError;
    // Subscribed at once and closed in `finally`, also when the poll ends before LISTEN is ready.
    const subscription = contextOf(this.#dataSource).dialect.notifications
      ? subscribeToLeaseChanges(this.#dataSource, { ns: '', matches: () => true, onChange: poke, onResync: poke, onError, onUnavailable: onError })
      : undefined;
    /** Waits `ms`, or less when the poll ends or (`wakeable`) a notification arrives. */
    const pause = (ms: number, wakeable: boolean) =>
      new Promise<void>((resolve) => {
        const done = () => {
          clearTimeout(timer);
          signal.removeEventListener('abort', done);
          wake = undefined;
          resolve();
        };
        const timer = setTimeout(done, ms);
        signal.addEventListener('abort', done, { once: true });
        if (wakeable) wake = done;
      });
    try {
      while (!signal.aborted) {
        dirty = false;
        let result: PollResult;
        try {
          result = { overview: await read(signal) };
        } catch (error) {
          result = { error };
          if (!signal.aborted) onError(error);
        }
        if (signal.aborted) break;
        emit(result);
        await pause(MIN_OVERVIEW_READ_GAP_MS, false);
        if (!dirty && !signal.aborted) await pause(Math.max(0, this.#pollMs - MIN_OVERVIEW_READ_GAP_MS), true);
      }
    } finally {
      await subscription?.close();
    }
  }
}
