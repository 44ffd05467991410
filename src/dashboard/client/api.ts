/** The dashboard's own endpoints, by URLs relative to the page (it works under any mount path). */

export type Params = Readonly<Record<string, string | number | undefined>>;

function url(path: string, params: Params): string {
  const search = new URLSearchParams();
  for (const [key, value] of Object.entries(params)) if (value !== undefined && value !== '') search.set(key, String(value));
  const query = search.toString();
  return query ? `${path}?${query}` : path;
}

/** GET a JSON endpoint; a failure throws an Error with the server's message. */
export async function getJson<T>(path: string, params: Params = {}): Promise<T> {
  const response = await fetch(url(path, params), { headers: { accept: 'application/json' }, cache: 'no-store' });
  const body = (await response.json().catch(() => null)) as unknown;
  if (!response.ok) {
    const message = typeof body === 'object' && body !== null && typeof (body as { error?: unknown }).error === 'string' ? (body as { error: string }).error : response.statusText;
    throw new Error(`${response.status}: ${message}`);
  }
  return body as T;
}

export type LiveState = 'connecting' | 'live' | 'reconnecting';

/** Reconnect delays after the server refused or closed a stream for good (EventSource gives up then). */
const RETRY_MS = [1_000, 2_000, 5_000, 10_000];

/**
 * A server-sent events stream that stays open: the browser reconnects a dropped stream by itself;
 * one it gave up on (an error status, a closed dashboard) is reopened here with backoff.
 */
export class LiveStream {
  #source: EventSource | undefined;
  #timer: number | undefined;
  #failures = 0;
  #closed = false;

  constructor(
    private readonly path: string,
    private readonly params: Params,
    private readonly handlers: Readonly<Record<string, (data: unknown) => void>>,
    private readonly onState: (state: LiveState) => void,
  ) {
    this.#open();
  }

  #open(): void {
    if (this.#closed) return;
    this.onState(this.#failures === 0 ? 'connecting' : 'reconnecting');
    const source = new EventSource(url(this.path, this.params));
    this.#source = source;
    source.addEventListener('open', () => {
      this.#failures = 0;
      this.onState('live');
    });
    source.addEventListener('error', () => {
      if (this.#closed) return;
      this.onState('reconnecting');
      if (source.readyState === EventSource.CLOSED) {
        const delay = RETRY_MS[Math.min(this.#failures++, RETRY_MS.length - 1)]!;
        this.#timer = window.setTimeout(() => this.#open(), delay);
      }
    });
    for (const [name, handler] of Object.entries(this.handlers)) {
      source.addEventListener(name, (event) => {
        let data: unknown;
        try {
          data = JSON.parse((event as MessageEvent<string>).data);
        } catch {
          return;
        }
        handler(data);
      });
    }
  }

  close(): void {
    this.#closed = true;
    window.clearTimeout(this.#timer);
    this.#source?.close();
  }
}
