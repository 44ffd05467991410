import { randomUUID } from 'crypto';
import type { DataSource } from 'typeorm';
import type { ClientConfig, Client as PgClient, Notification } from 'pg';
import { contextOf } from '../../db/context';
import { outsideRuns } from '../../db/run-guard';
import { execute } from '../../db/session';
import { raw, sql } from '../../db/sql';
import { LoopRun } from '../../db/loop-run';
import { settlesWithin } from '../../db/timers';
import { LEADER_TABLE } from '../../election/schema';
import {
  DEFAULT_LISTEN_CONNECT_TIMEOUT_MS,
  DEFAULT_LISTEN_PROBE_TIMEOUT_MS,
  DEFAULT_LISTEN_RECONNECT_MAX_MS,
  DEFAULT_LISTEN_RECONNECT_MIN_MS,
  LeaseChange,
  LISTEN_APPLICATION_NAME,
  LISTEN_DOWN_REPORT_INTERVAL_MS,
  NOTIFY_CHANNEL,
} from '../../election/observe/listen-options';
import type { LeaseChangeSubscription, ListenSubscriber, ListenTarget } from '../contract/notifications';

// The LISTEN defaults and the subscriber types live in leaves the shared code may import (the
// public API exports the defaults); re-exported for this module's importers.
export {
  DEFAULT_LISTEN_CONNECT_TIMEOUT_MS,
  DEFAULT_LISTEN_PROBE_TIMEOUT_MS,
  DEFAULT_LISTEN_RECONNECT_MAX_MS,
  DEFAULT_LISTEN_RECONNECT_MIN_MS,
  LISTEN_APPLICATION_NAME,
} from '../../election/observe/listen-options';
export type { LeaseChangeSubscription, ListenSubscriber, ListenTarget } from '../contract/notifications';

/**
 * LISTEN for lease changes on PostgreSQL: one dedicated `pg` connection per DataSource and
 * process, shared by every elector on that DataSource (whatever their namespaces). It is a
 * latency optimization only: a missed notification delays a handover until the next tick, never
 * breaks safety.
 *
 * The connection is made with the `pg` driver TypeORM itself uses (`options.driver` if the
 * DataSource was given one), from the DataSource's own connection options, outside TypeORM's pool:
 * a LISTEN session must stay on one connection for its whole life, which a pool cannot promise.
 */

/** How long LISTEN and its set-up statements may take once connected, before the attempt is failed and retried. */
const LISTEN_SETUP_TIMEOUT_MS = 10_000;
/** How long closing the LISTEN connection waits for the server's goodbye. */
const CLOSE_WAIT_MS = 1_000;
/**
 * Probes in a row that may reach another server than the LISTEN connection before LISTEN is given
 * up all the same (with the backoff and the probe waits, about a minute: longer than a failover).
 */
const MAX_PROBES_ELSEWHERE = 10;

type PgModule = { Client: new (config: ClientConfig) => PgClient };

interface PostgresOptions {
  url?: string;
  host?: string;
  port?: number;
  username?: string;
  password?: string | (() => string | Promise<string>);
  database?: string;
  ssl?: ClientConfig['ssl'];
  connectTimeoutMS?: number;
  applicationName?: string;
  extra?: Record<string, unknown>;
  driver?: unknown;
  replication?: { master?: PostgresOptions };
}

/** The `pg` client configuration TypeORM would use for the DataSource's primary (as in its PostgresDriver). */
function listenerConfig(dataSource: DataSource, target: ListenTarget): ClientConfig {
  const options = dataSource.options as unknown as PostgresOptions;
  const credentials = options.replication?.master ?? options;
  const { max: _max, idleTimeoutMillis: _idle, ...extra } = (options.extra ?? {}) as Record<string, unknown>;
  const config: Record<string, unknown> = {
    connectionString: target.url ?? credentials.url,
    host: credentials.host,
    user: credentials.username,
    password: credentials.password,
    database: credentials.database,
    port: credentials.port,
    ssl: credentials.ssl,
    connectionTimeoutMillis: options.connectTimeoutMS ?? DEFAULT_LISTEN_CONNECT_TIMEOUT_MS,
    application_name: options.applicationName ?? LISTEN_APPLICATION_NAME,
    keepAlive: true,
    ...extra,
  };
  for (const key of Object.keys(config)) if (config[key] === undefined) delete config[key];
  // pg lets a connection string's parts override these; a separate address must not inherit them.
  if (target.url !== undefined) for (const key of ['host', 'port', 'database']) delete config[key];
  return config as ClientConfig;
}

function loadPg(dataSource: DataSource): PgModule {
  const given = (dataSource.options as unknown as PostgresOptions).driver as PgModule | undefined;
  if (given && typeof given.Client === 'function') return given;
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  return require('pg') as PgModule;
}

/**
 * Which PostgreSQL server (and which run of it) a connection reached: its address and port as the
 * server sees them, and when its postmaster started. Two connections through one failover address
 * (HAProxy, a virtual IP, DNS) differ here when they reached different members; behind a pooler
 * they agree.
 */
interface ServerIdentity {
  readonly addr: string | null;
  readonly port: number | null;
  readonly started: string | null;
}

/** Selected beside the probe's NOTIFY and on the LISTEN connection: the epoch, not text that depends on the session's TimeZone. */
const IDENTITY_COLUMNS =
  'inet_server_addr()::text AS server_addr, inet_server_port() AS server_port, extract(epoch FROM pg_postmaster_start_time())::text AS server_started';

function identityOf(row: Record<string, unknown> | undefined): ServerIdentity | undefined {
  if (!row) return undefined;
  const text = (value: unknown) => (value === null || value === undefined ? null : String(value));
  const port = text(row.server_port);
  return { addr: text(row.server_addr), port: port === null ? null : Number(port), started: text(row.server_started) };
}

/** Whether two identities name different servers; unknown (undefined or nothing to compare) is not different. */
function differentServers(a: ServerIdentity | undefined, b: ServerIdentity | undefined): boolean {
  if (!a || !b || a.started === null || b.started === null) return false;
  return a.started !== b.started || a.addr !== b.addr || a.port !== b.port;
}

function describeServer(identity: ServerIdentity): string {
  return `${identity.addr ?? 'local socket'}:${identity.port ?? '-'}, started at epoch ${identity.started}`;
}

function asError(error: unknown): Error {
  return error instanceof Error ? error : new Error(String(error));
}

/** The leader table whose news a listener takes: announcements name it (see `announce.ts`). */
interface WatchedTable {
  readonly schema: string;
  readonly table: string;
}

function parseChange(payload: string | undefined, watched: WatchedTable | undefined): LeaseChange | undefined {
  try {
    const value = JSON.parse(payload ?? '') as Partial<LeaseChange> & { schema?: unknown; table?: unknown };
    // Another schema's or prefix's election on the same database (or an unidentified sender).
    if (!watched || value.schema !== watched.schema || value.table !== watched.table) return undefined;
    if (typeof value.ns !== 'string' || typeof value.term !== 'number') return undefined;
    if (value.leaderId !== null && typeof value.leaderId !== 'string') return undefined;
    return { ns: value.ns, leaderId: value.leaderId, term: value.term };
  } catch {
    return undefined;
  }
}

/** The probe's payload: not a lease change, so every listener (of any version) drops it. */
interface ProbePayload {
  readonly probe: string;
}

function probeToken(payload: string | undefined): string | undefined {
  try {
    const value = JSON.parse(payload ?? '') as Partial<ProbePayload>;
    return typeof value.probe === 'string' ? value.probe : undefined;
  } catch {
    return undefined;
  }
}

class PgListener {
  readonly #dataSource: DataSource;
  readonly #target: ListenTarget;
  /** Connection attempts, probes and reconnect timers: ended by {@link close}. */
  readonly #run = new LoopRun();
  /** The probe of the current connection, waiting for its notification. */
  #probe: { token: string; settle: (delivered: boolean) => void } | undefined;
  /** The probe failed: LISTEN does not deliver here; no more connections are made. */
  #unavailable: Error | undefined;
  readonly #subscribers = new Set<ListenSubscriber>();
  #client: PgClient | undefined;
  /** The client of the connection attempt under way (close() ends it too). */
  #connectingClient: PgClient | undefined;
  /** Settles when the current connection attempt is listening (or failed). */
  #connecting: Promise<void> | undefined;
  #retryTimer: NodeJS.Timeout | undefined;
  #failures = 0;
  /** Probes in a row that reached another server than the LISTEN connection: the backoff of the next attempt. */
  #misses = 0;
  #hadConnection = false;
  #watched: WatchedTable | undefined;
  /**
   * The outage under way, from its first failure until a connection delivers again: subscribers
   * hear of it once (and as a reminder per LISTEN_DOWN_REPORT_INTERVAL_MS), not once per attempt.
   */
  #outage: { since: number; failures: number; reportedAt: number; error: Error } | undefined;

  constructor(dataSource: DataSource, target: ListenTarget) {
    this.#dataSource = dataSource;
    this.#target = target;
  }

  /** Adds a subscriber; settles once LISTEN is active, or after the first attempt failed (reported to `onError`). Never rejects. */
  add(subscriber: ListenSubscriber): Promise<void> {
    this.#subscribers.add(subscriber);
    if (this.#unavailable) {
      const unavailable = this.#unavailable;
      outsideRuns(() => subscriber.onUnavailable(unavailable));
      return Promise.resolve();
    }
    // Joining during an outage: this subscriber has not heard of it yet.
    const outage = this.#outage;
    if (outage) outsideRuns(() => subscriber.onError(outage.error));
    if (!this.#client && !this.#connecting && !this.#retryTimer) this.#startConnecting();
    return this.#connecting ?? Promise.resolve();
  }

  /** Removes a subscriber; returns true when it was the last one (then call {@link close}). */
  remove(subscriber: ListenSubscriber): boolean {
    this.#subscribers.delete(subscriber);
    return this.#subscribers.size === 0;
  }

  /**
   * Stops listening: no reconnect is scheduled any more, a connection attempt under way is ended
   * with the connection, the probe sends nothing more. Resolves once all of that has settled, or
   * after {@link CLOSE_WAIT_MS} at most (a goodbye to an unresponsive server is not waited for:
   * stopping an elector must not hang on its optional LISTEN connection).
   */
  async close(): Promise<void> {
    this.#run.end();
    this.#retryTimer = undefined;
    this.#probe?.settle(false);
    const clients = [this.#client, this.#connectingClient].filter((c): c is PgClient => c !== undefined);
    this.#client = undefined;
    const ending = clients.map((client) => client.end().catch(() => undefined));
    await settlesWithin(Promise.all([...ending, this.#run.settled(CLOSE_WAIT_MS)]), CLOSE_WAIT_MS);
  }

  #startConnecting(): void {
    const attempt = this.#run.start(() => this.#connect());
    if (!attempt) return;
    // `finally` runs asynchronously, so this clears the field even when #connect fails at once.
    const connecting: Promise<void> = attempt
      .catch(() => undefined)
      .finally(() => {
        if (this.#connecting === connecting) this.#connecting = undefined;
      });
    this.#connecting = connecting;
  }

  async #connect(): Promise<void> {
    let client: PgClient;
    let config: ClientConfig;
    try {
      config = listenerConfig(this.#dataSource, this.#target);
      client = new (loadPg(this.#dataSource).Client)(config);
    } catch (error) {
      this.#scheduleReconnect(asError(error));
      return;
    }
    let failed = false;
    const fail = (error: unknown) => {
      if (failed) return;
      failed = true;
      if (this.#client === client) this.#client = undefined;
      client.removeAllListeners('notification');
      client.end().catch(() => undefined);
      this.#scheduleReconnect(asError(error));
    };
    client.on('error', fail);
    client.on('end', () => fail(new Error('gemstone-utils: the LISTEN connection was closed by the server')));
    client.on('notification', (message: Notification) => this.#deliver(message));
    this.#connectingClient = client;
    // The whole set-up is bounded, not only the connect: through a proxy, a server that went away
    // mid-failover can leave LISTEN unanswered on an open socket, and nothing would ever fail it.
    const connectMs = Number(config.connectionTimeoutMillis) || 0;
    const setupLimitMs = (connectMs > 0 ? connectMs : DEFAULT_LISTEN_CONNECT_TIMEOUT_MS) + LISTEN_SETUP_TIMEOUT_MS;
    const watchdog = this.#run.timer(() => fail(new Error(`gemstone-utils: LISTEN was not set up within ${setupLimitMs} ms`)), setupLimitMs, false);
    let server: ServerIdentity | undefined;
    try {
      await client.connect();
      await client.query(`LISTEN ${NOTIFY_CHANNEL}`);
      this.#watched ??= await this.#watchedTable(client);
      // IDENTITY_COLUMNS, spelt out: a statement's text is a literal (test/security/sql-rule.ts).
      const identity = await client.query<Record<string, unknown>>(
        'SELECT inet_server_addr()::text AS server_addr, inet_server_port() AS server_port, extract(epoch FROM pg_postmaster_start_time())::text AS server_started',
      );
      server = identityOf(identity.rows[0]);
    } catch (error) {
      fail(error);
      return;
    } finally {
      this.#run.clear(watchdog);
      if (this.#connectingClient === client) this.#connectingClient = undefined;
    }
    if (failed) return;
    if (this.#run.ended) {
      failed = true;
      await client.end().catch(() => undefined);
      return;
    }
    this.#client = client;
    this.#failures = 0;
    if (this.#hadConnection) for (const s of [...this.#subscribers]) outsideRuns(() => s.onResync());
    this.#hadConnection = true;
    // Not awaited: start() need not wait for the answer (milliseconds unless LISTEN is broken).
    void this.#run.start(() => this.#checkDelivery(client, server, fail));
  }

  /**
   * Sends a NOTIFY through the DataSource (another connection) and waits for it here. Behind a
   * transaction-mode pooler the LISTEN ran on a server connection that went back to the pool, so
   * the notification never reaches this client: LISTEN is given up, once, and reported. The
   * NOTIFY must not come from this client itself: through a pooler it could run on the very
   * server connection that ran LISTEN and be delivered back, proving nothing.
   *
   * A NOTIFY that went to another server than this connection's (the same statement reads which
   * one) proves nothing either: behind a failover address the pool may still hold a connection to
   * the old primary while this one reached the new. Then this connection is made again, after a
   * backoff, and probed again, until the two meet.
   */
  async #checkDelivery(client: PgClient, server: ServerIdentity | undefined, fail: (error: unknown) => void): Promise<void> {
    const token = randomUUID();
    let settle!: (delivered: boolean) => void;
    const arrived = new Promise<boolean>((resolve) => (settle = resolve));
    this.#probe = { token, settle };
    let sender: ServerIdentity | undefined;
    try {
      const payload: ProbePayload = { probe: token };
      const context = contextOf(this.#dataSource);
      const rows = await execute(
        context,
        this.#dataSource.manager,
        sql`SELECT pg_notify(CAST(${NOTIFY_CHANNEL} AS text), CAST(${JSON.stringify(payload)} AS text)) AS probe, ${raw(IDENTITY_COLUMNS)}`,
      );
      sender = identityOf(rows[0]);
    } catch {
      // The database is unreachable through the DataSource (or the listener closed): nothing
      // learnt; ticks report it. LISTEN itself is set up, so an outage it was in is over.
      if (this.#probe?.token === token) this.#probe = undefined;
      if (!this.#run.ended && this.#client === client) this.#restored();
      return;
    }
    // Counted from the commit: a NOTIFY whose commit waited (for a synchronous standby) is delivered late, not lost.
    const timer = this.#run.timer(() => settle(false), DEFAULT_LISTEN_PROBE_TIMEOUT_MS, false);
    const delivered = await arrived;
    this.#run.clear(timer);
    if (this.#probe?.token === token) this.#probe = undefined;
    if (delivered) this.#misses = 0;
    // Closed, or replaced by a reconnect (which probes again), meanwhile.
    if (this.#run.ended || this.#client !== client) return;
    if (delivered) {
      this.#restored();
      return;
    }
    const elsewhere = differentServers(server, sender);
    if (elsewhere && this.#misses < MAX_PROBES_ELSEWHERE) {
      // The next attempt waits longer each time in a row (the connection itself succeeds, so the
      // reconnect backoff alone would start over at its minimum).
      this.#failures = Math.max(this.#failures, ++this.#misses);
      fail(
        new Error(
          `gemstone-utils: the probe NOTIFY went to a different server (${describeServer(sender!)}) than the LISTEN connection ` +
            `(${describeServer(server!)}): a failover in progress behind the connection address; reconnecting LISTEN and probing again`,
        ),
      );
      return;
    }
    this.#unavailable = new Error(
      `gemstone-utils: a NOTIFY sent through the DataSource did not arrive on the LISTEN connection within ${DEFAULT_LISTEN_PROBE_TIMEOUT_MS} ms. ` +
        (elsewhere
          ? `${MAX_PROBES_ELSEWHERE + 1} probes in a row reached another server than the LISTEN connection: the connection address spreads ` +
            'connections over several servers, which do not share notifications. '
          : 'This is what a transaction-mode connection pooler (PgBouncer pool_mode=transaction, and the like) between the application and ' +
            'PostgreSQL does. ') +
        'LISTEN is off: a leader stepping down is noticed on the next tick (within intervalMs) instead of at once. ' +
        'For instant hand-over give the elector `listen: { url }` with a direct connection to PostgreSQL (or a session-mode pool); ' +
        '`listen: false` skips LISTEN and this check.',
    );
    this.#client = undefined;
    client.removeAllListeners('notification');
    client.removeAllListeners('end');
    client.on('error', () => undefined);
    client.end().catch(() => undefined);
    // Given up for good: no outage is under way any more, and none will end.
    this.#outage = undefined;
    const unavailable = this.#unavailable;
    for (const s of [...this.#subscribers]) outsideRuns(() => s.onUnavailable(unavailable));
  }

  #scheduleReconnect(error: Error): void {
    if (this.#run.ended) return;
    this.#reportFailure(error);
    const delay = Math.min(DEFAULT_LISTEN_RECONNECT_MAX_MS, DEFAULT_LISTEN_RECONNECT_MIN_MS * 2 ** this.#failures++);
    // A reconnect never has to keep the process alive on its own: the elector's tick timer does.
    this.#retryTimer = this.#run.timer(
      () => {
        this.#retryTimer = undefined;
        this.#startConnecting();
      },
      delay * (0.5 + Math.random() / 2),
      false,
    );
  }

  /**
   * Tells the subscribers of a failed attempt: the first of an outage at once, later ones only as
   * a reminder once per {@link LISTEN_DOWN_REPORT_INTERVAL_MS}. During an outage the reconnects
   * fail every few seconds, and each would otherwise be a new error for what is one fault.
   */
  #reportFailure(error: Error): void {
    const now = performance.now();
    const outage = this.#outage;
    if (!outage) {
      this.#outage = { since: now, failures: 1, reportedAt: now, error };
      for (const s of [...this.#subscribers]) outsideRuns(() => s.onError(error));
      return;
    }
    outage.failures++;
    outage.error = error;
    if (now - outage.reportedAt < LISTEN_DOWN_REPORT_INTERVAL_MS) return;
    outage.reportedAt = now;
    const reminder = new Error(
      `gemstone-utils: LISTEN is still down after ${outage.failures} failed attempts over ${Math.round((now - outage.since) / 1000)} s ` +
        `(retrying at most ${DEFAULT_LISTEN_RECONNECT_MAX_MS} ms apart): ${error.message}`,
      { cause: error },
    );
    for (const s of [...this.#subscribers]) outsideRuns(() => s.onError(reminder));
  }

  /** LISTEN delivers again: ends the outage under way, if any, and tells the subscribers. */
  #restored(): void {
    const outage = this.#outage;
    if (!outage) return;
    this.#outage = undefined;
    const ended = { downMs: performance.now() - outage.since, failures: outage.failures };
    for (const s of [...this.#subscribers]) outsideRuns(() => s.onRestored?.(ended));
  }

  /**
   * The schema and name of this DataSource's leader table. Without a `schema` option the table is
   * unqualified and lives in `current_schema()`, which this connection (made from the same
   * options) resolves as the DataSource's connections do.
   */
  async #watchedTable(client: PgClient): Promise<WatchedTable> {
    const context = contextOf(this.#dataSource);
    let schema = context.schemaName(LEADER_TABLE);
    if (schema === undefined) {
      const result = await client.query<{ schema: string }>('SELECT current_schema() AS schema');
      schema = String(result.rows[0]?.schema);
    }
    return { schema, table: context.tableName(LEADER_TABLE) };
  }

  #deliver(message: Notification): void {
    if (message.channel !== NOTIFY_CHANNEL || this.#run.ended) return;
    const probe = this.#probe;
    if (probe && probeToken(message.payload) === probe.token) {
      probe.settle(true);
      return;
    }
    const change = parseChange(message.payload, this.#watched);
    if (!change) return;
    for (const s of [...this.#subscribers]) {
      if (s.matches ? s.matches(change.ns) : s.ns === change.ns) outsideRuns(() => s.onChange(change));
    }
  }
}

/** One listener per DataSource and target address ('' for the DataSource's own). */
const listeners = new WeakMap<DataSource, Map<string, PgListener>>();

/**
 * Subscribes to lease changes of `subscriber.ns` on the shared LISTEN connection of the
 * DataSource and target, at once: the subscription can be closed before it is ready.
 */
export function subscribeToLeaseChanges(
  dataSource: DataSource,
  subscriber: ListenSubscriber,
  target: ListenTarget = { url: undefined },
): LeaseChangeSubscription {
  let byTarget = listeners.get(dataSource);
  if (!byTarget) listeners.set(dataSource, (byTarget = new Map()));
  const key = target.url ?? '';
  let listener = byTarget.get(key);
  if (!listener) byTarget.set(key, (listener = new PgListener(dataSource, target)));
  const own = listener;
  const map = byTarget;
  let closed!: () => void;
  const closedPromise = new Promise<void>((resolve) => (closed = resolve));
  const ready = Promise.race([own.add(subscriber), closedPromise]);
  let closing: Promise<void> | undefined;
  return {
    ready,
    close: () =>
      (closing ??= (async () => {
        closed();
        if (!own.remove(subscriber)) return;
        // Forget it before closing, so a new subscriber gets a fresh listener instead of a closing one.
        if (map.get(key) === own) map.delete(key);
        await own.close();
      })()),
  };
}
