import type { DataSource } from 'typeorm';
import type { DbContext } from '../../db/context';
import type { SqlFragment } from '../../db/sql';
import type { CheckedSlot, Claimant, ClaimResult } from '../../schedules/runs-store';
import type { SharedStore } from './store';

/*
 * The contract of a database whose schedule-run calls without a transaction of the caller's run
 * as ONE program each (SQLite, as its election calls do: see `programs.ts`). The shared runs
 * store (`schedules/store.ts`) hands such a call to the program instead of its own path.
 */

/** The runs store's calls as programs, one each; arguments are validated by the caller. */
export interface RunPrograms {
  /** `RunsStore.claim`, decided by the SQL under the database write lock. */
  claim(key: CheckedSlot, who: Claimant, maxAttempts: number, retake: boolean): Promise<ClaimResult>;
  /** `RunsStore.finish` without a caller's transaction; throws `NotLeaderError` when nothing was finished. */
  finish(key: CheckedSlot, who: Claimant, state: 'done' | 'failed', error: string | null): Promise<void>;
  /** `RunsStore.record`, all or nothing; throws `NotLeaderError` when the fence failed (nothing written). */
  record(keys: readonly CheckedSlot[], who: Claimant, state: 'missed' | 'skipped'): Promise<void>;
  /** Read-only statements outside any transaction, each one's rows. */
  read(statements: readonly SqlFragment[]): Promise<Record<string, unknown>[][]>;
}

/** The `runPrograms` part: present only on a database that runs calls as programs. */
export interface RunProgramsPart {
  /**
   * The programs of one DataSource. `waitMs`: how long a call waits for a transaction someone
   * else holds open on the shared connection (read at each call: the store's `sqliteWaitMs`);
   * `store`: the election's shared statements (the leader row's select and reader).
   */
  create(context: DbContext, dataSource: DataSource, waitMs: () => number | undefined, store: SharedStore): RunPrograms;
}
