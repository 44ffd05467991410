/// <reference types="node" preserve="true" />
import type { IncomingMessage, ServerResponse } from 'http';
import type { DataSource } from 'typeorm';
import { contextOf } from '../db/context';
import { getDataSource } from '../db/default-data-source';
import { GemstoneError, ValidationError } from '../errors';
import { assertEntitiesRegistered } from '../election/entities-check';
import { ReadCancelledError, ReadTimeoutError } from '../db/bounded-read';
import { leaderWatchSource } from '../election/service';
import { checkWatchOptions, LeaderWatch } from '../election/observe/watch';
import { Asset, loadAssets } from './assets/files';
import { send, sendError, sendJson } from './http';
import { streamNamespace } from './live/namespace-stream';
import { NamespaceWatches } from './live/namespace-watches';
import { streamOverview } from './live/overview-stream';
import { OverviewPolls } from './live/overview-polls';
import { LiveStreams } from './live/streams';
import { checkDashboardOptions, DashboardOptions } from './options';
import { namespaceParam, overviewQuery, windowSeconds } from './params';
import { namespaceStatements, readNamespace } from './queries/namespace';
import { overviewSnapshots, overviewStatements, readOverview, type OverviewSnapshots } from './queries/overview';
import { ReadBounds, boundedRead } from './queries/read';
import { readSchedules, scheduleStatements } from './queries/schedules';
import { readTimeline, timelineStatements } from './queries/timeline';

/**
 * The dashboard as a request handler for Node's `http` (and anything built on it: Express,
 * Connect, Fastify through `@fastify/middie` or a hijacked route, Nest): `(request, response,
 * next?)`. Requests outside its paths go to `next` when given, else get a 404.
 */
export interface Dashboard {
  (request: IncomingMessage, response: ServerResponse, next?: (error?: unknown) => void): void;
  /**
   * Ends every live stream, cancels every read in progress at the database (one waiting behind a
   * lock included) and waits until all of them have ended: when it resolves nothing the dashboard
   * started (a watch, a poll, a LISTEN subscription, a statement) is still running. The wait is
   * bounded by `closeTimeoutMs` (default 2000), reached only when a cancel cannot get through or
   * an `authorize` hook hangs: it resolves then anyway and tells `onError` what it left. Requests
   * it cut short, and later ones, get 503. Call it before destroying the DataSource.
   */
  close(): Promise<void>;
  /** `close()` was called. */
  readonly closed: boolean;
  /** Live streams open now. */
  readonly streams: number;
}

/** Whether `work` settled within `ms`; resolves at the first of the two. */
async function settledWithin(work: Promise<void>, ms: number): Promise<boolean> {
  let timer: NodeJS.Timeout | undefined;
  const bound = new Promise<boolean>((resolve) => (timer = setTimeout(() => resolve(false), ms)));
  try {
    return await Promise.race([work.then(() => true), bound]);
  } finally {
    clearTimeout(timer);
  }
}

/** What the dashboard reads with, per DataSource. */
interface Readers {
  readonly dataSource: DataSource;
  readonly overview: ReturnType<typeof overviewStatements>;
  /** The overview's totals and orders, each read once per interval for every page, request and stream. */
  readonly snapshots: OverviewSnapshots;
  readonly namespace: ReturnType<typeof namespaceStatements>;
  readonly timeline: ReturnType<typeof timelineStatements>;
  readonly schedules: ReturnType<typeof scheduleStatements>;
  /** One poll per overview page, shared by its streams. */
  readonly polls: OverviewPolls;
  /** One watch per namespace, shared by its streams. */
  readonly watches: NamespaceWatches;
}

const API_ROUTES = new Set(['/api/overview', '/api/overview/timeline', '/api/overview/events', '/api/namespace', '/api/namespace/timeline', '/api/namespace/schedules', '/api/namespace/events']);

/** Where a request goes inside the dashboard, or undefined when it is not the dashboard's. */
function locate(request: IncomingMessage, basePath: string): { path: string; params: URLSearchParams } | undefined {
  const raw = request.url ?? '/';
  const mark = raw.indexOf('?');
  const pathname = mark < 0 ? raw : raw.slice(0, mark);
  const params = new URLSearchParams(mark < 0 ? '' : raw.slice(mark + 1));
  if (basePath === '') return { path: pathname, params };
  if (pathname === basePath || pathname.startsWith(`${basePath}/`)) return { path: pathname.slice(basePath.length), params };
  return undefined;
}

/**
 * The page is addressed with a trailing slash, so that its relative URLs stay under the mount
 * path: `/election` is redirected to `/election/`. The location is relative to the request's own
 * (`./election/`): it can never point to another host.
 */
function redirectToSlash(request: IncomingMessage, response: ServerResponse): boolean {
  const visible = ((request as { originalUrl?: string }).originalUrl ?? request.url ?? '/').split('?');
  const pathname = visible[0] ?? '/';
  if (pathname.endsWith('/')) return false;
  const segment = pathname.slice(pathname.lastIndexOf('/') + 1);
  const query = visible.length > 1 ? `?${visible.slice(1).join('?')}` : '';
  send(response, 308, 'text/plain; charset=utf-8', 'see the trailing slash\n', { location: `./${segment}/${query}` });
  return true;
}

/**
 * A read-only leadership dashboard: an overview of every namespace (leader, term, lease left by
 * the database clock, candidates, health), a page per namespace (candidates, and a timeline of
 * its terms from the history table), kept live by server-sent events. It writes nothing: every
 * statement it sends is a SELECT (in a read-only transaction on PostgreSQL), besides the cancels of
 * its own reads; every value reaches the page as text. Every read is bounded by `readTimeoutMs`
 * and cancelled at the database when its client goes away or the dashboard closes.
 *
 * ```ts
 * const dashboard = createDashboard({ dataSource });
 * app.use('/election', dashboard);          // Express; see docs/dashboard.md for the others
 * // on shutdown, before dataSource.destroy():
 * await dashboard.close();
 * ```
 */
export function createDashboard(options?: DashboardOptions): Dashboard {
  const o = checkDashboardOptions(options);
  const assets: ReadonlyMap<string, Asset> = loadAssets();
  const streams = new LiveStreams(o.maxStreams, o.maxStreamBufferBytes);
  const inFlight = new Set<Promise<void>>();
  /** One per request being served: aborted when its client goes away or the dashboard closes, which cancels its reads. */
  const requests = new Set<AbortController>();
  const readersBySource = new WeakMap<DataSource, Readers>();
  const settings = { flapWindowSeconds: o.flapWindowSeconds, flapTerms: o.flapTerms };
  let closed = false;
  let closing: Promise<void> | undefined;

  /** How every read of the dashboard is bounded: `signal` ends it (see `boundedRead`). */
  const bounds = (signal: AbortSignal): ReadBounds => ({ signal, timeoutMs: o.readTimeoutMs, timeoutName: 'readTimeoutMs', onError: o.onError });

  function readers(): Readers {
    const dataSource = o.dataSource ?? getDataSource();
    assertEntitiesRegistered(dataSource);
    let found = readersBySource.get(dataSource);
    if (!found) {
      const context = contextOf(dataSource);
      found = {
        dataSource,
        overview: overviewStatements(context, settings),
        snapshots: overviewSnapshots(o.pollMs),
        namespace: namespaceStatements(context, settings),
        timeline: timelineStatements(context),
        schedules: scheduleStatements(context),
        polls: new OverviewPolls(dataSource, o.pollMs, o.onError),
        watches: new NamespaceWatches((ns, signal) => watchNamespace(dataSource, ns, signal), o.onError),
      };
      readersBySource.set(dataSource, found);
    }
    return found;
  }

  /**
   * A namespace's watch (as `ElectionService.watch`) whose reads are the dashboard's: cancelled at
   * the database when `signal` aborts (its last stream has gone), bounded by `readTimeoutMs` (a
   * read that hits it is reported to `onError` and retried, as a watch does with a failed read).
   */
  function watchNamespace(dataSource: DataSource, ns: string, signal: AbortSignal): LeaderWatch {
    const source = leaderWatchSource(dataSource, ns, (statement) => boundedRead(dataSource, bounds(signal), (run) => run(statement)));
    return new LeaderWatch(source, checkWatchOptions({ ns, signal, pollMs: o.pollMs, onError: o.onError }));
  }

  async function api(path: string, params: URLSearchParams, response: ServerResponse, head: boolean, signal: AbortSignal): Promise<void> {
    const r = readers();
    switch (path) {
      case '/api/overview':
        return sendJson(response, 200, await readOverview(r.dataSource, r.overview, r.snapshots, overviewQuery(params), settings, bounds(signal)), head);
      case '/api/overview/timeline': {
        const query = overviewQuery(params);
        const window = windowSeconds(params);
        const page = await readOverview(r.dataSource, r.overview, r.snapshots, query, settings, bounds(signal));
        const namespaces = page.rows.map((row) => row.ns);
        return sendJson(response, 200, { namespaces, ...(await readTimeline(r.dataSource, r.timeline, namespaces, window, bounds(signal))) }, head);
      }
      case '/api/namespace':
        return sendJson(response, 200, await readNamespace(r.dataSource, r.namespace, namespaceParam(params), settings, bounds(signal)), head);
      case '/api/namespace/timeline': {
        const ns = namespaceParam(params);
        return sendJson(response, 200, await readTimeline(r.dataSource, r.timeline, [ns], windowSeconds(params), bounds(signal)), head);
      }
      case '/api/namespace/schedules':
        return sendJson(response, 200, await readSchedules(r.dataSource, r.schedules, namespaceParam(params), bounds(signal), o.electors), head);
      case '/api/overview/events':
      case '/api/namespace/events': {
        const overview = path === '/api/overview/events';
        const query = overview ? overviewQuery(params) : undefined;
        const ns = overview ? undefined : namespaceParam(params);
        if (streams.full) {
          return sendError(response, 503, closed ? 'the dashboard is closed' : `too many live streams (at most ${o.maxStreams}): try again later`, {}, { 'retry-after': '5' });
        }
        return streams.open(
          response,
          head,
          (stream, streamSignal) =>
            query
              ? streamOverview(stream, streamSignal, r.polls, JSON.stringify(query), (pollSignal) =>
                  readOverview(r.dataSource, r.overview, r.snapshots, query, settings, bounds(pollSignal)),
                )
              : streamNamespace(stream, streamSignal, r.watches, ns!),
          o.onError,
        );
      }
    }
  }

  async function serve(request: IncomingMessage, response: ServerResponse, next: ((error?: unknown) => void) | undefined, signal: AbortSignal): Promise<void> {
    const target = locate(request, o.basePath);
    const known = target !== undefined && (target.path === '' || assets.has(target.path) || API_ROUTES.has(target.path));
    if (!known) {
      if (next) return next();
      return sendError(response, 404, 'not found');
    }
    const { path, params } = target;
    if (request.method !== 'GET' && request.method !== 'HEAD') return sendError(response, 405, 'read-only: GET or HEAD', {}, { allow: 'GET, HEAD' });
    if (closed) return sendError(response, 503, 'the dashboard is closed');
    if (o.authorize) {
      const access = await o.authorize(request);
      if (access === 'unauthenticated') return sendError(response, 401, 'authentication required', {}, { 'www-authenticate': o.challenge });
      if (access !== true) return sendError(response, 403, 'forbidden');
      if (closed) return sendError(response, 503, 'the dashboard is closed');
    }
    const head = request.method === 'HEAD';
    if (path === '' || path === '/') {
      if (redirectToSlash(request, response)) return;
    }
    const asset = assets.get(path === '' ? '/' : path);
    if (asset) return send(response, 200, asset.type, asset.body, { 'cache-control': 'no-cache' }, head);
    try {
      await api(path, params, response, head, signal);
    } catch (error) {
      if (error instanceof ValidationError) return sendError(response, 400, error.message, { parameter: error.parameter });
      if (error instanceof ReadTimeoutError) return sendError(response, 503, error.message, {}, { 'retry-after': '5' });
      // Cut short by close(), or its client went away (then nobody reads this).
      if (error instanceof ReadCancelledError) return sendError(response, 503, closed ? 'the dashboard is closed' : 'the request was cancelled');
      throw error;
    }
  }

  const dashboard = ((request: IncomingMessage, response: ServerResponse, next?: (error?: unknown) => void) => {
    const controller = new AbortController();
    if (closed) controller.abort();
    requests.add(controller);
    // 'close' of the response: finished, or its connection dropped (then a read under way is cancelled).
    response.once('close', () => controller.abort());
    const work = serve(request, response, next, controller.signal).catch((error: unknown) => {
      // The error stays on the server: its text (an authorize hook's, a driver's) is not the client's to read.
      o.onError(error);
      sendError(response, 500, 'the dashboard could not answer (the error is in the server log)');
    });
    inFlight.add(work);
    void work.finally(() => {
      inFlight.delete(work);
      requests.delete(controller);
    });
  }) as Dashboard;

  Object.defineProperties(dashboard, {
    close: {
      value: () =>
        (closing ??= (async () => {
          closed = true;
          // Cancels the requests' reads at the database, and the overview's snapshots they wait for; the streams' are cancelled as they end.
          for (const controller of requests) controller.abort();
          const ended = (async () => {
            await streams.close();
            while (inFlight.size > 0) await Promise.allSettled([...inFlight]);
          })();
          if (!(await settledWithin(ended, o.closeTimeoutMs))) {
            o.onError(
              new GemstoneError(
                `dashboard.close(): ${inFlight.size} request(s) and ${streams.size} live stream(s) had not ended within closeTimeoutMs ` +
                  `(${o.closeTimeoutMs} ms) although their reads were cancelled at the database (a cancel waits for a free connection ` +
                  'of the pool; an authorize hook may hang): close() resolved without them; each releases its connection when the database answers it',
              ),
            );
          }
        })()),
    },
    closed: { get: () => closed },
    streams: { get: () => streams.size },
  });
  return dashboard;
}
