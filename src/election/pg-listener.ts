import type { DataSource } from 'typeorm';
import type { ClientConfig, Client as PgClient, Notification } from 'pg';
import { NOTIFY_CHANNEL, LeaseChange } from './store';

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

/** First delay before reconnecting a dropped LISTEN connection; doubles up to the maximum. */
export const DEFAULT_LISTEN_RECONNECT_MIN_MS = 100;
/** Longest delay between reconnection attempts of the LISTEN connection. */
export const DEFAULT_LISTEN_RECONNECT_MAX_MS = 5_000;
/** Connection timeout of the LISTEN connection unless the DataSource sets `connectTimeoutMS`. */
export const DEFAULT_LISTEN_CONNECT_TIMEOUT_MS = 10_000;
/** How long closing the LISTEN connection waits for the server's goodbye. */
const CLOSE_WAIT_MS = 1_000;
/** `application_name` of the LISTEN connection unless the DataSource sets one. */
export const LISTEN_APPLICATION_NAME = 'gemstone-utils listener';

export interface ListenSubscriber {
  readonly ns: string;
  /** A lease of `ns` changed hands or was vacated. */
  onChange(change: LeaseChange): void;
  /** The connection failed (it is being re-established). */
  onError(error: Error): void;
  /** Listening again after a gap: notifications may have been missed. */
  onResync(): void;
}

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
export function listenerConfig(dataSource: DataSource): ClientConfig {
  const options = dataSource.options as unknown as PostgresOptions;
  const credentials = options.replication?.master ?? options;
  const { max: _max, idleTimeoutMillis: _idle, ...extra } = (options.extra ?? {}) as Record<string, unknown>;
  const config: Record<string, unknown> = {
    connectionString: credentials.url,
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
  return config as ClientConfig;
}

function loadPg(dataSource: DataSource): PgModule {
  const given = (dataSource.options as unknown as PostgresOptions).driver as PgModule | undefined;
  if (given && typeof given.Client === 'function') return given;
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  return require('pg') as PgModule;
}

function asError(error: unknown): Error {
  return error instanceof Error ? error : new Error(String(error));
}

function parseChange(payload: string | undefined): LeaseChange | undefined {
  try {
    const value = JSON.parse(payload ?? '') as Partial<LeaseChange>;
    if (typeof value.ns !== 'string' || typeof value.term !== 'number') return undefined;
    if (value.leaderId !== null && typeof value.leaderId !== 'string') return undefined;
    return { ns: value.ns, leaderId: value.leaderId, term: value.term };
  } catch {
    return undefined;
  }
}

class PgListener {
  readonly #dataSource: DataSource;
  readonly #subscribers = new Set<ListenSubscriber>();
  #client: PgClient | undefined;
  /** Settles when the current connection attempt is listening (or failed). */
  #connecting: Promise<void> | undefined;
  #retryTimer: NodeJS.Timeout | undefined;
  #failures = 0;
  #closed = false;
  #hadConnection = false;

  constructor(dataSource: DataSource) {
    this.#dataSource = dataSource;
  }

  /** Adds a subscriber; resolves once LISTEN is active, or after the first attempt failed (reported to `onError`). */
  async add(subscriber: ListenSubscriber): Promise<void> {
    this.#subscribers.add(subscriber);
    if (!this.#client && !this.#connecting && !this.#retryTimer) this.#startConnecting();
    if (this.#connecting) await this.#connecting;
  }

  /** Removes a subscriber; returns true when it was the last one (then call {@link close}). */
  remove(subscriber: ListenSubscriber): boolean {
    this.#subscribers.delete(subscriber);
    return this.#subscribers.size === 0;
  }

  /**
   * Stops listening. A connection attempt still under way closes itself when it completes, and
   * a goodbye to an unresponsive server is not waited for beyond {@link CLOSE_WAIT_MS}: stopping
   * an elector must not hang on its optional LISTEN connection.
   */
  async close(): Promise<void> {
    this.#closed = true;
    clearTimeout(this.#retryTimer);
    this.#retryTimer = undefined;
    const client = this.#client;
    this.#client = undefined;
    if (!client) return;
    let timer: NodeJS.Timeout | undefined;
    const gaveUp = new Promise<void>((resolve) => {
      timer = setTimeout(resolve, CLOSE_WAIT_MS);
      timer.unref();
    });
    await Promise.race([client.end().catch(() => undefined), gaveUp]);
    clearTimeout(timer);
  }

  #startConnecting(): void {
    // `finally` runs asynchronously, so this clears the field even when #connect fails at once.
    const connecting: Promise<void> = this.#connect().finally(() => {
      if (this.#connecting === connecting) this.#connecting = undefined;
    });
    this.#connecting = connecting;
  }

  async #connect(): Promise<void> {
    let client: PgClient;
    try {
      client = new (loadPg(this.#dataSource).Client)(listenerConfig(this.#dataSource));
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
    try {
      await client.connect();
      await client.query(`LISTEN ${NOTIFY_CHANNEL}`);
    } catch (error) {
      fail(error);
      return;
    }
    if (failed) return;
    if (this.#closed) {
      failed = true;
      await client.end().catch(() => undefined);
      return;
    }
    this.#client = client;
    this.#failures = 0;
    if (this.#hadConnection) for (const s of [...this.#subscribers]) s.onResync();
    this.#hadConnection = true;
  }

  #scheduleReconnect(error: Error): void {
    if (this.#closed) return;
    for (const s of [...this.#subscribers]) s.onError(error);
    const delay = Math.min(DEFAULT_LISTEN_RECONNECT_MAX_MS, DEFAULT_LISTEN_RECONNECT_MIN_MS * 2 ** this.#failures++);
    this.#retryTimer = setTimeout(() => {
      this.#retryTimer = undefined;
      if (!this.#closed) this.#startConnecting();
    }, delay * (0.5 + Math.random() / 2));
    // A reconnect never has to keep the process alive on its own: the elector's tick timer does.
    this.#retryTimer.unref();
  }

  #deliver(message: Notification): void {
    if (message.channel !== NOTIFY_CHANNEL) return;
    const change = parseChange(message.payload);
    if (!change) return;
    for (const s of [...this.#subscribers]) if (s.ns === change.ns) s.onChange(change);
  }
}

const listeners = new WeakMap<DataSource, PgListener>();

/**
 * Subscribes to lease changes of `subscriber.ns` on the DataSource's shared LISTEN connection.
 * Resolves once listening (or once the first attempt failed, which `onError` receives; it keeps
 * reconnecting). Returns the function that unsubscribes.
 */
export async function listenForLeaseChanges(dataSource: DataSource, subscriber: ListenSubscriber): Promise<() => Promise<void>> {
  let listener = listeners.get(dataSource);
  if (!listener) listeners.set(dataSource, (listener = new PgListener(dataSource)));
  const own = listener;
  await own.add(subscriber);
  return async () => {
    if (!own.remove(subscriber)) return;
    // Forget it before closing, so a new subscriber gets a fresh listener instead of a closing one.
    if (listeners.get(dataSource) === own) listeners.delete(dataSource);
    await own.close();
  };
}
