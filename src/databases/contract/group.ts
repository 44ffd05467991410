import type { DbContext } from '../../db/context';
import type { SqlFragment } from '../../db/sql';
import type { GroupElectInput, GroupElectOutcome, VacateReason } from '../../election/group-tick';

/**
 * What one database does for a `LeaderElectorGroup` (the group store, `election/group-store.ts`,
 * asks it and keeps the tick's shared logic: the empty tick, the rerun without lock waits, the
 * namespace order, the clock's statement). Same protocol as `elect`, namespace by namespace.
 */
export interface GroupParts {
  /**
   * Whether `elect` vacates {@link GroupElectInput.release} in the tick's own transaction. Where
   * it does not, the group vacates its given-up leases by `vacate`, in a transaction of their own.
   */
  readonly foldsVacates: boolean;
  /**
   * Whether the tick honours {@link GroupElectInput.lockWaitMs}: it waits, bounded, for the row
   * locks of the leases it holds, and when such a wait runs out (or meets a deadlock) the group
   * store runs the tick again at once without waiting for any row. Without row locks the whole
   * tick waits for the database's write lock instead and is never rerun.
   */
  readonly boundedLockWaits: boolean;
  /** A lock wait of the tick that ran out (only asked where {@link boundedLockWaits}). */
  isLockTimeout(error: unknown): boolean;
  /** The group statements of one DataSource (built once per DataSource by the group store). */
  statements(context: DbContext): GroupStatements;
}

/** Retries of a tick's transaction; structurally `TransactionOptions['conflictRetries']` of `db/session`. */
export interface GroupTickRetries {
  readonly conflictRetries?: number;
}

/** One database's group statements on one DataSource, each run in a transaction of its own. */
export interface GroupStatements {
  /**
   * One tick for every namespace of `input` (non-empty, or a non-empty `release`), in one
   * transaction. `known`: the namespaces whose leader row the group has seen (a database that
   * creates the missing rows first skips those, and adds the rows it created); `retries`: the
   * transaction's conflict retries (undefined: the default). A database-wide write lock (SQLite)
   * is waited for as long as the DataSource's library calls wait for it.
   */
  elect(input: GroupElectInput, known: Set<string>, retries?: GroupTickRetries): Promise<GroupElectOutcome>;
  /**
   * Vacates every lease of `namespaces` (non-empty, sorted by `compareNs`) the caller `me` holds
   * (a lapsed one naming it too), closing each term with `reason` (`expired` at its lease's end if
   * it had lapsed); with `unregister` also deletes its candidate rows. One transaction. Returns
   * the namespaces whose unexpired lease was vacated.
   */
  vacate(namespaces: readonly string[], me: string, reason: VacateReason, unregister: boolean): Promise<string[]>;
  /** Runs one read-only statement outside any transaction (the clock of a group without namespaces). */
  read(statement: SqlFragment): Promise<Record<string, unknown>[]>;
}
