import type { DataSource } from 'typeorm';
import { MAX_TIMER_MS } from './elector-options';

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
export const lastPrune = new WeakMap<DataSource, number>();
