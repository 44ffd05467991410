/// <reference types="node" preserve="true" />
import type { DataSource } from 'typeorm';
import { contextOf } from '../../db/context';
import { subscribeToLeaseChanges } from '../../election/observe/lease-changes';
import type { Overview } from '../queries/overview';
import type { EventStream } from './event-stream';

/** The shortest pause between two reads of one overview stream, however many notifications arrive. */
export const MIN_OVERVIEW_READ_GAP_MS = 100;

/** What of an overview page decides whether it changed: everything but the clock's progress. */
function fingerprint(overview: Overview): string {
  const { dbNow: _now, rows, ...rest } = overview;
  return JSON.stringify({ ...rest, rows: rows.map(({ leaseLeftMs: _left, ...row }) => row) });
}

/** One message a failing read leaves on the page; cleared by the next `overview` event. */
export interface ProblemEvent {
  error: string;
}

/**
 * Streams an overview page as `overview` events: read every `pollMs`, and at once when a lease
 * changes hands where the database announces it (PostgreSQL LISTEN/NOTIFY); sent when it
 * changed (a renewal moves a lease's end, so counts and leases stay current). A failed read
 * sends a `problem` event and is retried at the next poll. Ends when `signal` aborts, after the
 * LISTEN subscription is released.
 */
export async function streamOverview(
  stream: EventStream,
  signal: AbortSignal,
  dataSource: DataSource,
  read: () => Promise<Overview>,
  pollMs: number,
  onError: (error: unknown) => void,
): Promise<void> {
  let dirty = false;
  let wake: (() => void) | undefined;
  const poke = () => {
    dirty = true;
    wake?.();
  };
  // Subscribed at once and closed in `finally`, also when the stream ends before LISTEN is ready.
  const subscription = contextOf(dataSource).dialect.notifications
    ? subscribeToLeaseChanges(dataSource, { ns: '', matches: () => true, onChange: poke, onResync: poke, onError, onUnavailable: onError })
    : undefined;
  /** Waits `ms`, or less when the stream ends or (`wakeable`) a notification arrives. */
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
    let last = '';
    while (!signal.aborted) {
      dirty = false;
      try {
        const overview = await read();
        if (signal.aborted) break;
        const key = fingerprint(overview);
        if (key !== last) {
          last = key;
          stream.send('overview', overview);
        }
      } catch (error) {
        if (signal.aborted) break;
        last = ''; // the next good read is sent, which clears the problem on the page
        const problem: ProblemEvent = { error: error instanceof Error ? error.message.split('\n')[0]! : String(error) };
        stream.send('problem', problem);
        onError(error);
      }
      await pause(MIN_OVERVIEW_READ_GAP_MS, false);
      if (!dirty && !signal.aborted) await pause(Math.max(0, pollMs - MIN_OVERVIEW_READ_GAP_MS), true);
    }
  } finally {
    await subscription?.close();
  }
}
