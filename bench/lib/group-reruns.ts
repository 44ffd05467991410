/**
 * The MySQL/MariaDB errors after which the group store reruns a tick in a second transaction
 * (`group-store.ts`: the group's `isLockTimeout`, the dialect's `isRetryableConflict`): lock wait
 * timeout (1205), MariaDB max_statement_time (1969), deadlock (1213), record changed since last
 * read (1020). The benchmarks import the built package's public API only, so the set is written
 * here again; test/group/rerun-errors.test.ts holds it equal to the library's predicates.
 */
export const GROUP_RERUN_ERRNOS: ReadonlySet<number> = new Set([1205, 1969, 1213, 1020]);

/** Whether `error` (a TypeORM QueryFailedError or a driver error) is one the group store reruns a tick after. */
export function isGroupRerunError(error: unknown): boolean {
  const driverError = ((error as { driverError?: unknown } | null)?.driverError ?? error) as { errno?: unknown } | null;
  return GROUP_RERUN_ERRNOS.has(Number(driverError?.errno));
}
