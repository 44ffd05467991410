import type { DataSource } from 'typeorm';
import type { Schedule, Schedules } from './schedule';

/**
 * The schedules each loop (a `LeaderElector` or `LeaderElectorGroup`) hosts, for readers in the
 * same process — the dashboard shows their next slots, which the database does not know: a
 * schedule's pattern lives in the application. Kept beside the loop, not on its public API.
 */
const hostedBy = new WeakMap<object, Schedules>();

/** Called by a loop's constructor: `schedules` are the ones it hosts; returns them. */
export function registerHosted(loop: object, schedules: Schedules): Schedules {
  hostedBy.set(loop, schedules);
  return schedules;
}

/** Whether `value` is a loop that hosts schedules (a `LeaderElector` or `LeaderElectorGroup`). */
export function hostsSchedules(value: unknown): value is object {
  return typeof value === 'object' && value !== null && hostedBy.has(value);
}

/**
 * The schedules of `ns` that `loops` host on `dataSource` (a loop on another DataSource claims
 * its slots in another table, maybe another database: its schedules are not this one's).
 */
export function hostedSchedules(loops: readonly object[], dataSource: DataSource, ns: string): Schedule[] {
  return loops.flatMap((loop) => hostedBy.get(loop)?.of(ns, dataSource) ?? []);
}
