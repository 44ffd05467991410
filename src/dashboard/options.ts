/// <reference types="node" preserve="true" />
import type { IncomingMessage } from 'http';
import type { DataSource } from 'typeorm';
import type { LeaderElector } from '../election/loop/elector';
import type { LeaderElectorGroup } from '../election/loop/group';
import { hostsSchedules } from '../schedules/hosted';
import { ValidationError, shown } from '../errors';
import { checkOptions } from '../election/validate';
import { DEFAULT_WATCH_POLL_MS, MAX_WATCH_POLL_MS } from '../election/observe/watch';

/**
 * What `authorize` answers: `true` serves the request; `false` answers 403 Forbidden;
 * `'unauthenticated'` answers 401 with the `challenge` (so a browser asks for credentials).
 */
export type DashboardAccess = boolean | 'unauthenticated';

/** Options of `createDashboard`. */
export interface DashboardOptions {
  /** The DataSource to read (after `initDb`). Default: `getDataSource()`, looked up at each request. */
  readonly dataSource?: DataSource;
  /**
   * The path the dashboard is served under when the server hands it full URLs (Node's `http`, a
   * Fastify route), e.g. `"/election"`. Not needed under `app.use(path, dashboard)` (Express,
   * Connect, `@fastify/middie`), which strips the mount path itself. Default `""` (the root).
   */
  readonly basePath?: string;
  /**
   * Decides every request (page, scripts, data and live streams) before anything is read:
   * see {@link DashboardAccess}. A throw or rejection answers 500. Default: every request is served.
   */
  readonly authorize?: (request: IncomingMessage) => DashboardAccess | Promise<DashboardAccess>;
  /** The `WWW-Authenticate` header of a 401. Default {@link DEFAULT_DASHBOARD_CHALLENGE}. */
  readonly challenge?: string;
  /**
   * How often live views re-read the database, in ms: a namespace's watch (on PostgreSQL a safety
   * net behind LISTEN/NOTIFY) and the overview, once per interval however many streams show them;
   * also how long the overview's totals and order are shared by every page, request and stream
   * of one filter and order. Default {@link DEFAULT_WATCH_POLL_MS} (1000).
   */
  readonly pollMs?: number;
  /** Live streams (server-sent events) open at once, all clients together; more answer 503. Default {@link DEFAULT_DASHBOARD_MAX_STREAMS} (64). */
  readonly maxStreams?: number;
  /**
   * Bytes of output one live stream may hold for a client that has not taken them yet (one event
   * is always sent to a client that took everything before); a client further behind — a tab that
   * stopped reading, a stalled connection — is dropped: it gets a last `dropped` event, its
   * connection ends (destroyed a second later if even that is not taken) and `onError` hears of it. So all
   * streams together hold at most `maxStreams` times this, or one page each when a page is larger.
   * Default {@link DEFAULT_DASHBOARD_MAX_STREAM_BUFFER_BYTES} (1 MiB).
   */
  readonly maxStreamBufferBytes?: number;
  /**
   * How long `close()` waits, in ms, for what the dashboard started to end. It cancels every read in
   * progress at the database (PostgreSQL `pg_cancel_backend`, MySQL/MariaDB `KILL QUERY`), so this
   * bound is reached only when a cancel cannot get through (it needs a free connection of the
   * DataSource's pool) or an `authorize` hook hangs: `close()` resolves then anyway and tells
   * `onError` what it left running. Default {@link DEFAULT_DASHBOARD_CLOSE_TIMEOUT_MS} (2000).
   */
  readonly closeTimeoutMs?: number;
  /**
   * How long one read of the database may take, in ms, for a request or a live view: the database
   * stops each statement at this bound (PostgreSQL `statement_timeout`, MariaDB
   * `max_statement_time`) and the dashboard cancels the read at the database when it is reached
   * (a read waiting behind a lock held elsewhere, a slow server). A request then answers 503 with
   * a message naming this option; a live view sends a `problem` event, tells `onError`, and reads
   * again at its next poll. On SQLite it ends a read's wait for the shared connection (itself
   * bounded by `DEFAULT_SQLITE_WAIT_MS`); a statement there is not interrupted, and waits for
   * another process's write lock at most the busy timeout. Default
   * {@link DEFAULT_DASHBOARD_READ_TIMEOUT_MS} (10000).
   */
  readonly readTimeoutMs?: number;
  /**
   * The loops of this process whose schedules the dashboard shows with their next slot: each
   * namespace's page lists the schedules they host there (on the DataSource it reads), runs or
   * not, with the slot each waits for next. The database records runs, not patterns (a schedule's
   * cron or interval lives in the application), so a schedule only the runs table knows shows
   * "next slot unknown (not hosted here)". Default: none (`ElectionModule` passes its elector).
   */
  readonly electors?: readonly (LeaderElector | LeaderElectorGroup)[];
  /** A namespace whose terms ended `flapTerms` times or more within this many seconds is shown as flapping. Default {@link DEFAULT_FLAP_WINDOW_SECONDS} (600). */
  readonly flapWindowSeconds?: number;
  /** See `flapWindowSeconds`. Default {@link DEFAULT_FLAP_TERMS} (3). */
  readonly flapTerms?: number;
  /** Receives errors answered with 500 and errors of live streams. Default: written to stderr. */
  readonly onError?: (error: unknown) => void;
}

/** Default of {@link DashboardOptions.challenge}. */
export const DEFAULT_DASHBOARD_CHALLENGE = 'Basic realm="gemstone-election dashboard", charset="UTF-8"';
/** Default of {@link DashboardOptions.maxStreams}. */
export const DEFAULT_DASHBOARD_MAX_STREAMS = 64;
/** Default of {@link DashboardOptions.maxStreamBufferBytes}: 1 MiB. */
export const DEFAULT_DASHBOARD_MAX_STREAM_BUFFER_BYTES = 1_048_576;
/** Default of {@link DashboardOptions.closeTimeoutMs}. */
export const DEFAULT_DASHBOARD_CLOSE_TIMEOUT_MS = 2_000;
/** Default of {@link DashboardOptions.readTimeoutMs}: ten seconds. */
export const DEFAULT_DASHBOARD_READ_TIMEOUT_MS = 10_000;
/** The longest accepted {@link DashboardOptions.readTimeoutMs}: ten minutes. */
export const MAX_DASHBOARD_READ_TIMEOUT_MS = 600_000;
/** Default of {@link DashboardOptions.flapWindowSeconds}: ten minutes. */
export const DEFAULT_FLAP_WINDOW_SECONDS = 600;
/** Default of {@link DashboardOptions.flapTerms}. */
export const DEFAULT_FLAP_TERMS = 3;

/** Namespaces per overview page unless the page asks otherwise. */
export const DEFAULT_PAGE_SIZE = 50;
/** The most namespaces one overview page (or group timeline) shows. */
export const MAX_PAGE_SIZE = 500;
/** The longest overview filter, in characters. */
export const MAX_FILTER_LENGTH = 255;
/** The timeline's window unless the page asks otherwise: one hour. */
export const DEFAULT_TIMELINE_WINDOW_SECONDS = 3_600;
/** The shortest timeline window: one minute. */
export const MIN_TIMELINE_WINDOW_SECONDS = 60;
/** The longest timeline window: 31 days (the history keeps 30 by default). */
export const MAX_TIMELINE_WINDOW_SECONDS = 31 * 86_400;
/** The most terms one namespace's timeline reads; older ones in the window are left out (and the answer says so). */
export const MAX_TIMELINE_TERMS = 1_000;
/** The most terms a group timeline (one lane per namespace of an overview page) reads. */
export const MAX_GROUP_TIMELINE_TERMS = 5_000;
/** The most candidates a namespace's page lists. */
export const MAX_CANDIDATES_SHOWN = 500;
/**
 * The most overview snapshots (the totals and order of one filter and order, read once per
 * `pollMs` for every page) a dashboard keeps per DataSource; past it the oldest is dropped.
 */
export const MAX_OVERVIEW_SNAPSHOTS = 64;

export interface CheckedDashboardOptions {
  dataSource: DataSource | undefined;
  basePath: string;
  authorize: DashboardOptions['authorize'];
  challenge: string;
  pollMs: number;
  maxStreams: number;
  maxStreamBufferBytes: number;
  closeTimeoutMs: number;
  readTimeoutMs: number;
  flapWindowSeconds: number;
  flapTerms: number;
  electors: readonly object[];
  onError: (error: unknown) => void;
}

const KEYS = ['dataSource', 'basePath', 'authorize', 'challenge', 'pollMs', 'maxStreams', 'maxStreamBufferBytes', 'closeTimeoutMs', 'readTimeoutMs', 'flapWindowSeconds', 'flapTerms', 'electors', 'onError'] as const;

function wholeNumber(value: unknown, parameter: string, min: number, max: number): number {
  if (typeof value !== 'number' || !Number.isSafeInteger(value) || value < min || value > max) {
    throw new ValidationError(parameter, `must be an integer from ${min} to ${max} (got ${shown(value)})`);
  }
  return value;
}

function defaultOnError(error: unknown): void {
  process.stderr.write(`gemstone-utils dashboard: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`);
}

/** `electors`: an array of `LeaderElector`s and `LeaderElectorGroup`s. */
function checkElectors(value: unknown): readonly object[] {
  if (value === undefined) return [];
  if (!Array.isArray(value)) throw new ValidationError('options.electors', `must be an array of LeaderElector or LeaderElectorGroup (got ${shown(value)})`);
  value.forEach((loop: unknown, i) => {
    if (!hostsSchedules(loop)) throw new ValidationError(`options.electors[${i}]`, `must be a LeaderElector or LeaderElectorGroup (got ${shown(loop)})`);
  });
  return [...(value as object[])];
}

/** A path such as `/election`: leading slash, no trailing one, nothing a URL would read otherwise. */
function checkBasePath(value: unknown): string {
  if (value === undefined || value === '' || value === '/') return '';
  if (typeof value !== 'string' || !/^\/[A-Za-z0-9._~!$&'()*+,;=:@%/-]*$/.test(value) || value.includes('//')) {
    throw new ValidationError('options.basePath', `must be a URL path such as "/election" (got ${JSON.stringify(value)})`);
  }
  return value.replace(/\/+$/, '');
}

export function checkDashboardOptions(value: unknown): CheckedDashboardOptions {
  const o = checkOptions(value, KEYS);
  const dataSource = o.dataSource as DataSource | undefined;
  if (dataSource !== undefined && (typeof dataSource !== 'object' || dataSource === null || typeof dataSource.createQueryRunner !== 'function')) {
    throw new ValidationError('options.dataSource', 'must be a TypeORM DataSource (or omitted for the default from initDb)');
  }
  for (const key of ['authorize', 'onError'] as const) {
    if (o[key] !== undefined && typeof o[key] !== 'function') throw new ValidationError(`options.${key}`, 'must be a function');
  }
  if (o.challenge !== undefined && (typeof o.challenge !== 'string' || o.challenge === '' || /[\r\n]/.test(o.challenge))) {
    throw new ValidationError('options.challenge', 'must be a one-line WWW-Authenticate value such as Basic realm="ops"');
  }
  const pollMs = o.pollMs ?? DEFAULT_WATCH_POLL_MS;
  if (typeof pollMs !== 'number' || !Number.isFinite(pollMs) || pollMs <= 0 || pollMs > MAX_WATCH_POLL_MS) {
    throw new ValidationError('options.pollMs', `must be a finite number of milliseconds > 0 and <= ${MAX_WATCH_POLL_MS} (got ${shown(pollMs)})`);
  }
  return {
    dataSource,
    basePath: checkBasePath(o.basePath),
    authorize: o.authorize as DashboardOptions['authorize'],
    challenge: (o.challenge as string | undefined) ?? DEFAULT_DASHBOARD_CHALLENGE,
    pollMs,
    maxStreams: o.maxStreams === undefined ? DEFAULT_DASHBOARD_MAX_STREAMS : wholeNumber(o.maxStreams, 'options.maxStreams', 1, 10_000),
    maxStreamBufferBytes:
      o.maxStreamBufferBytes === undefined
        ? DEFAULT_DASHBOARD_MAX_STREAM_BUFFER_BYTES
        : wholeNumber(o.maxStreamBufferBytes, 'options.maxStreamBufferBytes', 1_024, 1_073_741_824),
    closeTimeoutMs: o.closeTimeoutMs === undefined ? DEFAULT_DASHBOARD_CLOSE_TIMEOUT_MS : wholeNumber(o.closeTimeoutMs, 'options.closeTimeoutMs', 0, 600_000),
    readTimeoutMs:
      o.readTimeoutMs === undefined ? DEFAULT_DASHBOARD_READ_TIMEOUT_MS : wholeNumber(o.readTimeoutMs, 'options.readTimeoutMs', 1, MAX_DASHBOARD_READ_TIMEOUT_MS),
    flapWindowSeconds:
      o.flapWindowSeconds === undefined ? DEFAULT_FLAP_WINDOW_SECONDS : wholeNumber(o.flapWindowSeconds, 'options.flapWindowSeconds', 1, MAX_TIMELINE_WINDOW_SECONDS),
    flapTerms: o.flapTerms === undefined ? DEFAULT_FLAP_TERMS : wholeNumber(o.flapTerms, 'options.flapTerms', 1, 1_000_000),
    electors: checkElectors(o.electors),
    onError: (o.onError as ((error: unknown) => void) | undefined) ?? defaultOnError,
  };
}
/** The most schedules a namespace's page lists (by name); more are left out and the answer says so. */
export const MAX_SCHEDULES_SHOWN = 50;
/** The newest runs a namespace's page shows per schedule. */
export const RUNS_SHOWN_PER_SCHEDULE = 10;
