/*
 * The bounded lock wait of an upgrade's DDL, shared by the databases whose ALTER can wait for a
 * table lock (each database's schema part says which error is that wait running out).
 */

/**
 * How long one `ALTER TABLE` of an upgrade waits for the candidate table's lock: 2 seconds.
 * An ALTER waiting for a lock queues every later statement on the table behind it, so on a live
 * database (processes of the old version electing, an application's long transaction that read
 * the table) an unbounded wait would stall all elections; a bounded one gives up, lets the queue
 * drain and tries again ({@link DDL_LOCK_ATTEMPTS} times).
 */
export const DDL_LOCK_TIMEOUT_MS = 2000;
/** Attempts of an upgrade whose ALTER ran into {@link DDL_LOCK_TIMEOUT_MS} before `initDb` gives up: 10. */
export const DDL_LOCK_ATTEMPTS = 10;

/**
 * Runs `attempt` again (after a pause) while it fails on the DDL lock timeout (`isLockTimeout`),
 * at most {@link DDL_LOCK_ATTEMPTS} times.
 */
export async function withDdlLockRetries(isLockTimeout: (error: unknown) => boolean, attempt: () => Promise<void>): Promise<void> {
  for (let i = 1; ; i++) {
    try {
      return await attempt();
    } catch (error) {
      if (!isLockTimeout(error) || i >= DDL_LOCK_ATTEMPTS) throw error;
      await new Promise((resolve) => setTimeout(resolve, Math.min(2000, 100 * 2 ** i) * (0.5 + Math.random())));
    }
  }
}
