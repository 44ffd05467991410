import { randomUUID } from 'crypto';
import { hostname } from 'os';
import { setTimeout as sleep } from 'timers/promises';
import type { EntityManager } from 'typeorm';
import { NotLeaderError, ValidationError } from '../errors';
import type { ElectOutcome } from './rows';
import { isAbortSignal } from './observe/watch';
import { checkOptions, checkNs, checkStoredName, describe, MAX_PRIORITY, type CandidateMetadata } from './validate';

/*
 * An operator's write to leader-only tables (a bulk load, a repair by hand), made the way the
 * guards accept and the history records: the operator becomes a candidate of the highest
 * priority, so the leader hands over at its next tick (as it does to any preferred candidate);
 * once it leads, one transaction proves the lease and runs the operator's work; then the lease is
 * given up with the end reason `operator`, and the loops' candidates take it back. Nothing of the
 * guard is bypassed: the same proof, checked by the same trigger, under the same term rules.
 */

/** What {@link runAsOperator} needs of the service (its public calls, and the step down it records as `operator`). */
export interface OperatorSteps {
  electOutcome(candidateId: string, options: { ns: string; priority: number; eligible: boolean; metadata: CandidateMetadata }): Promise<ElectOutcome>;
  /** One transaction: proves the lease of `candidateId` under `term`, then runs `work` (see `withTransaction`). */
  provenTransaction<T>(candidateId: string, ns: string, term: number, work: (manager: EntityManager) => Promise<T>): Promise<T>;
  /** Ends the term, if still held, with the end reason `operator`. */
  endTerm(candidateId: string, ns: string): Promise<boolean>;
  unregisterCandidate(candidateId: string, options: { ns: string }): Promise<void>;
  readonly expireSeconds: number;
}

/** Options of `ElectionService.runAsOperator`. */
export interface OperatorOptions {
  /** Who acts: a name of 1–100 characters, stored in the operator's candidate metadata (`operator`). Required. */
  readonly operator: string;
  /** Why: 1–500 characters, stored in the candidate metadata (`reason`) while the operator leads. Required. */
  readonly reason: string;
  /** The namespace whose guarded tables the work writes. Default `"default"`. */
  readonly ns?: string;
  /**
   * How long to wait for the lease, in ms. Default: three leases (`3 × expireSeconds`): a loop
   * leader hands over at its next tick, a leader that died lets its lease run out first.
   */
  readonly waitMs?: number;
  /** Aborts the wait for the lease (the work itself, once begun, is one transaction and runs to its end). */
  readonly signal?: AbortSignal;
}

/** The operator's leadership, as its work sees it. */
export interface OperatorLease {
  readonly ns: string;
  /** The operator's candidate id for this run (a fresh UUID): the term's holder in the history. */
  readonly candidateId: string;
  /** The term the operator holds: the history's row of this term ends with reason `operator`. */
  readonly term: number;
}

const MAX_OPERATOR_LENGTH = 100;
const MAX_REASON_LENGTH = 500;
/** How often the operator asks for the lease while it waits, at most. */
const POLL_MS = 250;

/** The checked options of {@link runAsOperator}: throws {@link ValidationError} before anything is written. */
export function checkOperatorOptions(options: unknown, expireSeconds: number): { operator: string; reason: string; ns: string; waitMs: number; signal: AbortSignal | undefined } {
  if (options === undefined) throw new ValidationError('options', 'is required: { operator, reason } say who writes and why');
  const o = checkOptions(options, ['operator', 'reason', 'ns', 'waitMs', 'signal']);
  const operator = checkStoredName(o.operator, 'options.operator', MAX_OPERATOR_LENGTH);
  const reason = checkStoredName(o.reason, 'options.reason', MAX_REASON_LENGTH);
  const ns = checkNs(o.ns);
  const waitMs = o.waitMs === undefined ? 3 * expireSeconds * 1000 : o.waitMs;
  if (typeof waitMs !== 'number' || !Number.isFinite(waitMs) || waitMs < 0) {
    throw new ValidationError('options.waitMs', `must be a finite number of milliseconds >= 0 (got ${describe(waitMs)})`);
  }
  const signal = o.signal;
  if (signal !== undefined && !isAbortSignal(signal)) throw new ValidationError('options.signal', `must be an AbortSignal (got ${describe(signal)})`);
  return { operator, reason, ns, waitMs, signal: signal as AbortSignal | undefined };
}

/**
 * Takes the lease of `ns` as an operator, runs `work` in one transaction that proved it, and
 * gives the lease up with the end reason `operator`. See `ElectionService.runAsOperator`.
 */
export async function runAsOperator<T>(steps: OperatorSteps, options: unknown, work: (manager: EntityManager, lease: OperatorLease) => Promise<T>): Promise<T> {
  const { operator, reason, ns, waitMs, signal } = checkOperatorOptions(options, steps.expireSeconds);
  if (typeof work !== 'function') throw new ValidationError('work', 'must be a function (manager, lease) => Promise');
  signal?.throwIfAborted();
  const candidateId = randomUUID();
  const ask = { ns, priority: MAX_PRIORITY, eligible: true, metadata: { operator, reason, host: hostname(), pid: process.pid } };
  const giveUpAt = performance.now() + waitMs;
  const pollMs = Math.min(POLL_MS, (steps.expireSeconds * 1000) / 4);
  let led = false;
  try {
    let outcome = await steps.electOutcome(candidateId, ask);
    while (!outcome.isLeader) {
      const left = giveUpAt - performance.now();
      if (left <= 0) {
        throw new NotLeaderError({
          ns,
          candidateId,
          leaderId: outcome.leaderId,
          term: outcome.term,
          detail:
            `the operator ${JSON.stringify(operator)} did not get the lease within ${waitMs} ms` +
            (outcome.leaderId === null ? '' : ` (${outcome.leaderId} holds it under term ${outcome.term}: a leader of the highest priority does not hand over, nor one that only calls elect; stop it, or raise waitMs)`),
        });
      }
      // Aborted: the signal's own reason, as `throwIfAborted` gives it (the timer's is a generic AbortError).
      await sleep(Math.min(pollMs, left), undefined, { signal }).catch((error: unknown) => {
        signal?.throwIfAborted();
        throw error;
      });
      outcome = await steps.electOutcome(candidateId, ask);
    }
    led = true;
    const lease: OperatorLease = { ns, candidateId, term: outcome.term as number };
    return await steps.provenTransaction(candidateId, ns, lease.term, (manager) => work(manager, lease));
  } finally {
    // The term ends as the operator's (the loops take the lease back at their next tick); the
    // candidate row goes. Unless the operator never led: then only the row goes.
    if (led) await steps.endTerm(candidateId, ns).catch((error: unknown) => warn(`ending the operator's term of ${JSON.stringify(ns)}`, error));
    await steps.unregisterCandidate(candidateId, { ns }).catch((error: unknown) => warn(`unregistering the operator candidate ${candidateId}`, error));
  }
}

/**
 * A cleanup that failed after the work's outcome is known: reported, not thrown over that outcome
 * (a committed bulk load must not look failed). The lease and the candidate row lapse by themselves.
 */
function warn(what: string, error: unknown): void {
  process.emitWarning(`gemstone-utils: ${what} failed (the lease and the candidate row lapse after expireSeconds): ${String(error instanceof Error ? error.message : error)}`, 'GemstoneWarning');
}
