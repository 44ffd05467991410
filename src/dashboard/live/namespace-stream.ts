/// <reference types="node" preserve="true" />
import type { ElectionService } from '../../election/service';
import type { EventStream } from './event-stream';

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
 * `leader` events until `signal` aborts. Read errors the watch survives go to `onError` (it
 * retries); one it cannot survive ends the stream (the browser reconnects).
 */
export async function streamNamespace(
  stream: EventStream,
  signal: AbortSignal,
  service: ElectionService,
  ns: string,
  pollMs: number,
  onError: (error: unknown) => void,
): Promise<void> {
  const changes = service.watch({ ns, signal, pollMs, onError });
  for await (const change of changes) {
    const event: LeaderEvent = { ns: change.ns, leaderId: change.leaderId, term: change.term, metadata: change.metadata, at: change.at.getTime() };
    stream.send('leader', event);
  }
}
