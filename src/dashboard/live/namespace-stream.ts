/// <reference types="node" preserve="true" />
import type { EventStream } from './event-stream';
import type { NamespaceWatches } from './namespace-watches';

/** A leadership state as the page receives it (`LeaderChange` with `at` in epoch ms). */
export interface LeaderEvent {
  ns: string;
  leaderId: string | null;
  term: number | null;
  metadata: Readonly<Record<string, unknown>> | null;
  at: number;
}

/**
 * Streams one namespace's `watch()` — its current state, then every change in term order — as
 * `leader` events until `signal` aborts, from the namespace's shared watch (see
 * {@link NamespaceWatches}). Read errors the watch survives go to its `onError` (it retries); one
 * it cannot survive ends the stream (the browser reconnects).
 */
export async function streamNamespace(stream: EventStream, signal: AbortSignal, watches: NamespaceWatches, ns: string): Promise<void> {
  await watches.follow(
    ns,
    (change) => {
      const event: LeaderEvent = { ns: change.ns, leaderId: change.leaderId, term: change.term, metadata: change.metadata, at: change.at.getTime() };
      stream.send('leader', event);
    },
    signal,
  );
}
