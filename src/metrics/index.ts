/**
 * `gemstone-utils/metrics` — election metrics for Prometheus (prom-client) and OpenTelemetry, fed
 * by `LeaderElector` events. Both libraries are optional peer dependencies: prom-client is loaded
 * only when Prometheus metrics are created, and OpenTelemetry is used only through the `Meter`
 * you pass in. Importing this module registers nothing and needs neither.
 * @packageDocumentation
 * @module gemstone-utils/metrics
 */
// The database folders register their dialects (see src/databases/registry.ts).
import '../databases';
export { createPrometheusMetrics, instrumentElector } from './prometheus';
export type { PrometheusMetricsOptions, PrometheusRegistry } from './prometheus';
export { createOpenTelemetryMetrics } from './opentelemetry';
export type {
  OpenTelemetryMeter,
  OpenTelemetryMetricsOptions,
  OpenTelemetryObservable,
  OpenTelemetryBatchObservableResult,
  OpenTelemetryInstrumentOptions,
  OpenTelemetryAttributes,
} from './opentelemetry';
export type { ElectorMetrics } from './elector-metrics';
export { METRIC_NAMES, TRANSITION_REASONS, TICK_OUTCOMES, DEFAULT_ELECT_DURATION_BUCKETS, SCHEDULE_RUN_STATES, DEFAULT_SCHEDULE_DURATION_BUCKETS } from './names';
export type { TransitionReason } from './names';
