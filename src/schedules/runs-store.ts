/**
 * The storage side of schedules: one row per `(ns, name, slot)` in `gemstone_election_run`,
 * claimed and finished only under the live term of the namespace's leader. The runner decides
 * which slots to claim; this interface says what the database guarantees about them.
 *
 * Get one with `runsStoreOf(dataSource)` (`store.ts`). Arguments are checked first (a
 * `ValidationError` naming the parameter, nothing sent). Every write is fenced by the
 * `assertLeader` rule (`election/fence.ts`) in its own transaction: `claim` answers a failed
 * fence as `{ claimed: false, why: 'not-leader' }`; `finish` and `record` throw `NotLeaderError`
 * (for `finish` also when the row is not `running` under the caller's term: finished twice, never
 * claimed, or taken over; its `message` says which). Inside a caller's transaction on
 * MySQL/MariaDB the fence may also end in `SerializationFailureError` (roll back, then retry or
 * treat as lost). Database errors (connection lost, …) surface as they are.
 */
import type { Session } from '../db/session-type';

/**
 * A run's state. `running`: claimed under a term, not finished. `done` / `failed`: the job
 * returned / threw. `abandoned`: its runs lost their leader `maxAttempts` times. `missed`: came
 * due while nobody ran it and is out of the catch-up policy. `skipped`: came due while the
 * schedule's previous run still ran (`overlap: 'skip'`). Every state but `running` is final.
 */
export type RunState = 'running' | 'done' | 'failed' | 'abandoned' | 'missed' | 'skipped';

/** The final states: a slot in one of them never runs again. */
export type FinalRunState = Exclude<RunState, 'running'>;

/** One slot of one schedule. */
export interface SlotKey {
  /** The namespace whose leader runs the schedule. */
  readonly ns: string;
  /** The schedule's name, unique per namespace (1–100 characters). */
  readonly name: string;
  /** When the slot comes due (millisecond precision). */
  readonly slot: Date;
}

/** A {@link SlotKey} once validated: the slot as whole epoch milliseconds. */
export interface CheckedSlot {
  readonly ns: string;
  readonly name: string;
  readonly slotMs: number;
}

/** Who claims: the leader's candidate id and the term it leads under. */
export interface Claimant {
  /** The leader's candidate id (a UUID). */
  readonly candidateId: string;
  /** The term of the leadership the claim is made under (the fencing token). */
  readonly term: number;
}

/** Why a claim was refused. */
export type ClaimRefusal = 'not-leader' | 'not-due' | 'final' | 'running' | 'abandoned';

/** The answer of {@link RunsStore.claim}. */
export type ClaimResult =
  | {
      /** The slot is the caller's to run, as attempt `attempt`. */
      readonly claimed: true;
      /** 1 for the first run of the slot, +1 for each re-claim after a lost leader. */
      readonly attempt: number;
      /** The database's clock at the claim. */
      readonly databaseNow: Date;
    }
  | {
      /** Not claimed: see `why`. */
      readonly claimed: false;
      /**
       * `not-leader`: `who` does not hold the live lease under its term; `not-due`: the slot is
       * later than the database's now; `final`: the slot is already finished (`state` says how);
       * `running`: it runs under this very term; `abandoned`: it was just marked abandoned
       * because its runs lost their leader `maxAttempts` times.
       */
      readonly why: ClaimRefusal;
      /** The slot's state when the row exists. */
      readonly state?: RunState;
      /** The database's clock at the claim. */
      readonly databaseNow: Date;
    };

/** One run as `ElectionService.getRuns` returns it. */
export interface ScheduledRunInfo {
  /** The namespace. */
  readonly ns: string;
  /** The schedule's name. */
  readonly name: string;
  /** When the slot came due. */
  readonly slot: Date;
  /** Its state. */
  readonly state: RunState;
  /** The attempt of the last claim (1 for the first); 0 for a slot recorded missed or skipped. */
  readonly attempt: number;
  /** The term it was last claimed or recorded under. */
  readonly term: number;
  /** The leader that last claimed or recorded it. */
  readonly candidateId: string;
  /** When the last claim was made (database clock); null for a slot never claimed. */
  readonly startedAt: Date | null;
  /** When it reached a final state (database clock); null while running. */
  readonly finishedAt: Date | null;
  /** The error message of a failed run (truncated to {@link RUN_ERROR_MAX_LENGTH}); null otherwise. */
  readonly error: string | null;
}

/** Longest stored error message, in characters; longer messages are cut to it. */
export const RUN_ERROR_MAX_LENGTH = 2000;

/** Longest schedule name, in characters. */
export const SCHEDULE_NAME_MAX_LENGTH = 100;

/** What a newly elected leader looks back at. */
export interface LookBack {
  /** The newest recorded slot of the schedule, in any state; null when none. */
  readonly newest: Date | null;
  /** Its `running` slots, oldest first: their leader was lost (or is this one). */
  readonly unfinished: SlotKey[];
  /** The database's clock at the read. */
  readonly databaseNow: Date;
}

/** The statements of schedules' runs (the runner's only way to the runs table). */
export interface RunsStore {
  /**
   * One transaction: passes only when `who` holds the live lease of `ns` under `term` (the
   * `assertLeader` rule, same locks), and the slot has come due by the DATABASE clock
   * (`slot <= now`). Absent row -> inserted `running`, attempt 1. `running` under an older term
   * (its leader was lost) -> attempt + 1 under this term, or `abandoned` (claimed: false, why
   * `abandoned`) when the attempt already reached `maxAttempts`. `running` under this term ->
   * why `running`, unless `retake` (default false): then it is run again like one of an older
   * term. A leader retakes only a slot that an earlier leadership of the same term in this
   * process left running (a local demotion, then the same term renewed) once that leadership's
   * run has been released: nobody runs it any more, and no other holder of the term exists.
   * Any final state -> why `final`.
   */
  claim(key: SlotKey, who: Claimant, maxAttempts: number, retake?: boolean): Promise<ClaimResult>;
  /**
   * Marks the claimed run `done` or `failed`, fenced: the live lease under `who.term`, and the
   * row still `running` under `who.term`. In `session`'s transaction when given (so the job's
   * writes and `done` commit together), else in its own. Throws `NotLeaderError` when the fence
   * fails (nothing written). `error` is stored cut to {@link RUN_ERROR_MAX_LENGTH} characters.
   */
  finish(key: SlotKey, who: Claimant, state: 'done' | 'failed', error?: string, session?: Session): Promise<void>;
  /**
   * Records slots that will never run (`missed` or `skipped`), fenced like `claim`, in one
   * transaction; idempotent: an existing row is left as it is. Throws `NotLeaderError` when the
   * fence fails (nothing written).
   */
  record(keys: readonly SlotKey[], who: Claimant, state: 'missed' | 'skipped'): Promise<void>;
  /** The newest recorded slot of the schedule and its unfinished slots, with the database's now. */
  lookBack(ns: string, name: string): Promise<LookBack>;
}
