/**
 * `gemstone-utils/dashboard` — a read-only leadership dashboard: who leads each namespace, how
 * long its lease has left, its candidates, and a timeline of its terms, live. Mount
 * {@link createDashboard} in an application (Node's `http`, Express, Fastify, Nest), or serve it
 * with {@link serveDashboard} (what `gemstone-election dashboard` does). Importing it registers
 * the election tables on `GemstoneDB`, as `gemstone-utils` does.
 * @packageDocumentation
 * @module gemstone-utils/dashboard
 */
// The database folders register their dialects (see src/databases/registry.ts).
import '../databases';
import '../election';
export { createDashboard } from './handler';
export type { Dashboard } from './handler';
export { serveDashboard, isLoopback, exposureWarning, DEFAULT_DASHBOARD_PORT, DEFAULT_DASHBOARD_HOST } from './server';
export type { DashboardServer, DashboardServerOptions } from './server';
export {
  DEFAULT_DASHBOARD_CHALLENGE,
  DEFAULT_DASHBOARD_MAX_STREAMS,
  DEFAULT_DASHBOARD_MAX_STREAM_BUFFER_BYTES,
  DEFAULT_DASHBOARD_CLOSE_TIMEOUT_MS,
  DEFAULT_FLAP_WINDOW_SECONDS,
  DEFAULT_FLAP_TERMS,
  DEFAULT_PAGE_SIZE,
  MAX_PAGE_SIZE,
  MAX_FILTER_LENGTH,
  DEFAULT_TIMELINE_WINDOW_SECONDS,
  MIN_TIMELINE_WINDOW_SECONDS,
  MAX_TIMELINE_WINDOW_SECONDS,
  MAX_TIMELINE_TERMS,
  MAX_GROUP_TIMELINE_TERMS,
  MAX_CANDIDATES_SHOWN,
  MAX_SCHEDULES_SHOWN,
  RUNS_SHOWN_PER_SCHEDULE,
  MAX_OVERVIEW_SNAPSHOTS,
} from './options';
export type { DashboardOptions, DashboardAccess } from './options';
export { CONTENT_SECURITY_POLICY } from './http';
