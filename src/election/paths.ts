/**
 * @internal Not exported from the package: a test hook that sends one service's `elect` down the
 * locked general path (lock the leader row, decide, write, heartbeat — see `ElectionService`)
 * instead of its one-statement and read-first fast paths, so that tests can run every path on
 * the same database and compare each with the reference decision (`decision.ts`).
 */
const locked = new WeakSet<object>();

/** @internal Makes `elect` of `service` take the locked path (`on`), or its usual paths again. */
export function forceLockedElect(service: object, on = true): void {
  if (on) locked.add(service);
  else locked.delete(service);
}

/** @internal Whether `elect` of `service` must take the locked path. */
export function electsLocked(service: object): boolean {
  return locked.has(service);
}
