/** How a slot ended, as {@link ScheduleRunEnded} tells it: the states a slot keeps for good. */
export type EndedRunState = 'done' | 'failed' | 'abandoned' | 'missed' | 'skipped';

/**
 * A slot of a schedule reached a final state and it is recorded in the database: emitted once
 * per recorded slot as the `'scheduleRun'` event of `LeaderElector` and `LeaderElectorGroup`
 * (for observers such as `gemstone-utils/metrics`). Slots that lost their leader are not final
 * (the next leader runs them again) and emit nothing.
 */
export interface ScheduleRunEnded {
  readonly ns: string;
  /** The schedule's name. */
  readonly name: string;
  /** When the slot came due, by the database's clock. */
  readonly slot: Date;
  readonly state: EndedRunState;
  /** The run's attempt (1 for the first); null for `missed` and `skipped`, which never ran. */
  readonly attempt: number | null;
  /** How long the job ran, in seconds; null when it did not run here (`missed`, `skipped`, `abandoned`). */
  readonly durationSeconds: number | null;
  /** When the end was recorded, by the database's clock as this process estimates it. */
  readonly endedAt: Date;
}
