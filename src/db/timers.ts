/**
 * Timers every long-running part shares (the loops, the schedules, the PostgreSQL listener): kept
 * below the loops so that a database folder can use them without importing the loop layer.
 */

/** `setTimeout`'s longest delay (2^31 - 1 ms). */
export const MAX_TIMER_MS = 2_147_483_647;

/**
 * Whether `promise` settles within `ms` (true) or not (false: its outcome is left to it). The
 * timer does not keep the process alive. Used by every bounded `stop()`/`close()`.
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
