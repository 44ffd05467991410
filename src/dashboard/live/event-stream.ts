/// <reference types="node" preserve="true" />
import type { ServerResponse } from 'http';
import { eventStreamHeaders } from '../http';

/** How often an idle stream sends a comment, so proxies and browsers keep it open. */
export const KEEP_ALIVE_MS = 15_000;
/** How long a browser waits before reconnecting a dropped stream (the `retry` field). */
export const RECONNECT_MS = 1_000;
/**
 * How long a dropped client gets to take its last event before its connection is destroyed: the
 * bytes queued for it are freed then at the latest.
 */
export const DROP_GRACE_MS = 1_000;

/** What a stream's client is told when it is dropped for not reading (its last event, `dropped`). */
export interface DroppedEvent {
  error: string;
}

/**
 * One server-sent events response. Every payload is JSON (one line: JSON escapes newlines).
 * Output waiting for the client is bounded: an event is queued only while what waits for the
 * client, the event included, stays within `maxBufferBytes` (one event always fits an empty
 * queue); a client that falls further behind is dropped (a `dropped` event, then the end), and
 * `onDropped` reports it.
 */
export class EventStream {
  readonly #response: ServerResponse;
  readonly #keepAlive: NodeJS.Timeout;
  readonly #maxBufferBytes: number;
  readonly #onDropped: (queuedBytes: number) => void;
  #ended = false;

  /** Starts the response; `onGone` runs once when the client goes away or is dropped. */
  constructor(response: ServerResponse, onGone: () => void, head: boolean, maxBufferBytes: number, onDropped: (queuedBytes: number) => void) {
    this.#response = response;
    this.#maxBufferBytes = maxBufferBytes;
    this.#onDropped = onDropped;
    response.writeHead(200, eventStreamHeaders());
    if (head) response.end();
    else response.write(`retry: ${RECONNECT_MS}\n\n`);
    this.#keepAlive = setInterval(() => this.#write(': keep-alive\n\n'), KEEP_ALIVE_MS);
    this.#keepAlive.unref();
    let gone = false;
    const leave = () => {
      if (gone) return;
      gone = true;
      onGone();
    };
    // The response's 'close' (finished, or the connection dropped), not the request's: a request
    // whose body a framework already read may report 'close' while its client still listens.
    response.once('close', leave);
    if (head) leave();
  }

  /** Sends one event (a name of the dashboard's own, a JSON payload). */
  send(event: string, data: unknown): void {
    this.#write(`event: ${event}\ndata: ${JSON.stringify(data)}\n\n`);
  }

  /** Bytes written and not yet taken by the client's connection (what this stream holds in memory). */
  get queuedBytes(): number {
    return this.#response.writableLength;
  }

  #write(text: string): void {
    if (this.#ended || this.#response.writableEnded || this.#response.destroyed) return;
    const queued = this.#response.writableLength;
    if (queued > 0 && queued + Buffer.byteLength(text) > this.#maxBufferBytes) return this.#drop(queued);
    this.#response.write(text);
  }

  /** Ends the stream of a client that does not read: a last small event, and the connection destroyed if even that is not taken. */
  #drop(queued: number): void {
    this.#ended = true;
    clearInterval(this.#keepAlive);
    const dropped: DroppedEvent = { error: `this stream was dropped: ${queued} bytes were waiting for the client (the bound is ${this.#maxBufferBytes}); reconnect to resume` };
    this.#response.end(`event: dropped\ndata: ${JSON.stringify(dropped)}\n\n`);
    const response = this.#response;
    const timer = setTimeout(() => response.destroy(), DROP_GRACE_MS);
    timer.unref();
    response.once('close', () => clearTimeout(timer));
    this.#onDropped(queued);
  }

  end(): void {
    if (this.#ended) return;
    this.#ended = true;
    clearInterval(this.#keepAlive);
    if (!this.#response.writableEnded) this.#response.end();
  }
}
