import { mysqlGroup } from '../../dist/src/databases/mysql/group';
import { mysqlDialect } from '../../dist/src/databases/mysql/dialect';
import { GROUP_RERUN_ERRNOS, isGroupRerunError } from '../../bench/lib/group-reruns';

/**
 * The benchmark counts a MySQL/MariaDB group transaction rolled back before the tick's rerun apart
 * (bench/lib/group-reruns.ts). It sees only the built package's public API, so it keeps its own
 * copy of the errors the group store reruns after (`group-store.ts`: `group.isLockTimeout(error)`
 * or `dialect.isRetryableConflict(error)`): this holds the copy equal to the library's rule.
 */
describe('the benchmark\'s copy of the group store\'s rerun errors', () => {
  const libraryReruns = (error: unknown) => mysqlGroup.isLockTimeout(error) || mysqlDialect.isRetryableConflict(error);

  it('agrees with the library on every MySQL/MariaDB error number, bare and wrapped as TypeORM wraps it', () => {
    const disagree: string[] = [];
    for (let errno = 1000; errno < 5000; errno++) {
      for (const [shape, error] of [
        ['driver error', Object.assign(new Error(`errno ${errno}`), { errno })],
        ['QueryFailedError', Object.assign(new Error(`errno ${errno}`), { driverError: { errno } })],
      ] as const) {
        if (libraryReruns(error) !== isGroupRerunError(error)) disagree.push(`${errno} (${shape})`);
      }
    }
    expect(disagree).toEqual([]);
    // Not vacuous: the library reruns after some errors, and the copy names exactly those.
    expect([...GROUP_RERUN_ERRNOS].filter((errno) => !libraryReruns({ errno }))).toEqual([]);
    expect(GROUP_RERUN_ERRNOS.size).toBeGreaterThan(0);
  });

  it('reruns after no error without an error number', () => {
    for (const error of [new Error('Lock wait timeout exceeded'), null, undefined, 'Deadlock found']) {
      expect(isGroupRerunError(error)).toBe(libraryReruns(error));
    }
  });
});
