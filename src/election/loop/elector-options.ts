// Kept in the emitted declarations, whose public types use Node's (AbortSignal): TypeScript 7
// projects load no @types by default (`types: []`).
/// <reference types="node" preserve="true" />
import { randomUUID } from 'crypto';
import { hostname } from 'os';
import type { DataSource } from 'typeorm';
import { ValidationError, shown } from '../../errors';
import { MAX_TIMER_MS } from '../../db/timers';
import { DEFAULT_HISTORY_RETENTION_SECONDS } from '../observe/history';
import { checkRetentionSeconds, DEFAULT_CANDIDATE_RETENTION_SECONDS, DEFAULT_RUN_RETENTION_SECONDS } from '../prune';
import { defaultMonotonicClock, MonotonicClock } from './monotonic';
import {
  CandidateMetadata,
  checkCandidateId,
  checkEligible,
  checkExpireSeconds,
  checkMetadata,
  checkNs,
  checkOptions,
  checkPriority,
  DEFAULT_ELIGIBLE,
  DEFAULT_EXPIRE_SECONDS,
  DEFAULT_PRIORITY,
} from '../validate';
import { isDataSource } from '../../db/shape';

/** One leadership, as handed to the callbacks and to `runIfLeader`. */
export interface Lease {
  /** The namespace led. */
  readonly ns: string;
  /** The candidate that leads: the elector's or group's own. */
  readonly candidateId: string;
  /** Fencing token: pass it to `assertLeader(candidateId, { ns, term, session })`. */
  readonly term: number;
  /** Aborts when this leadership ends; its `reason` is a `LeadershipEndedError`. */
  readonly signal: AbortSignal;
}

/** Where errors go when nobody listens for `'error'`. */
export interface ElectorLogger {
  /** Called with the error's message (prefixed `gemstone-utils: `) and the error itself. */
  error(message: string, error: unknown): void;
}

/** The options of a `LeaderElector`; every one has a default. */
export interface LeaderElectorOptions {
  /** Default: `getDataSource()` (the DataSource of the latest `initDb`), looked up by `start()`. */
  dataSource?: DataSource;
  /** Namespace: an isolated election domain. Default `"default"`. */
  ns?: string;
  /** This process's UUID. Default `crypto.randomUUID()`. */
  candidateId?: string;
  /** Lease and candidate expiry in seconds. Default {@link DEFAULT_EXPIRE_SECONDS} (60). */
  expireSeconds?: number;
  /**
   * Tick period in ms (±10% jitter). Default `expireSeconds * 1000 / 3` (at most
   * {@link MAX_INTERVAL_MS}). Must be > 0 and < `expireSeconds * 1000 / 2`, so that a leader
   * gets at least two attempts to renew before its lease ends.
   */
  intervalMs?: number;
  /** Called when this elector becomes leader. Not awaited by the loop: long-running work may watch `lease.signal`. */
  onStartedLeading?: (lease: Lease) => void | Promise<void>;
  /**
   * Called once per leadership, only after `onStartedLeading` was called; `lease.signal` has
   * already aborted. `stop()` waits for it before vacating the lease, so the next leader starts
   * after this one's work is finished.
   */
  onStoppedLeading?: (lease: Lease) => void | Promise<void>;
  /** Called whenever the observed leader (or its term) changes, also to `null` (vacant). */
  onNewLeader?: (leaderId: string | null, term: number | null) => void;
  /** Monotonic milliseconds for the local deadline. Default `performance.now()`. For tests. */
  clock?: MonotonicClock;
  /** Receives errors when no `'error'` listener is attached. Default `console`. */
  logger?: ElectorLogger;
  /**
   * Stop on SIGTERM/SIGINT (hand over at once), then let the signal end the process. Default
   * `false`. See `stopOnSignals` for more control.
   */
  handleSignals?: boolean;
  /**
   * Candidate rows expired for longer than this many seconds are deleted by the loop (at most
   * once per {@link PRUNE_INTERVAL_MS} per DataSource, after a successful tick, never inside the
   * election's transaction). Default {@link DEFAULT_CANDIDATE_RETENTION_SECONDS} (one day).
   */
  candidateRetentionSeconds?: number;
  /**
   * How long `stop()` may take, in ms. Leadership ends locally at once; the rest of a stop (the
   * tick in flight, `onStoppedLeading`, the unregister that vacates the lease) gets this long, and
   * whatever has not finished by then is abandoned: `stop()` resolves anyway and reports it as
   * `'error'` (phase `stop`); a lease still held at the database then runs out by itself. Default
   * `min(expireSeconds * 1000, {@link DEFAULT_STOP_TIMEOUT_MS})`. Must be > 0.
   */
  stopTimeoutMs?: number;
  /**
   * PostgreSQL: how followers learn of a vacancy without waiting for their next tick. `true`
   * (default): LISTEN on one extra connection made from the DataSource's options. `{ url }`: that
   * connection goes to this address instead (its parts override the DataSource's) — for a
   * DataSource behind a transaction-mode pooler such as PgBouncer, which cannot carry LISTEN:
   * point it at PostgreSQL itself. `false`: no LISTEN; hand-overs wait for the next tick.
   * Ignored on other databases. A LISTEN that does not deliver (a NOTIFY sent through the
   * DataSource has not arrived within `DEFAULT_LISTEN_PROBE_TIMEOUT_MS`, 5 s) is reported once as
   * `'error'` (phase `listen`) and closed; ticks carry on.
   */
  listen?:
    | boolean
    | {
        /** A `postgres://` or `postgresql://` connection string for the LISTEN connection; its parts override the DataSource's. */
        readonly url: string;
      };
  /**
   * History rows of terms ended longer ago than this many seconds are deleted by the loop, like
   * expired candidates (same schedule, never the leader row's lock). Default
   * {@link DEFAULT_HISTORY_RETENTION_SECONDS} (30 days).
   */
  historyRetentionSeconds?: number;
  /**
   * Rows of schedule runs finished longer ago than this many seconds are deleted by the loop, like
   * old history (same schedule; running runs never). Default {@link DEFAULT_RUN_RETENTION_SECONDS}
   * (30 days). Keep it longer than every schedule's catch-up window.
   */
  runRetentionSeconds?: number;
  /**
   * Each tick measures the database clock minus this host's clock (`'tick'` event, metric
   * `gemstone_election_db_clock_skew_seconds`). When the skew is beyond this many seconds — for
   * certain, given the measurement's error bound — a warning is reported through `'error'`
   * (phase `clock`), once per crossing. Default {@link DEFAULT_CLOCK_SKEW_WARNING_SECONDS} (1);
   * `Infinity` turns the warning off.
   */
  clockSkewWarningSeconds?: number;
  /**
   * What this candidate says about itself, returned by `getLeader` and `getCandidates`: a JSON
   * object of at most 4 KiB. Default {@link defaultElectorMetadata}: `{ host: os.hostname(),
   * pid: process.pid }`. Written when the elector registers (its first elect) and again only if
   * its candidate row had to be created anew, not on every tick.
   */
  metadata?: CandidateMetadata;
  /**
   * A leader hands its lease over to a live eligible candidate of strictly higher priority on
   * its next tick; equal priorities never hand over. An integer. Default 0.
   */
  priority?: number;
  /** False: register and observe (the `'leader'` event, `leaderId`) but never lead. Default true. */
  eligible?: boolean;
}

/** The elector's metadata unless given: `{ host: os.hostname(), pid: process.pid }`. */
export function defaultElectorMetadata(): CandidateMetadata {
  return { host: hostname(), pid: process.pid };
}

/**
 * Default threshold of the clock skew warning: 1 s. Leases are judged by the database clock alone
 * and the local deadline by elapsed time, so skew never breaks the election; it misleads whatever
 * compares the two clocks (a lease's `leaseExpiresAt` against `Date.now()`, log timelines). NTP
 * keeps healthy hosts within milliseconds, and a healthy tick measures within a few: a second is
 * far beyond both, so a warning means a clock is really off, yet small beside any lease.
 */
export const DEFAULT_CLOCK_SKEW_WARNING_SECONDS = 1;

/**
 * Upper default for `stopTimeoutMs`: 5000 ms. A stop normally takes one round trip; a statement
 * that has not answered in 5 s is stuck (network cut, lock held elsewhere), and 5 s leaves room
 * inside `stopOnSignals`' 10 s and a typical 30 s termination grace period.
 */
export const DEFAULT_STOP_TIMEOUT_MS = 5_000;

/** The loop prunes expired candidates at most this often per DataSource: 60000 ms. */
export const PRUNE_INTERVAL_MS = 60_000;

/** `setTimeout` cannot wait longer than 2^31 - 1 ms; with +10% jitter the tick period must stay below. */
export const MAX_INTERVAL_MS = 1_900_000_000;
/** Relative jitter applied to every tick period (±10%), so electors started together drift apart. */
export const TICK_JITTER = 0.1;

export interface CheckedElectorOptions {
  dataSource: DataSource | undefined;
  ns: string;
  candidateId: string;
  expireSeconds: number;
  intervalMs: number;
  onStartedLeading: LeaderElectorOptions['onStartedLeading'];
  onStoppedLeading: LeaderElectorOptions['onStoppedLeading'];
  onNewLeader: LeaderElectorOptions['onNewLeader'];
  clock: MonotonicClock;
  logger: ElectorLogger;
  handleSignals: boolean;
  candidateRetentionSeconds: number;
  stopTimeoutMs: number;
  listen: false | { readonly url: string | undefined };
  historyRetentionSeconds: number;
  runRetentionSeconds: number;
  clockSkewWarningSeconds: number;
  /** The metadata as JSON text (checked once, sent when registering). */
  metadataJson: string;
  metadata: CandidateMetadata;
  priority: number;
  eligible: boolean;
}

const KNOWN = [
  'dataSource',
  'ns',
  'candidateId',
  'expireSeconds',
  'intervalMs',
  'onStartedLeading',
  'onStoppedLeading',
  'onNewLeader',
  'clock',
  'logger',
  'handleSignals',
  'candidateRetentionSeconds',
  'stopTimeoutMs',
  'listen',
  'historyRetentionSeconds',
  'runRetentionSeconds',
  'clockSkewWarningSeconds',
  'metadata',
  'priority',
  'eligible',
] as const;

function optionalFunction<T>(value: unknown, parameter: string): T | undefined {
  if (value !== undefined && typeof value !== 'function') throw new ValidationError(parameter, `must be a function (got ${typeof value})`);
  return value as T | undefined;
}

function checkListen(value: unknown): CheckedElectorOptions['listen'] {
  if (value === undefined || value === true) return { url: undefined };
  if (value === false) return false;
  const o = checkOptions(value, ['url'] as const, 'options.listen');
  if (typeof o.url !== 'string' || o.url.trim() === '') {
    throw new ValidationError('options.listen.url', 'must be a non-empty PostgreSQL connection string (or pass listen: true / false)');
  }
  if (!/^postgres(ql)?:\/\//i.test(o.url)) {
    throw new ValidationError('options.listen.url', 'must be a postgres:// or postgresql:// URL');
  }
  return Object.freeze({ url: o.url });
}

/** Validates the constructor options and fills in the defaults. */
export function checkElectorOptions(value: unknown): CheckedElectorOptions {
  const o = checkOptions(value, KNOWN);
  if (o.dataSource !== undefined && !isDataSource(o.dataSource)) {
    throw new ValidationError('options.dataSource', 'must be a TypeORM DataSource (or omitted for the default from initDb)');
  }
  const expireSeconds = o.expireSeconds === undefined ? DEFAULT_EXPIRE_SECONDS : checkExpireSeconds(o.expireSeconds, 'options.expireSeconds');
  const leaseMs = expireSeconds * 1000;
  let intervalMs: number;
  if (o.intervalMs === undefined) {
    intervalMs = Math.min(leaseMs / 3, MAX_INTERVAL_MS);
  } else {
    const given = o.intervalMs;
    if (typeof given !== 'number' || !Number.isFinite(given) || given <= 0) {
      throw new ValidationError('options.intervalMs', `must be a finite number of milliseconds > 0 (got ${shown(given)})`);
    }
    if (given >= leaseMs / 2) {
      throw new ValidationError(
        'options.intervalMs',
        `must be < expireSeconds * 1000 / 2 = ${leaseMs / 2} ms, so a leader gets two chances to renew its lease (got ${given}); ` +
          'lower intervalMs or raise expireSeconds',
      );
    }
    if (given > MAX_INTERVAL_MS) throw new ValidationError('options.intervalMs', `must be at most ${MAX_INTERVAL_MS} ms (got ${given})`);
    intervalMs = given;
  }
  let stopTimeoutMs = Math.min(leaseMs, DEFAULT_STOP_TIMEOUT_MS);
  if (o.stopTimeoutMs !== undefined) {
    const given = o.stopTimeoutMs;
    if (typeof given !== 'number' || !Number.isFinite(given) || given <= 0 || given > MAX_TIMER_MS) {
      throw new ValidationError('options.stopTimeoutMs', `must be a finite number of milliseconds > 0 and <= ${MAX_TIMER_MS} (got ${shown(given)})`);
    }
    stopTimeoutMs = given;
  }
  const listen = checkListen(o.listen);
  const logger = o.logger as ElectorLogger | undefined;
  if (logger !== undefined && (typeof logger !== 'object' || logger === null || typeof logger.error !== 'function')) {
    throw new ValidationError('options.logger', 'must be an object with an error(message, error) method, like console');
  }
  if (o.handleSignals !== undefined && typeof o.handleSignals !== 'boolean') {
    throw new ValidationError('options.handleSignals', `must be a boolean (got ${typeof o.handleSignals})`);
  }
  const skewWarning = o.clockSkewWarningSeconds;
  if (skewWarning !== undefined && (typeof skewWarning !== 'number' || Number.isNaN(skewWarning) || skewWarning <= 0)) {
    throw new ValidationError('options.clockSkewWarningSeconds', `must be a number of seconds > 0, or Infinity for no warning (got ${shown(skewWarning)})`);
  }
  return {
    dataSource: o.dataSource as DataSource | undefined,
    ns: checkNs(o.ns, 'options.ns'),
    candidateId: o.candidateId === undefined ? randomUUID() : checkCandidateId(o.candidateId, 'options.candidateId'),
    expireSeconds,
    intervalMs,
    onStartedLeading: optionalFunction(o.onStartedLeading, 'options.onStartedLeading'),
    onStoppedLeading: optionalFunction(o.onStoppedLeading, 'options.onStoppedLeading'),
    onNewLeader: optionalFunction(o.onNewLeader, 'options.onNewLeader'),
    clock: optionalFunction<MonotonicClock>(o.clock, 'options.clock') ?? defaultMonotonicClock,
    logger: logger ?? console,
    handleSignals: (o.handleSignals as boolean | undefined) ?? false,
    candidateRetentionSeconds:
      o.candidateRetentionSeconds === undefined
        ? DEFAULT_CANDIDATE_RETENTION_SECONDS
        : checkRetentionSeconds(o.candidateRetentionSeconds, 'options.candidateRetentionSeconds'),
    stopTimeoutMs,
    listen,
    historyRetentionSeconds:
      o.historyRetentionSeconds === undefined
        ? DEFAULT_HISTORY_RETENTION_SECONDS
        : checkRetentionSeconds(o.historyRetentionSeconds, 'options.historyRetentionSeconds'),
    runRetentionSeconds:
      o.runRetentionSeconds === undefined ? DEFAULT_RUN_RETENTION_SECONDS : checkRetentionSeconds(o.runRetentionSeconds, 'options.runRetentionSeconds'),
    clockSkewWarningSeconds: (skewWarning as number | undefined) ?? DEFAULT_CLOCK_SKEW_WARNING_SECONDS,
    ...checkedMetadata(o.metadata),
    priority: o.priority === undefined ? DEFAULT_PRIORITY : checkPriority(o.priority, 'options.priority'),
    eligible: o.eligible === undefined ? DEFAULT_ELIGIBLE : checkEligible(o.eligible, 'options.eligible'),
  };
}

function checkedMetadata(value: unknown): { metadata: CandidateMetadata; metadataJson: string } {
  const metadata = value === undefined ? defaultElectorMetadata() : value;
  const metadataJson = checkMetadata(metadata, 'options.metadata');
  // A copy of what was checked: later changes to the caller's object do not reach the database half-way.
  return { metadata: JSON.parse(metadataJson) as CandidateMetadata, metadataJson };
}
