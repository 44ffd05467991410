import type { DataSource } from 'typeorm';
import { MAX_TIMER_MS, PRUNE_INTERVAL_MS } from './elector-options';
import { pruneExpiredCandidates, pruneHistory } from '../prune';

/**
 * Whether `promise` settles within `ms` (true) or not (false: its outcome is left to it). The
 * timer does not keep the process alive. Used by the elector's and the group's bounded `stop()`.
 */
export async function settlesWithin(promise: Promise<unknown>, ms: number): Promise<boolean> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<false>((resolve) => {
    timer = setTimeout(() => resolve(false), Math.max(0, Math.min(ms, MAX_TIMER_MS)));
    timer.unref();
  });
  try {
    return await Promise.race([promise.then(() => true, () => true), late]);
  } finally {
    clearTimeout(timer);
  }
}

/**
 * When a loop (an elector or a group) last started pruning each DataSource (monotonic ms): one
 * prune per interval per DataSource, however many loops share it.
 */
const lastPrune = new WeakMap<DataSource, number>();

/**
 * Starts deleting long-expired candidate rows and old history rows of `dataSource` unless a loop
 * did so less than {@link PRUNE_INTERVAL_MS} ago (then undefined). Runs outside any tick's
 * transaction; the caller reports a rejection and does not await it in its tick.
 */
export function pruneIfDue(
  dataSource: DataSource,
  retention: { readonly candidateRetentionSeconds: number; readonly historyRetentionSeconds: number },
): Promise<void> | undefined {
  const now = performance.now();
  const last = lastPrune.get(dataSource);
  if (last !== undefined && now - last < PRUNE_INTERVAL_MS) return undefined;
  lastPrune.set(dataSource, now);
  return pruneExpiredCandidates(dataSource, { retentionSeconds: retention.candidateRetentionSeconds }).then(() =>
    pruneHistory(dataSource, { retentionSeconds: retention.historyRetentionSeconds }).then(() => undefined),
  );
}
