/// <reference types="node" preserve="true" />
import type { ServerResponse } from 'http';
import { EventStream } from './event-stream';

interface Running {
  readonly controller: AbortController;
  done: Promise<void>;
}

/**
 * The open live streams of one dashboard, at most `max` at once. Each runs until its client goes
 * away or the dashboard closes; {@link LiveStreams.close} resolves once every one has ended and
 * nothing it started (a watch, a poll, a LISTEN subscription) is still running.
 */
export class LiveStreams {
  readonly #running = new Set<Running>();
  readonly #max: number;
  readonly #maxBufferBytes: number;
  #closed = false;

  /** `max` streams at once, each holding at most `maxBufferBytes` of output its client has not taken (see {@link EventStream}). */
  constructor(max: number, maxBufferBytes: number) {
    this.#max = max;
    this.#maxBufferBytes = maxBufferBytes;
  }

  get size(): number {
    return this.#running.size;
  }

  /** Whether another stream may open now. */
  get full(): boolean {
    return this.#closed || this.#running.size >= this.#max;
  }

  /**
   * Opens a stream on `response` and runs `work` until `signal` aborts (client gone, dashboard
   * closed, client dropped for not reading: reported to `onError`) or it returns; then ends the
   * response. The caller checked {@link full} first.
   */
  open(response: ServerResponse, head: boolean, work: (stream: EventStream, signal: AbortSignal) => Promise<void>, onError: (error: unknown) => void): void {
    const controller = new AbortController();
    const running: Running = { controller, done: Promise.resolve() };
    this.#running.add(running);
    const dropped = (queued: number) => {
      controller.abort();
      onError(new Error(`dashboard: dropped a live stream whose client did not read (${queued} bytes waiting, maxStreamBufferBytes ${this.#maxBufferBytes})`));
    };
    const stream = new EventStream(response, () => controller.abort(), head, this.#maxBufferBytes, dropped);
    running.done = (async () => {
      try {
        if (!controller.signal.aborted) await work(stream, controller.signal);
      } catch (error) {
        if (!controller.signal.aborted) onError(error);
      } finally {
        stream.end();
        this.#running.delete(running);
      }
    })();
  }

  /** Ends every stream and waits until all their work has stopped; later streams are refused. */
  async close(): Promise<void> {
    this.#closed = true;
    const all = [...this.#running];
    for (const running of all) running.controller.abort();
    await Promise.all(all.map((running) => running.done));
  }
}
