import { Injectable } from '@nestjs/common';
import type * as Terminus from '@nestjs/terminus';
import { LeaderElector } from '../election/loop/elector';
import type { ElectorRole } from '../election/loop/health';

/** The key of the indicator's entry in a health check's result: `"election"`. */
export const DEFAULT_HEALTH_KEY = 'election';

/** What the indicator reports under its key, besides terminus's `status`. */
export interface ElectionHealthDetails {
  /** The elector's namespace. */
  readonly ns: string;
  /** The elector's candidate id. */
  readonly candidateId: string;
  /** `leader`, `follower` or `stopped`, as `elector.health()` says. */
  readonly role: ElectorRole;
  /** The observed leader's candidate id; null when vacant or unknown. */
  readonly leaderId: string | null;
  /** This instance's term while it leads; null otherwise. */
  readonly term: number | null;
  /** ISO time of the last successful tick; null before one. */
  readonly lastRenewedAt: string | null;
  /** Message of the latest tick's error while it is failing; null otherwise. */
  readonly lastError: string | null;
  /** Why the check is down, in words; null when up. */
  readonly problem: string | null;
}

/** `{ [key]: { status, ...details } }`, the shape of terminus's `HealthIndicatorResult`. */
export type ElectionHealthResult = Record<
  string,
  ElectionHealthDetails & {
    /** terminus's verdict: `up` when `elector.health().ok`. */
    readonly status: 'up' | 'down';
  }
>;

/** `@nestjs/terminus` is an optional peer: loaded only when a check runs. */
function loadTerminus(): typeof Terminus {
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  return require('@nestjs/terminus') as typeof Terminus;
}

/**
 * A `@nestjs/terminus` health indicator built on `elector.health()`: `up` while the module's
 * elector is running and renewing (leader or follower alike), `down` when it is stopped, when no
 * tick has succeeded for longer than the lease, or when a leader's renewal is overdue — the
 * liveness probe of a stuck process. Synchronous underneath: it sends no query.
 *
 * Provided and exported by `ElectionModule`; use it in a `@HealthCheck()` endpoint of a module
 * that imports `TerminusModule`. With terminus 11 and later it builds its result with
 * `HealthIndicatorService` (a down result is returned, as that API expects); with older terminus
 * it throws `HealthCheckError` when down, as the `HealthIndicator` API expects.
 */
@Injectable()
export class ElectionHealthIndicator {
  constructor(private readonly elector: LeaderElector) {}

  /** The elector's health under `key` (default {@link DEFAULT_HEALTH_KEY}). */
  async isHealthy(key: string = DEFAULT_HEALTH_KEY): Promise<ElectionHealthResult> {
    const health = this.elector.health();
    const details: ElectionHealthDetails = {
      ns: this.elector.ns,
      candidateId: this.elector.candidateId,
      role: health.role,
      leaderId: this.elector.leaderId,
      term: this.elector.term,
      lastRenewedAt: health.lastRenewedAt?.toISOString() ?? null,
      lastError: health.lastError?.message ?? null,
      problem: health.problem,
    };
    const terminus = loadTerminus() as typeof Terminus & { HealthCheckError?: new (message: string, causes: unknown) => Error };
    if (typeof terminus.HealthIndicatorService === 'function') {
      const session = new terminus.HealthIndicatorService().check(key);
      return (health.ok ? session.up({ ...details }) : session.down({ ...details })) as ElectionHealthResult;
    }
    const result: ElectionHealthResult = { [key]: { status: health.ok ? 'up' : 'down', ...details } };
    if (!health.ok && terminus.HealthCheckError) throw new terminus.HealthCheckError(`election: ${health.problem ?? 'unhealthy'}`, result);
    return result;
  }
}
