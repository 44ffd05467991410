import type { DataSource } from 'typeorm';
import type { LeaseChange, LISTEN_DOWN_REPORT_INTERVAL_MS } from '../../election/observe/listen-options';

/*
 * The contract of a database that pushes lease changes to a listening connection (PostgreSQL
 * LISTEN/NOTIFY): watchers, loops and the dashboard learn of a change at once instead of at their
 * next poll. A latency optimization only: a missed notification delays, never breaks safety.
 */

/** Who is told about lease changes, and about which namespaces. */
export interface ListenSubscriber {
  readonly ns: string;
  /** Whether news about `ns` is for this subscriber; default: `ns` equals {@link ListenSubscriber.ns}. */
  matches?(ns: string): boolean;
  /** A lease of `ns` changed hands or was vacated. */
  onChange(change: LeaseChange): void;
  /**
   * LISTEN is down: the connection failed or could not be made, and is being made again with
   * backoff. Called once per outage (its first failure; a subscriber that joins during one hears of
   * it when it joins), then at most once per {@link LISTEN_DOWN_REPORT_INTERVAL_MS} while the
   * outage lasts — never once per attempt.
   */
  onError(error: Error): void;
  /** Listening again after a gap: notifications may have been missed. */
  onResync(): void;
  /** LISTEN delivers again after an outage that {@link ListenSubscriber.onError} reported. */
  onRestored?(outage: ListenOutage): void;
  /** LISTEN does not deliver on this connection (the probe never arrived): it is closed for good. */
  onUnavailable(error: Error): void;
}

/** An outage of LISTEN that has ended (see {@link ListenSubscriber.onRestored}). */
export interface ListenOutage {
  /** From its first failure to the connection that delivers again (host monotonic clock). */
  readonly downMs: number;
  /** Failures during it: the loss (or failed attempt) that began it and each reconnect attempt that failed. */
  readonly failures: number;
}

/** Where the LISTEN connection goes. */
export interface ListenTarget {
  /** A connection string whose parts override the DataSource's; undefined: the DataSource's own. */
  readonly url: string | undefined;
}

/** A subscription to lease changes (see {@link LeaseChangeNotifications.subscribe}). */
export interface LeaseChangeSubscription {
  /**
   * Settles once LISTEN is active, once the first attempt failed (which `onError` receives; it
   * keeps reconnecting), or once the subscription is closed. Never rejects.
   */
  readonly ready: Promise<void>;
  /**
   * Unsubscribes; the last subscriber of a connection closes it. Resolves once nothing the
   * connection started runs any more (reconnects, probe), within about a second.
   */
  close(): Promise<void>;
}

/** The `notifications` part: present only on a database that pushes lease changes. */
export interface LeaseChangeNotifications {
  /**
   * Subscribes to lease changes of `subscriber.ns` on the shared listening connection of the
   * DataSource and target, at once: the subscription can be closed before it is ready.
   */
  subscribe(dataSource: DataSource, subscriber: ListenSubscriber, target?: ListenTarget): LeaseChangeSubscription;
}
