/**
 * Serving a dashboard to a test, reading its JSON and its server-sent events as a browser would,
 * and recording every statement a DataSource sends.
 */
import * as http from 'http';
import type { AddressInfo } from 'net';
import type { Logger, QueryRunner } from 'typeorm';
import type { Dashboard } from 'gemstone-utils/dashboard';

export interface Served {
  readonly url: string;
  close(): Promise<void>;
}

/** Node's `http` in front of `handler` on a loopback port: `port`, or a free one. */
export async function serve(handler: (request: http.IncomingMessage, response: http.ServerResponse) => void, port = 0): Promise<Served> {
  const server = http.createServer(handler);
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, '127.0.0.1', resolve);
  });
  const { port: bound } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${bound}`,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}

/** A dashboard at the root of its own server; closing closes the dashboard first. */
export async function serveDashboard(dashboard: Dashboard): Promise<Served> {
  const served = await serve((request, response) => dashboard(request, response));
  return {
    url: served.url,
    close: async () => {
      await dashboard.close();
      await served.close();
    },
  };
}

export async function getJson<T = Record<string, unknown>>(url: string): Promise<{ status: number; body: T; headers: Headers }> {
  const response = await fetch(url);
  return { status: response.status, body: (await response.json()) as T, headers: response.headers };
}

export interface ServerEvent {
  readonly event: string;
  readonly data: unknown;
  /** performance.now() when it arrived. */
  readonly at: number;
}

/** An open event stream: every event so far, in order; `close()` drops the connection as a closed tab does. */
export interface EventReader {
  readonly status: number;
  readonly events: ServerEvent[];
  /** Resolves once the server ended the stream (or it was closed). */
  readonly ended: Promise<void>;
  next(predicate: (event: ServerEvent) => boolean, timeoutMs?: number): Promise<ServerEvent>;
  close(): void;
}

export async function openEvents(url: string, headers: Record<string, string> = {}): Promise<EventReader> {
  const controller = new AbortController();
  const response = await fetch(url, { signal: controller.signal, headers: { accept: 'text/event-stream', ...headers } });
  const events: ServerEvent[] = [];
  const waiters = new Set<() => void>();
  const ended = (async () => {
    if (!response.body) return;
    const decoder = new TextDecoder();
    let buffer = '';
    try {
      for await (const chunk of response.body as unknown as AsyncIterable<Uint8Array>) {
        buffer += decoder.decode(chunk, { stream: true });
        let end: number;
        while ((end = buffer.indexOf('\n\n')) >= 0) {
          const block = buffer.slice(0, end);
          buffer = buffer.slice(end + 2);
          let event = 'message';
          const data: string[] = [];
          for (const line of block.split('\n')) {
            if (line.startsWith('event: ')) event = line.slice(7);
            else if (line.startsWith('data: ')) data.push(line.slice(6));
          }
          if (data.length === 0) continue;
          events.push({ event, data: JSON.parse(data.join('\n')), at: performance.now() });
          for (const wake of [...waiters]) wake();
        }
      }
    } catch {
      // aborted by close()
    } finally {
      for (const wake of [...waiters]) wake();
    }
  })();
  let done = false;
  void ended.then(() => (done = true));
  return {
    status: response.status,
    events,
    ended,
    async next(predicate, timeoutMs = 10_000) {
      const deadline = performance.now() + timeoutMs;
      for (;;) {
        const found = events.find(predicate);
        if (found) return found;
        if (done) throw new Error(`the stream ended without the event; got ${JSON.stringify(events.map((e) => e.event))}`);
        const left = deadline - performance.now();
        if (left <= 0) throw new Error(`timed out after ${timeoutMs} ms waiting for an event; got ${JSON.stringify(events.slice(-5))}`);
        await new Promise<void>((resolve) => {
          const wake = () => {
            waiters.delete(wake);
            clearTimeout(timer);
            resolve();
          };
          const timer = setTimeout(wake, left);
          waiters.add(wake);
        });
      }
    },
    close: () => controller.abort(),
  };
}

export interface Statement {
  readonly query: string;
  readonly at: number;
  readonly parameters?: readonly unknown[];
}

/** A TypeORM logger that keeps every statement the DataSource sends (while `recording`). */
export class StatementRecorder implements Logger {
  readonly statements: Statement[] = [];
  recording = false;
  logQuery(query: string, parameters?: unknown[], _runner?: QueryRunner): void {
    if (this.recording) this.statements.push({ query, at: performance.now(), parameters });
  }
  logQueryError(): void {}
  logQuerySlow(): void {}
  logSchemaBuild(): void {}
  logMigration(): void {}
  log(): void {}
}

/**
 * What a read sends besides its SELECTs: on PostgreSQL the read-only transaction it runs in (its
 * first SELECT makes it read-only and sets its statement_timeout), and the cancel of a read of its
 * own (MySQL/MariaDB `KILL QUERY`; PostgreSQL's is a SELECT).
 */
const READ_CONTROL = /^(START TRANSACTION|SET TRANSACTION ISOLATION LEVEL READ COMMITTED|COMMIT|ROLLBACK|KILL QUERY \?)$/i;
/** MariaDB: one statement bounded by `max_statement_time` (for that statement only). */
const BOUNDED = /^SET STATEMENT max_statement_time = \d+(\.\d+)? FOR\s+/i;

/** Statements that are not plain reads: anything but a SELECT (or the above), or one that locks or stores rows. */
export function writes(statements: readonly Statement[]): string[] {
  return statements
    .map((s) => s.query.trim())
    .filter((query) => {
      if (READ_CONTROL.test(query)) return false;
      const select = query.replace(BOUNDED, '');
      return !/^SELECT\b/i.test(select) || /\bFOR\s+(UPDATE|SHARE)\b|\bINTO\b/i.test(select);
    });
}
