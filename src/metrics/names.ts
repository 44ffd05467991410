import type { DemotionReason } from '../election/loop/elector';
import type { TickOutcome } from '../election/loop/tick';
import type { EndedRunState } from '../schedules/run-ended';

/** The instruments' names, the same for prom-client and OpenTelemetry (dashboards and alerts work on both). */
export const METRIC_NAMES = Object.freeze({
  /** Gauge, label `ns`: 1 while an elector of this process leads the namespace, else 0. */
  isLeader: 'gemstone_election_is_leader',
  /** Gauge, label `ns`: the highest term this process has seen in the namespace (its own while it leads). */
  term: 'gemstone_election_term',
  /** Counter, labels `ns`, `reason`: leaderships started (`elected`) and ended (a demotion reason). */
  transitions: 'gemstone_election_transitions_total',
  /** Histogram in seconds, labels `ns`, `outcome`: how long each tick's `elect` took. */
  electDuration: 'gemstone_election_elect_duration_seconds',
  /** Counter, label `ns`: ticks whose `elect` failed. */
  electErrors: 'gemstone_election_elect_errors_total',
  /** Gauge in seconds, label `ns`: the database clock minus this host's clock, from the latest tick. */
  clockSkew: 'gemstone_election_db_clock_skew_seconds',
  /** Gauge in seconds, label `ns`: the error bound (±) of that measurement, half the round trip plus 1 ms. */
  clockSkewError: 'gemstone_election_db_clock_skew_error_seconds',
  /** Counter, labels `ns`, `schedule`, `state`: a schedule's slots that reached a final state (see {@link SCHEDULE_RUN_STATES}). */
  scheduleRuns: 'gemstone_election_schedule_runs_total',
  /** Histogram in seconds, labels `ns`, `schedule`, `state` (`done` or `failed`): how long each job ran. */
  scheduleDuration: 'gemstone_election_schedule_duration_seconds',
  /** Gauge in unix seconds, labels `ns`, `schedule`: when this process last recorded a slot `done` (database clock). */
  scheduleLastSuccess: 'gemstone_election_schedule_last_success_timestamp_seconds',
});

/** What the `reason` label of `gemstone_election_transitions_total` says: a leadership began, or why it ended. */
export type TransitionReason = 'elected' | DemotionReason;

/** Reasons whose counters exist (at 0) from the moment an elector is attached, so `rate()` and `increase()` see the first one. */
export const TRANSITION_REASONS: readonly TransitionReason[] = Object.freeze(['elected', 'lost', 'lease-expired-locally', 'handed-over', 'stopped']);

/** Values of the `outcome` label of `gemstone_election_elect_duration_seconds`. */
export const TICK_OUTCOMES: readonly TickOutcome[] = Object.freeze(['acquired', 'renewed', 'follower', 'error']);

/** Values of the `state` label of `gemstone_election_schedule_runs_total`, each at 0 from a schedule's first recorded slot. */
export const SCHEDULE_RUN_STATES: readonly EndedRunState[] = Object.freeze(['done', 'failed', 'abandoned', 'missed', 'skipped']);

/**
 * Default buckets of `gemstone_election_schedule_duration_seconds`, in seconds: 10 ms to 1 h
 * (jobs run from a blink to a long batch).
 */
export const DEFAULT_SCHEDULE_DURATION_BUCKETS: readonly number[] = Object.freeze([
  0.01, 0.05, 0.1, 0.5, 1, 5, 10, 30, 60, 300, 600, 1800, 3600,
]);

/**
 * Default buckets of `gemstone_election_elect_duration_seconds`, in seconds: 1 ms to 10 s. A
 * healthy `elect` takes a few milliseconds; anything near a second eats into the lease.
 */
export const DEFAULT_ELECT_DURATION_BUCKETS: readonly number[] = Object.freeze([
  0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10,
]);

export const HELP = Object.freeze({
  isLeader: '1 while an elector of this process leads the namespace, else 0',
  term: 'Highest leadership term (fencing token) this process has seen in the namespace',
  transitions: 'Leaderships started (reason="elected") and ended (reason = why) by electors of this process',
  electDuration: 'Duration of each tick\'s elect (the heartbeat), by outcome',
  electErrors: 'Ticks whose elect failed (database unreachable, timeouts, ...)',
  clockSkew: 'Database clock minus this host\'s clock, measured on the latest tick (error bound: gemstone_election_db_clock_skew_error_seconds)',
  clockSkewError: 'Error bound (+/-) of gemstone_election_db_clock_skew_seconds: half the tick\'s round trip plus 1 ms',
  scheduleRuns: 'Slots of a schedule that reached a final state on an elector of this process, by state (done, failed, abandoned, missed, skipped)',
  scheduleDuration: 'How long each scheduled job ran, by how it ended (done, failed)',
  scheduleLastSuccess: 'When an elector of this process last recorded a slot of the schedule done, in unix seconds by the database clock',
});
