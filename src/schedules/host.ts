import type { DataSource, EntityManager } from 'typeorm';
import type { DatabaseClock } from '../election/loop/database-clock';
import type { Lease } from '../election/loop/elector-options';
import type { Leadership, LeadershipWatcher } from '../election/loop/engine/leadership';
import type { RunsStore } from './runs-store';
import type { ScheduleRunEnded } from './run-ended';

/**
 * What a schedule needs of the loop it runs on (a `LeaderElector`'s or a `LeaderElectorGroup`'s
 * engine), and nothing more: the leaderships, the database's time, the DataSource, the bounds,
 * and where its errors go.
 */
export interface ScheduleHost {
  /**
   * The loop's stop bound: `cancel()`, and the end of a leadership by anything but a stop (a
   * hand-over, a demotion), wait for running jobs as long as `stop()` does.
   */
  readonly stopTimeoutMs: number;
  /** Whether the loop is stopping (or stopped): a leadership that ends now ends by the stop, which bounds its own wait. */
  readonly stopping: boolean;
  /** How long after a failed statement it is tried again: the loop's tick period. */
  readonly retryMs: number;
  /** The database's time as the loop's ticks measure it. */
  readonly clock: DatabaseClock;
  /** The leadership of `ns` now, if any. */
  current(ns: string): Leadership | undefined;
  /** Told of every leadership that starts and ends (see `LeadershipWatcher`); returns the unsubscribe. */
  watch(watcher: LeadershipWatcher): () => void;
  /** The DataSource the loop runs on (known once it started). */
  dataSource(): DataSource;
  /** The runs table's statements on `dataSource`. */
  store(dataSource: DataSource): RunsStore;
  /** The fence inside `manager`'s transaction: `lease` must still be live under its term. */
  assertLeader(dataSource: DataSource, lease: Lease, manager: EntityManager): Promise<unknown>;
  /** Reports an error as the loop's `'error'` (phase `schedule`, or `stop` for a cancel past its bound). */
  report(phase: 'schedule' | 'stop', ns: string, message: string, cause: unknown): void;
  /** A slot's final state was recorded: the loop's `'scheduleRun'` event (the one place observers hear of runs). */
  ended(event: ScheduleRunEnded): void;
}
