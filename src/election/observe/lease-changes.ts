import type { DataSource } from 'typeorm';
import { contextOf } from '../../db/context';
import { partsOf } from '../../databases/parts';
import type { LeaseChangeSubscription, ListenSubscriber, ListenTarget } from '../../databases/contract/notifications';
import { UnsupportedDatabaseError } from '../../errors';

/*
 * Lease changes pushed by the database, for the loops, the watch and the dashboard: through the
 * DataSource's `notifications` part (PostgreSQL LISTEN/NOTIFY), where its database has one. The
 * shared code asks here and never names the database.
 */

export type { LeaseChangeSubscription, ListenSubscriber, ListenTarget };

/**
 * Whether the DataSource's database pushes lease changes to a listening connection. False for a
 * DataSource of a database the package does not support: its reads fail on their own.
 */
export function deliversLeaseChanges(dataSource: DataSource): boolean {
  try {
    return partsOf(contextOf(dataSource)).notifications !== undefined;
  } catch (error) {
    if (error instanceof UnsupportedDatabaseError) return false;
    throw error;
  }
}

/**
 * Subscribes to lease changes of `subscriber.ns` on the shared listening connection of the
 * DataSource and target, at once (see {@link deliversLeaseChanges}: throws where the database
 * pushes none).
 */
export function subscribeToLeaseChanges(dataSource: DataSource, subscriber: ListenSubscriber, target?: ListenTarget): LeaseChangeSubscription {
  const notifications = partsOf(contextOf(dataSource)).notifications;
  if (!notifications) throw new Error('gemstone-utils: the database of this DataSource pushes no lease changes');
  return notifications.subscribe(dataSource, subscriber, target);
}
