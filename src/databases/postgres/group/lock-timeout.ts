import { sql, SqlFragment } from '../../../db/sql';

/*
 * The bound of a group statement's lock waits: `lock_timeout` set for the statement's
 * transaction only (`set_config(…, true)`), in whole milliseconds, one at least. A wait that runs
 * out fails with 55P03, and the group store runs the tick again without waiting.
 */

/** `set_config('lock_timeout', …)` of `waitMs`, as an expression of the statement that sets it. */
export function lockTimeout(waitMs: number): SqlFragment {
  return sql`set_config('lock_timeout', CAST(${`${Math.max(1, Math.round(waitMs))}ms`} AS text), true)`;
}
