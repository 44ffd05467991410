/**
 * What lease-change news travel on and how the LISTEN connection is set up: the channel, the
 * payload and the connection's defaults. A leaf (it imports nothing), so the public API, the
 * shared code and the database that announces changes (PostgreSQL's LISTEN/NOTIFY, see
 * `databases/postgres/listener.ts`) all name the same values without importing each other.
 */

/** PostgreSQL channel on which lease changes are announced (delivered at commit). */
export const NOTIFY_CHANNEL = 'gemstone_election';

/**
 * What a NOTIFY on {@link NOTIFY_CHANNEL} carries, as JSON: the lease change plus the `schema`
 * and `table` of the leader table it happened in. The channel is shared by every DataSource on
 * the database; listeners drop news about another schema's or prefix's tables.
 */
export interface LeaseChange {
  /** The namespace whose lease changed. */
  ns: string;
  /** The new leader, or null when the lease was vacated. */
  leaderId: string | null;
  /** The term of the new leader, or of the leadership that was vacated. */
  term: number;
}

/** First delay before reconnecting a dropped LISTEN connection; doubles up to the maximum. */
export const DEFAULT_LISTEN_RECONNECT_MIN_MS = 100;
/** Longest delay between reconnection attempts of the LISTEN connection. */
export const DEFAULT_LISTEN_RECONNECT_MAX_MS = 5_000;
/**
 * While LISTEN stays down, how often the outage is reported again: its first failure is reported
 * at once, the reconnect attempts that follow (every few seconds at most) are not, except as one
 * reminder per this interval.
 */
export const LISTEN_DOWN_REPORT_INTERVAL_MS = 60_000;
/** Connection timeout of the LISTEN connection unless the DataSource sets `connectTimeoutMS`. */
export const DEFAULT_LISTEN_CONNECT_TIMEOUT_MS = 10_000;
/**
 * How long the LISTEN connection waits for the probe: a NOTIFY sent through the DataSource right
 * after LISTEN, counted from the moment that NOTIFY committed. A connection that does not receive
 * it although both reached the same server (a transaction-mode pooler hands the LISTEN session's
 * server connection to others between statements) is given up, once. When they reached different
 * servers (a failover address mid-switch) the connection is made again and probed again.
 */
export const DEFAULT_LISTEN_PROBE_TIMEOUT_MS = 5_000;
/** `application_name` of the LISTEN connection unless the DataSource sets one. */
export const LISTEN_APPLICATION_NAME = 'gemstone-utils listener';
