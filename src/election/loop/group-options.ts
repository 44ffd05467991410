import { ValidationError } from '../../errors';
import type { LeaderElectorError } from './errors';
import { checkElectorOptions, CheckedElectorOptions, LeaderElectorOptions } from './elector-options';
import type { ClockSkew } from './tick';
import { checkNs, checkOptions } from '../validate';

/** Whether a group balances its namespaces with the other groups campaigning for them unless told: false. */
export const DEFAULT_GROUP_BALANCE = false;

export { GROUP_BATCH_SIZE } from '../group-tick';

/**
 * The options of a {@link LeaderElectorGroup}: those of `LeaderElector` with `namespaces` instead
 * of `ns` (and without `onNewLeader`: listen for the `'leader'` event, which carries the namespace).
 */
export interface LeaderElectorGroupOptions extends Omit<LeaderElectorOptions, 'ns' | 'onNewLeader'> {
  /** The namespaces this group campaigns for: each a valid namespace, no duplicates. Default `[]` (add them later with `add`). */
  namespaces?: readonly string[];
  /**
   * Share the namespaces evenly with the other live eligible candidates campaigning for them (of
   * the highest priority among them): each leads ⌊N/k⌋ or ⌈N/k⌉ of the N namespaces, by voluntary
   * hand-over of surplus leases, never by preemption. Default {@link DEFAULT_GROUP_BALANCE} (false:
   * take every vacant lease). Meant for groups that all campaign for the same namespaces.
   */
  balance?: boolean;
}

export interface CheckedGroupOptions extends Omit<CheckedElectorOptions, 'ns' | 'onNewLeader'> {
  namespaces: readonly string[];
  balance: boolean;
}

const GROUP_KEYS = [
  'dataSource',
  'namespaces',
  'balance',
  'candidateId',
  'expireSeconds',
  'intervalMs',
  'onStartedLeading',
  'onStoppedLeading',
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

/** Validates a list of namespaces: an array of valid namespaces without duplicates. */
export function checkNamespaces(value: unknown, parameter = 'options.namespaces'): readonly string[] {
  if (value === undefined) return Object.freeze([]);
  if (!Array.isArray(value)) throw new ValidationError(parameter, `must be an array of namespaces (got ${typeof value})`);
  const seen = new Set<string>();
  value.forEach((ns: unknown, i) => {
    const checked = checkNs(ns === undefined ? null : ns, `${parameter}[${i}]`);
    if (seen.has(checked)) throw new ValidationError(`${parameter}[${i}]`, `is a duplicate of namespace ${JSON.stringify(checked)}`);
    seen.add(checked);
  });
  return Object.freeze([...seen]);
}

/** Validates the group's options (as `LeaderElector` validates its own) and fills in the defaults. */
export function checkGroupOptions(value: unknown): CheckedGroupOptions {
  const o = checkOptions(value, GROUP_KEYS);
  const { namespaces, balance, ...rest } = o;
  if (balance !== undefined && typeof balance !== 'boolean') {
    throw new ValidationError('options.balance', `must be a boolean (got ${typeof balance})`);
  }
  const checkedNamespaces = checkNamespaces(namespaces);
  const { ns: _ns, onNewLeader: _onNewLeader, ...elector } = checkElectorOptions(rest);
  return Object.freeze({ ...elector, namespaces: checkedNamespaces, balance: (balance as boolean | undefined) ?? DEFAULT_GROUP_BALANCE });
}

/** One completed tick of a group, as its `'tick'` event reports it. */
export interface GroupTick {
  /** The group's candidate id. */
  readonly candidateId: string;
  /** From just before the tick's transaction was sent until its answer or error (monotonic clock), in seconds. */
  readonly durationSeconds: number;
  /** How many namespaces the tick campaigned for. */
  readonly namespaces: number;
  /** Leases held after the tick (renewed or acquired; without those being handed over). */
  readonly held: number;
  /** Leases acquired by this tick. */
  readonly acquired: number;
  /** Leaderships that ended with this tick (lost, or handed over for balance or priority). */
  readonly lost: number;
  /** The live eligible candidates the namespaces are balanced between (this one included when it is one); 0 on error. */
  readonly members: number;
  /** Database clock minus host clock, measured by the tick; null on error. */
  readonly clockSkew: ClockSkew | null;
  /** The error of a failed tick (also reported as `'error'`); null otherwise. */
  readonly error: LeaderElectorError | null;
}
