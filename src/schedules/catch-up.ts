import type { CatchUp } from './options';
import type { SlotSeries } from './slots';

/** The most slots one plan runs: with `catchUp: 'all'` the older ones in the window are recorded `missed`. */
export const MAX_CATCH_UP_RUNS = 1000;
/**
 * The most `missed` slots one plan records (the newest of them). A schedule down for long, or one
 * that comes due every second, would otherwise write a row for every slot it missed; the older
 * ones are left unrecorded (the plan says so in `unrecorded`).
 */
export const MAX_MISSED_RECORDED = 100;

/** What to do with the slots that came due after the newest handled one. */
export interface CatchUpPlan {
  /** Slots to run, oldest first. */
  readonly run: readonly number[];
  /** Slots to record `missed`, oldest first (at most {@link MAX_MISSED_RECORDED}). */
  readonly missed: readonly number[];
  /** Whether older missed slots exist beyond those in `missed` (not recorded). */
  readonly unrecorded: boolean;
}

/** What {@link planCatchUp} decides from. */
export interface CatchUpInput {
  readonly series: SlotSeries;
  /** The newest slot already handled (recorded in any state, or planned); null: none, nothing to catch up. */
  readonly newest: number | null;
  /** The database's now: slots up to it (inclusive) have come due. */
  readonly now: number;
  readonly catchUp: CatchUp;
  readonly catchUpWindowMs: number;
  /** Default {@link MAX_CATCH_UP_RUNS}. */
  readonly maxRuns?: number;
  /** Default {@link MAX_MISSED_RECORDED}. */
  readonly maxMissed?: number;
}

/**
 * Pure: the slots in `(newest, now]` split into those to run and those to record `missed`.
 * A slot is eligible to run when it came due no more than `catchUpWindowMs` before `now`:
 * `'all'` runs every eligible slot (the newest {@link MAX_CATCH_UP_RUNS}), `'latest'` the newest
 * eligible one, `'none'` none; every other slot is missed. With no `newest` (a schedule that has
 * never recorded a slot) nothing came due before it existed: the plan is empty.
 */
export function planCatchUp(input: CatchUpInput): CatchUpPlan {
  const { series, newest, now, catchUp, catchUpWindowMs } = input;
  const maxMissed = input.maxMissed ?? MAX_MISSED_RECORDED;
  const runLimit = catchUp === 'all' ? (input.maxRuns ?? MAX_CATCH_UP_RUNS) : catchUp === 'latest' ? 1 : 0;
  const run: number[] = [];
  const missed: number[] = [];
  if (newest === null) return Object.freeze({ run, missed, unrecorded: false });
  const windowStart = now - catchUpWindowMs;
  let unrecorded = false;
  // Newest first, so that the bounds keep the slots that matter most: the latest runs and misses.
  for (let slot = series.previous(now + 1); slot !== null && slot > newest; slot = series.previous(slot)) {
    if (slot >= windowStart && run.length < runLimit) run.push(slot);
    else if (missed.length < maxMissed) missed.push(slot);
    else {
      unrecorded = true;
      break;
    }
  }
  return Object.freeze({ run: Object.freeze(run.reverse()), missed: Object.freeze(missed.reverse()), unrecorded });
}
