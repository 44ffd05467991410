import { checkOptions } from '../election/validate';
import { ValidationError } from '../errors';
import { checkBuckets, ElectorMetrics } from './elector-metrics';
import { DEFAULT_SCHEDULE_DURATION_BUCKETS, HELP, METRIC_NAMES, SCHEDULE_RUN_STATES, TRANSITION_REASONS } from './names';
import { ElectorObserver, observedMetrics } from './observer';
import { hasMethods } from '../db/shape';

/** Attributes of a measurement: here `ns`, and `reason` or `outcome`. */
export type OpenTelemetryAttributes = Record<string, string>;

/** Instrument options as `@opentelemetry/api` takes them (the subset used). */
export interface OpenTelemetryInstrumentOptions {
  /** The instrument's help text. */
  description?: string;
  /** Its unit (`s` for the durations). */
  unit?: string;
  /** Hints to the SDK; here the histogram's bucket boundaries. */
  advice?: {
    /** Bucket boundaries of a histogram, in its unit. */
    explicitBucketBoundaries?: number[];
  };
}

/** An asynchronous instrument of `@opentelemetry/api`. */
export interface OpenTelemetryObservable {
  /** Adds a callback that reports the instrument's value when the SDK collects. */
  addCallback(callback: never): void;
  /** Removes a callback added with `addCallback`. */
  removeCallback(callback: never): void;
}

/** What a batch observable callback of `@opentelemetry/api` receives. */
export interface OpenTelemetryBatchObservableResult {
  /** Reports one value of `observable` with its attributes. */
  observe(observable: OpenTelemetryObservable, value: number, attributes?: OpenTelemetryAttributes): void;
}

/**
 * An OpenTelemetry `Meter` (`metrics.getMeter(...)` of `@opentelemetry/api` ≥ 1.7), described by
 * the methods used: this package needs neither `@opentelemetry/api` installed nor its types.
 */
export interface OpenTelemetryMeter {
  /** A monotonic sum (the transitions and elect errors). */
  createCounter(
    name: string,
    options?: OpenTelemetryInstrumentOptions,
  ): {
    /** Adds `value` to the series of `attributes`. */
    add(value: number, attributes?: OpenTelemetryAttributes): void;
  };
  /** A histogram (the elect durations, in seconds). */
  createHistogram(
    name: string,
    options?: OpenTelemetryInstrumentOptions,
  ): {
    /** Records one measurement in the series of `attributes`. */
    record(value: number, attributes?: OpenTelemetryAttributes): void;
  };
  /** An asynchronous gauge (leadership, term, clock skew), read when the SDK collects. */
  createObservableGauge(name: string, options?: OpenTelemetryInstrumentOptions): OpenTelemetryObservable;
  /** One callback that reports several observable instruments at once. */
  addBatchObservableCallback(callback: (result: OpenTelemetryBatchObservableResult) => void, observables: OpenTelemetryObservable[]): void;
  /** Removes a callback added with `addBatchObservableCallback`. */
  removeBatchObservableCallback(callback: (result: OpenTelemetryBatchObservableResult) => void, observables: OpenTelemetryObservable[]): void;
}

/** The options of {@link createOpenTelemetryMetrics}. */
export interface OpenTelemetryMetricsOptions {
  /**
   * Bucket boundaries of `gemstone_election_elect_duration_seconds`, passed as the histogram's
   * advice (a View configured in the SDK takes precedence). Default {@link DEFAULT_ELECT_DURATION_BUCKETS}.
   */
  readonly buckets?: readonly number[];
  /** Bucket boundaries of `gemstone_election_schedule_duration_seconds` (advice, like `buckets`). Default {@link DEFAULT_SCHEDULE_DURATION_BUCKETS}. */
  readonly scheduleBuckets?: readonly number[];
}

function isMeter(value: unknown): value is OpenTelemetryMeter {
  return hasMethods(value, ['createCounter', 'createHistogram', 'createObservableGauge', 'addBatchObservableCallback', 'removeBatchObservableCallback']);
}

/**
 * The election instruments on an OpenTelemetry `Meter`, with the same names, labels (attributes)
 * and meaning as the Prometheus ones. The gauges are observable: read from the attached electors
 * when the SDK's reader collects. Counters are monotonic sums; the durations a histogram in
 * seconds.
 */
export function createOpenTelemetryMetrics(meter: OpenTelemetryMeter, options?: OpenTelemetryMetricsOptions): ElectorMetrics {
  if (!isMeter(meter)) throw new ValidationError('meter', 'must be an OpenTelemetry Meter (metrics.getMeter(name) of @opentelemetry/api >= 1.7)');
  const o = checkOptions(options, ['buckets', 'scheduleBuckets']);
  const buckets = checkBuckets(o.buckets);
  const scheduleBuckets = checkBuckets(o.scheduleBuckets, 'options.scheduleBuckets', DEFAULT_SCHEDULE_DURATION_BUCKETS);

  const transitions = meter.createCounter(METRIC_NAMES.transitions, { description: HELP.transitions });
  const electErrors = meter.createCounter(METRIC_NAMES.electErrors, { description: HELP.electErrors });
  const electDuration = meter.createHistogram(METRIC_NAMES.electDuration, {
    description: HELP.electDuration,
    unit: 's',
    advice: { explicitBucketBoundaries: [...buckets] },
  });
  const isLeader = meter.createObservableGauge(METRIC_NAMES.isLeader, { description: HELP.isLeader });
  const term = meter.createObservableGauge(METRIC_NAMES.term, { description: HELP.term });
  const clockSkew = meter.createObservableGauge(METRIC_NAMES.clockSkew, { description: HELP.clockSkew, unit: 's' });
  const clockSkewError = meter.createObservableGauge(METRIC_NAMES.clockSkewError, { description: HELP.clockSkewError, unit: 's' });
  const scheduleRuns = meter.createCounter(METRIC_NAMES.scheduleRuns, { description: HELP.scheduleRuns });
  const scheduleDuration = meter.createHistogram(METRIC_NAMES.scheduleDuration, {
    description: HELP.scheduleDuration,
    unit: 's',
    advice: { explicitBucketBoundaries: [...scheduleBuckets] },
  });
  const scheduleLastSuccess = meter.createObservableGauge(METRIC_NAMES.scheduleLastSuccess, { description: HELP.scheduleLastSuccess, unit: 's' });
  const gauges = [isLeader, term, clockSkew, clockSkewError, scheduleLastSuccess];

  const observer = new ElectorObserver({
    initialize(ns) {
      for (const reason of TRANSITION_REASONS) transitions.add(0, { ns, reason });
      electErrors.add(0, { ns });
    },
    transition: (ns, reason) => transitions.add(1, { ns, reason }),
    tick: (ns, outcome, seconds) => electDuration.record(seconds, { ns, outcome }),
    electError: (ns) => electErrors.add(1, { ns }),
    initializeSchedule(ns, schedule) {
      for (const state of SCHEDULE_RUN_STATES) scheduleRuns.add(0, { ns, schedule, state });
    },
    scheduleRun({ ns, name: schedule, state, durationSeconds }) {
      scheduleRuns.add(1, { ns, schedule, state });
      if (durationSeconds !== null) scheduleDuration.record(durationSeconds, { ns, schedule, state });
    },
  });
  /**
   * Namespaces whose `is_leader` was observed. An SDK collecting with cumulative temporality (the
   * default) keeps exporting a series' last value after the callback stops observing it, and
   * OpenTelemetry cannot delete a series: a namespace whose electors were all detached would show
   * its last leader forever. Such a namespace is observed as led by none (0) instead.
   */
  const observed = new Set<string>();
  // One callback for the four gauges: every elector's state is read once per collection.
  const observe = (result: OpenTelemetryBatchObservableResult) => {
    const states = observer.collect();
    const attached = new Set(states.map((state) => state.ns));
    for (const ns of observed) if (!attached.has(ns)) result.observe(isLeader, 0, { ns });
    for (const state of states) {
      const attributes = { ns: state.ns };
      observed.add(state.ns);
      result.observe(isLeader, state.isLeader, attributes);
      if (state.term !== undefined) result.observe(term, state.term, attributes);
      if (state.clockSkew) {
        result.observe(clockSkew, state.clockSkew.seconds, attributes);
        result.observe(clockSkewError, state.clockSkew.errorSeconds, attributes);
      }
    }
    for (const s of observer.collectSchedules()) {
      if (s.lastSuccess !== undefined) result.observe(scheduleLastSuccess, s.lastSuccess, { ns: s.ns, schedule: s.schedule });
    }
  };
  meter.addBatchObservableCallback(observe, gauges);

  // Counters and the histogram cannot be removed from a Meter; with no elector attached they stay still.
  return observedMetrics(observer, () => meter.removeBatchObservableCallback(observe, gauges));
}
