import type { DataSource } from 'typeorm';
import { contextOf, DbContext } from '../db/context';
import { sql } from '../db/sql';
import { partsOf } from '../databases/parts';
import { compareNs, GroupElectInput, GroupElectOutcome, VacateReason } from './group-tick';

export { compareNs, fairShare } from './group-tick';
export type { GroupElectInput, GroupElectOutcome, GroupNsOutcome } from './group-tick';

/**
 * The statements of a {@link LeaderElectorGroup}: one tick campaigns for all of the group's
 * namespaces in one transaction (PostgreSQL: one statement, after one creating the rows of
 * namespaces not seen yet), and one transaction vacates many.
 * Same protocol as `elect` (see `store.ts` and docs/protocol.md), namespace by namespace: the
 * database clock decides, nobody is preempted, the term goes up on each acquisition, the history
 * gets one row per term, leader rows are locked before candidate rows, in namespace order.
 * Each database's statements live in its folder (`src/databases/<db>/group.ts`, behind the
 * contract `src/databases/contract/group.ts`); this file keeps what every database shares.
 */

export function createGroupStore(context: DbContext) {
  const { dialect: d } = context;
  const group = partsOf(context).group;
  const statements = group.statements(context);

  return {
    /**
     * Whether `elect` vacates {@link GroupElectInput.release} in the tick's own transaction (where
     * it does not, the group vacates its given-up leases by {@link vacate}, in a transaction of their own).
     */
    foldsVacates: group.foldsVacates,

    /**
     * One tick for every namespace of the group, in one transaction (PostgreSQL: one statement,
     * after one creating the rows of namespaces not seen yet).
     * With {@link GroupElectInput.lockWaitMs} (on a database whose tick waits for row locks): when
     * a lock wait runs out (a rival's transaction holds a row of a lease this candidate holds) or
     * the waiting tick meets a deadlock, the tick runs again at once without waiting for any
     * leader row (a second transaction; the first changed nothing), so the other namespaces are
     * still renewed this tick.
     */
    async elect(
      input: GroupElectInput,
      state: { known: Set<string>; /** Called before the rerun's transaction begins. */ beforeAttempt?: () => void },
    ): Promise<GroupElectOutcome> {
      if (input.namespaces.length === 0 && (input.release?.size ?? 0) === 0) {
        return { outcomes: [], members: [], unregistered: 0, databaseNow: await this.clock() };
      }
      if (!group.boundedLockWaits) return statements.elect(input, state.known);
      const once = { conflictRetries: 0 };
      const skipping: GroupElectInput = { ...input, lockWaitMs: undefined };
      if (input.lockWaitMs !== undefined) {
        try {
          return await statements.elect(input, state.known, once);
        } catch (error) {
          if (!group.isLockTimeout(error) && !d.isRetryableConflict(error)) throw error;
        }
      }
      state.beforeAttempt?.();
      return statements.elect(skipping, state.known);
    },

    /** Vacates the caller's leases of `namespaces` (and with `unregister` deletes its candidate rows) in one transaction. */
    async vacate(namespaces: readonly string[], me: string, reason: VacateReason, unregister: boolean): Promise<string[]> {
      if (namespaces.length === 0) return [];
      const sorted = [...namespaces].sort(compareNs);
      return statements.vacate(sorted, me, reason, unregister);
    },

    /** The database clock (a group without namespaces still measures it). */
    async clock(): Promise<Date> {
      const statement = sql`SELECT ${d.instant(d.now.text)} AS db_now`;
      const rows = await statements.read(statement);
      return d.parseInstant(rows[0]?.db_now) as Date;
    },
  };
}

export type GroupStore = ReturnType<typeof createGroupStore>;

const stores = new WeakMap<DataSource, GroupStore>();

/** The group statements of a DataSource (built once). */
export function groupStoreOf(dataSource: DataSource): GroupStore {
  let store = stores.get(dataSource);
  if (!store) stores.set(dataSource, (store = createGroupStore(contextOf(dataSource))));
  return store;
}
