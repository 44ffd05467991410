import type { DataSource } from 'typeorm';
import { PRUNE_INTERVAL_MS } from './elector-options';
import { pruneExpiredCandidates, pruneHistory, pruneRuns } from '../prune';

/**
 * When a loop (an elector or a group) last started pruning each DataSource's election tables, and
 * (a loop with schedules) its runs (monotonic ms): one prune of each per interval per DataSource,
 * however many loops share it.
 */
const lastPrune = new WeakMap<DataSource, number>();
const lastRunsPrune = new WeakMap<DataSource, number>();

/** Whether `dataSource` is due by `last` at `now` (then recorded as pruned now). */
function due(last: WeakMap<DataSource, number>, dataSource: DataSource, now: number): boolean {
  const at = last.get(dataSource);
  if (at !== undefined && now - at < PRUNE_INTERVAL_MS) return false;
  last.set(dataSource, now);
  return true;
}

/**
 * Starts deleting long-expired candidate rows and old history rows of `dataSource`, and, when the
 * loop has `schedules`, old finished runs, unless that was done less than {@link PRUNE_INTERVAL_MS}
 * ago (then undefined). A loop without schedules never touches the runs table: an application
 * that has not created it (no `initDb` since the upgrade, nor the migration) keeps electing
 * without an error. Runs outside any tick's transaction; the caller reports a rejection and does
 * not await it in its tick.
 */
export function pruneIfDue(
  dataSource: DataSource,
  retention: { readonly candidateRetentionSeconds: number; readonly historyRetentionSeconds: number; readonly runRetentionSeconds: number },
  schedules: boolean,
): Promise<void> | undefined {
  const now = performance.now();
  const election = due(lastPrune, dataSource, now);
  const runs = schedules && due(lastRunsPrune, dataSource, now);
  if (!election && !runs) return undefined;
  return (async () => {
    if (election) {
      await pruneExpiredCandidates(dataSource, { retentionSeconds: retention.candidateRetentionSeconds });
      await pruneHistory(dataSource, { retentionSeconds: retention.historyRetentionSeconds });
    }
    if (runs) await pruneRuns(dataSource, { retentionSeconds: retention.runRetentionSeconds });
  })();
}
