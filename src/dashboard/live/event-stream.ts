/// <reference types="node" preserve="true" />
import type { ServerResponse } from 'http';
import { eventStreamHeaders } from '../http';

/** How often an idle stream sends a comment, so proxies and browsers keep it open. */
export const KEEP_ALIVE_MS = 15_000;
/** How long a browser waits before reconnecting a dropped stream (the `retry` field). */
export const RECONNECT_MS = 1_000;

/** One server-sent events response. Every payload is JSON (one line: JSON escapes newlines). */
export class EventStream {
  readonly #response: ServerResponse;
  readonly #keepAlive: NodeJS.Timeout;
  #ended = false;

  /** Starts the response; `onGone` runs once when the client goes away. */
  constructor(response: ServerResponse, onGone: () => void, head = false) {
    this.#response = response;
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

  #write(text: string): void {
    if (this.#ended || this.#response.writableEnded || this.#response.destroyed) return;
    this.#response.write(text);
  }

  end(): void {
    if (this.#ended) return;
    this.#ended = true;
    clearInterval(this.#keepAlive);
    if (!this.#response.writableEnded) this.#response.end();
  }
}
