import { AsyncLocalStorage } from 'async_hooks';
import type { DataSource } from 'typeorm';
import { SessionRequiredError } from '../../errors';

/** DataSources whose transaction `withTransaction` is running `work` in (this async context). */
const scope = new AsyncLocalStorage<DataSource>();

/** Runs `work` marked as inside `withTransaction` on `dataSource`. @internal */
export function inTransactionScope<T>(dataSource: DataSource, work: () => Promise<T>): Promise<T> {
  return scope.run(dataSource, work);
}

/**
 * Throws {@link SessionRequiredError} for a library call without `session` inside
 * `withTransaction` on the same DataSource: its transaction could only start after the
 * surrounding one ends, which waits for this call.
 */
export function refuseInsideTransactionScope(dataSource: DataSource): void {
  if (scope.getStore() === dataSource) throw new SessionRequiredError();
}
