import type { LeaderElector } from '../election/loop/elector';
import { checkOptions } from '../election/validate';
import { GemstoneError, ValidationError } from '../errors';
import { checkBuckets, ElectorMetrics } from './elector-metrics';
import { DEFAULT_SCHEDULE_DURATION_BUCKETS, HELP, METRIC_NAMES, SCHEDULE_RUN_STATES, TRANSITION_REASONS } from './names';
import { ElectorObserver, observedMetrics } from './observer';
import { hasMethods } from '../db/shape';

/**
 * A prom-client `Registry` (described by the methods used, so this package's types do not depend
 * on prom-client's).
 */
export interface PrometheusRegistry {
  /** The metric registered under `name`, if any. */
  getSingleMetric(name: string): unknown;
  /** Unregisters the metric named `name`. */
  removeSingleMetric(name: string): void;
  /** Registers a metric. */
  registerMetric(metric: unknown): void;
}

/** The options of {@link createPrometheusMetrics}. */
export interface PrometheusMetricsOptions {
  /** Where the instruments are registered. Default: prom-client's global `register`. */
  readonly registry?: PrometheusRegistry;
  /** Buckets of `gemstone_election_elect_duration_seconds`. Default {@link DEFAULT_ELECT_DURATION_BUCKETS}. */
  readonly buckets?: readonly number[];
  /** Buckets of `gemstone_election_schedule_duration_seconds`. Default {@link DEFAULT_SCHEDULE_DURATION_BUCKETS}. */
  readonly scheduleBuckets?: readonly number[];
}

type PromClient = typeof import('prom-client');

/** prom-client, loaded on first use: importing `gemstone-utils/metrics` does not need it. */
function promClient(): PromClient {
  try {
    // eslint-disable-next-line @typescript-eslint/no-require-imports
    return require('prom-client') as PromClient;
  } catch (error) {
    throw new GemstoneError('gemstone-utils/metrics: Prometheus metrics need the optional peer dependency prom-client (npm install prom-client)', {
      cause: error,
    });
  }
}

function isRegistry(value: unknown): value is PrometheusRegistry {
  return hasMethods(value, ['getSingleMetric', 'removeSingleMetric', 'registerMetric']);
}

/**
 * The election instruments on a prom-client registry, filled from the electors attached to it.
 * The gauges are read when the registry is scraped (`registry.metrics()`); counters and the
 * histogram are updated by the electors' events. One per registry: a second one on the same
 * registry throws {@link ValidationError} (attach every elector to the first, or use
 * {@link instrumentElector}, which shares one per registry).
 */
export function createPrometheusMetrics(options?: PrometheusMetricsOptions): ElectorMetrics {
  const o = checkOptions(options, ['registry', 'buckets', 'scheduleBuckets']);
  if (o.registry !== undefined && !isRegistry(o.registry)) throw new ValidationError('options.registry', 'must be a prom-client Registry');
  const buckets = checkBuckets(o.buckets);
  const scheduleBuckets = checkBuckets(o.scheduleBuckets, 'options.scheduleBuckets', DEFAULT_SCHEDULE_DURATION_BUCKETS);
  const client = promClient();
  const registry = (o.registry as PrometheusRegistry | undefined) ?? (client.register as PrometheusRegistry);
  const taken = Object.values(METRIC_NAMES).filter((name) => registry.getSingleMetric(name) !== undefined);
  if (taken.length > 0) {
    throw new ValidationError(
      'options.registry',
      `already has ${taken.join(', ')}: create one metrics object per registry and attach every elector to it (instrumentElector does)`,
    );
  }
  const registers = [registry as InstanceType<PromClient['Registry']>];
  // eslint-disable-next-line prefer-const
  let observer: ElectorObserver;

  const transitions = new client.Counter({ name: METRIC_NAMES.transitions, help: HELP.transitions, labelNames: ['ns', 'reason'], registers });
  const electErrors = new client.Counter({ name: METRIC_NAMES.electErrors, help: HELP.electErrors, labelNames: ['ns'], registers });
  const electDuration = new client.Histogram({
    name: METRIC_NAMES.electDuration,
    help: HELP.electDuration,
    labelNames: ['ns', 'outcome'],
    buckets: [...buckets],
    registers,
  });
  const scheduleRuns = new client.Counter({
    name: METRIC_NAMES.scheduleRuns,
    help: HELP.scheduleRuns,
    labelNames: ['ns', 'schedule', 'state'],
    registers,
  });
  const scheduleDuration = new client.Histogram({
    name: METRIC_NAMES.scheduleDuration,
    help: HELP.scheduleDuration,
    labelNames: ['ns', 'schedule', 'state'],
    buckets: [...scheduleBuckets],
    registers,
  });
  registerGauges(client, registers, () => observer);

  observer = new ElectorObserver({
    initialize(ns) {
      for (const reason of TRANSITION_REASONS) transitions.inc({ ns, reason }, 0);
      electErrors.inc({ ns }, 0);
    },
    transition: (ns, reason) => transitions.inc({ ns, reason }),
    tick: (ns, outcome, seconds) => electDuration.observe({ ns, outcome }, seconds),
    electError: (ns) => electErrors.inc({ ns }),
    initializeSchedule(ns, schedule) {
      for (const state of SCHEDULE_RUN_STATES) scheduleRuns.inc({ ns, schedule, state }, 0);
    },
    scheduleRun({ ns, name: schedule, state, durationSeconds }) {
      scheduleRuns.inc({ ns, schedule, state });
      if (durationSeconds !== null) scheduleDuration.observe({ ns, schedule, state }, durationSeconds);
    },
  });

  const metrics: ElectorMetrics = observedMetrics(observer, () => {
    for (const name of Object.values(METRIC_NAMES)) registry.removeSingleMetric(name);
    if (shared.get(registry) === metrics) shared.delete(registry);
  });
  return metrics;
}

/** The metrics object {@link instrumentElector} created per registry. */
const shared = new WeakMap<PrometheusRegistry, ElectorMetrics>();

/**
 * The one-liner: observes `elector` with the election instruments of `options.registry` (default
 * prom-client's global `register`), created on the first call for that registry and shared by
 * every later one. Returns the function that detaches the elector.
 */
export function instrumentElector(elector: LeaderElector, options?: { readonly registry?: PrometheusRegistry }): () => void {
  const o = checkOptions(options, ['registry']);
  if (o.registry !== undefined && !isRegistry(o.registry)) throw new ValidationError('options.registry', 'must be a prom-client Registry');
  const registry = (o.registry as PrometheusRegistry | undefined) ?? (promClient().register as PrometheusRegistry);
  let metrics = shared.get(registry);
  if (!metrics) {
    metrics = createPrometheusMetrics({ registry });
    shared.set(registry, metrics);
  }
  return metrics.attach(elector);
}

/**
 * The gauges, computed at scrape time from the electors attached to `observer()` (read then: the
 * observer is made after the instruments it feeds).
 */
function registerGauges(client: PromClient, registers: Array<InstanceType<PromClient['Registry']>>, observer: () => ElectorObserver): void {
  new client.Gauge({
    name: METRIC_NAMES.scheduleLastSuccess,
    help: HELP.scheduleLastSuccess,
    labelNames: ['ns', 'schedule'],
    registers,
    // In cluster mode the newest success of any process is the schedule's.
    aggregator: 'max',
    collect() {
      this.reset();
      for (const s of observer().collectSchedules()) if (s.lastSuccess !== undefined) this.set({ ns: s.ns, schedule: s.schedule }, s.lastSuccess);
    },
  });
  // Gauges are computed at scrape time from the attached electors (a namespace with no elector left
  // has no series). `aggregator` tells prom-client's AggregatorRegistry (cluster mode) how to merge
  // processes: leaders add up, the term is the highest, the skew an average, its bound the widest.
  const gauge = (
    name: string,
    help: string,
    aggregator: 'sum' | 'max' | 'average',
    value: (state: ReturnType<ElectorObserver['collect']>[number]) => number | undefined,
  ) =>
    new client.Gauge({
      name,
      help,
      labelNames: ['ns'],
      registers,
      aggregator,
      collect() {
        this.reset();
        for (const state of observer().collect()) {
          const v = value(state);
          if (v !== undefined) this.set({ ns: state.ns }, v);
        }
      },
    });
  gauge(METRIC_NAMES.isLeader, HELP.isLeader, 'sum', (s) => s.isLeader);
  gauge(METRIC_NAMES.term, HELP.term, 'max', (s) => s.term);
  gauge(METRIC_NAMES.clockSkew, HELP.clockSkew, 'average', (s) => s.clockSkew?.seconds);
  gauge(METRIC_NAMES.clockSkewError, HELP.clockSkewError, 'max', (s) => s.clockSkew?.errorSeconds);
}
