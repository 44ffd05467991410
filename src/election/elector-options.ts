import { randomUUID } from 'crypto';
import type { DataSource } from 'typeorm';
import { ValidationError } from '../errors';
import { defaultMonotonicClock, MonotonicClock } from './monotonic';
import { checkCandidateId, checkExpireSeconds, checkNs, checkOptions, DEFAULT_EXPIRE_SECONDS } from './validate';

/** One leadership, as handed to the callbacks and to `runIfLeader`. */
export interface Lease {
  readonly ns: string;
  readonly candidateId: string;
  /** Fencing token: pass it to `assertLeader(candidateId, { ns, term, session })`. */
  readonly term: number;
  /** Aborts when this leadership ends; its `reason` is a `LeadershipEndedError`. */
  readonly signal: AbortSignal;
}

/** Where errors go when nobody listens for `'error'`. */
export interface ElectorLogger {
  error(message: string, error: unknown): void;
}

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
}

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
] as const;

function optionalFunction<T>(value: unknown, parameter: string): T | undefined {
  if (value !== undefined && typeof value !== 'function') throw new ValidationError(parameter, `must be a function (got ${typeof value})`);
  return value as T | undefined;
}

function isDataSource(value: unknown): value is DataSource {
  return typeof value === 'object' && value !== null && typeof (value as DataSource).createQueryRunner === 'function';
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
      throw new ValidationError('options.intervalMs', `must be a finite number of milliseconds > 0 (got ${String(given)})`);
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
  const logger = o.logger as ElectorLogger | undefined;
  if (logger !== undefined && (typeof logger !== 'object' || logger === null || typeof logger.error !== 'function')) {
    throw new ValidationError('options.logger', 'must be an object with an error(message, error) method, like console');
  }
  if (o.handleSignals !== undefined && typeof o.handleSignals !== 'boolean') {
    throw new ValidationError('options.handleSignals', `must be a boolean (got ${typeof o.handleSignals})`);
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
  };
}
