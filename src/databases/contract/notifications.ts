import type { DataSource } from 'typeorm';
import type { LeaseChange } from '../../election/observe/listen-options';

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
  /** The connection failed (it is being re-established). */
  onError(error: Error): void;
  /** Listening again after a gap: notifications may have been missed. */
  onResync(): void;
  /** LISTEN does not deliver on this connection (the probe never arrived): it is closed for good. */
  onUnavailable(error: Error): void;
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
