import type { LeaderElector } from '../election/loop/elector';
import { ValidationError } from '../errors';
import { DEFAULT_ELECT_DURATION_BUCKETS } from './names';

/**
 * The instruments of one registry or meter, observing any number of electors (several namespaces,
 * or several electors of one namespace: their series add up per `ns`).
 */
export interface ElectorMetrics {
  /**
   * Observes `elector` (started or not, from now on) until detached; returns the function that
   * detaches it. Attaching the same elector again returns the same function. The elector keeps
   * being observed across `stop()` and a later `start()`: detach an elector you discard.
   */
  attach(elector: LeaderElector): () => void;
  /**
   * Stops observing `elector`: its gauges disappear (counters keep their totals). No-op if not
   * attached. On OpenTelemetry, whose SDK keeps exporting a gauge series it has seen, a namespace
   * left without an attached elector reads `is_leader` 0 (term and skew keep their last values).
   */
  detach(elector: LeaderElector): void;
  /** The electors observed now. */
  readonly electors: readonly LeaderElector[];
  /** Detaches every elector and removes the instruments (from the registry, or the meter's callbacks). */
  close(): void;
}

/** Histogram buckets: a non-empty, strictly increasing list of finite positive seconds. */
export function checkBuckets(value: unknown, parameter = 'options.buckets', defaults = DEFAULT_ELECT_DURATION_BUCKETS): readonly number[] {
  if (value === undefined) return defaults;
  if (
    !Array.isArray(value) ||
    value.length === 0 ||
    !value.every((b, i) => typeof b === 'number' && Number.isFinite(b) && b > 0 && (i === 0 || b > (value[i - 1] as number)))
  ) {
    throw new ValidationError(parameter, 'must be a non-empty array of strictly increasing finite numbers of seconds > 0');
  }
  return Object.freeze([...(value as number[])]);
}
