/**
 * `gemstone-utils/nestjs` — leader election in a NestJS application: `ElectionModule` on the
 * application's `@nestjs/typeorm` DataSource, the `@LeaderCron()` method decorator for schedules
 * that run each slot once, the `@LeaderOnly()` method decorator for `@nestjs/schedule` jobs, and a `@nestjs/terminus` health indicator. Needs `@nestjs/common`, `@nestjs/core` and
 * `@nestjs/typeorm`; `@nestjs/terminus` only for the health indicator. Importing it registers the
 * election tables on `GemstoneDB`, as `gemstone-utils` does.
 * @packageDocumentation
 * @module gemstone-utils/nestjs
 */
// The database folders register their dialects (see src/databases/registry.ts).
import '../databases';
import 'reflect-metadata';
export { ElectionModule } from './election.module';
export { LeaderOnly, LeaderOnlyWithoutElectorError } from './leader-only.decorator';
export { LeaderCron } from './leader-cron.decorator';
export type { LeaderCronOptions, LeaderCronSlots } from './leader-cron.decorator';
export { ElectionHealthIndicator, DEFAULT_HEALTH_KEY } from './health.indicator';
export type { ElectionHealthDetails, ElectionHealthResult } from './health.indicator';
export {
  ELECTION_MODULE_OPTIONS,
  ELECTION_DATA_SOURCE,
  DEFAULT_CONNECTION_NAME,
  DEFAULT_IS_GLOBAL,
  DEFAULT_LOG_LEADERSHIP,
  DEFAULT_DASHBOARD_PATH,
} from './options';
export type {
  ElectionModuleOptions,
  ElectionModuleRootOptions,
  ElectionModuleAsyncOptions,
  ElectionModuleBinding,
  ElectionDashboardOptions,
} from './options';
export { ElectionService, LeaderElector, GemstoneDB } from '../index';
export type { Lease } from '../election/loop/elector-options';
export type { ScheduledRun, ScheduleOptions } from '../index';
