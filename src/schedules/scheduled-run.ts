import type { DataSource, EntityManager } from 'typeorm';
import { GemstoneError, ValidationError } from '../errors';
import { withTransaction } from '../db/transaction';
import type { Lease } from '../election/loop/elector-options';
import type { Claimant, RunsStore, SlotKey } from './runs-store';

/** One run of one slot, as the job gets it. */
export interface ScheduledRun {
  /** The namespace whose leader runs it. */
  readonly ns: string;
  /** The schedule's name. */
  readonly name: string;
  /** When the slot came due, by the database's clock. */
  readonly slot: Date;
  /** 1 for the first run of this slot; +1 for each run again after a run lost its leader. */
  readonly attempt: number;
  /**
   * The term it runs under. `lease.signal` aborts when that leadership ends, and when the schedule
   * is cancelled or the loop stopped: a job that watches it stops in time.
   */
  readonly lease: Lease;
  /**
   * Runs `fn` in one transaction on the loop's DataSource, fenced by this run's term (the
   * `assertLeader` check first), and records the slot `done` in the SAME transaction: the job's
   * writes and `done` commit together, or not at all. When the leadership has ended it throws
   * (`NotLeaderError` from the database, or `lease.signal`'s reason once that aborted: also after
   * `cancel()` or `stop()`) and nothing commits; the next leader runs the slot again. Once per run. As
   * with `withTransaction`, `fn` runs again in a new transaction after a deadlock or a busy
   * SQLite database: keep it to database work.
   */
  transaction<T>(fn: (manager: EntityManager) => Promise<T>): Promise<T>;
}

/** A {@link ScheduledRun} was asked for a second transaction. */
export class RunTransactionUsedError extends GemstoneError {
  constructor(name: string) {
    super(`schedule ${JSON.stringify(name)}: run.transaction() was already called for this run (one transaction per run: it records the slot done)`);
  }
}

/** What a run's transaction needs. */
export interface RunContext {
  readonly dataSource: DataSource;
  readonly store: RunsStore;
  readonly key: SlotKey;
  readonly who: Claimant;
  readonly attempt: number;
  readonly lease: Lease;
  /** The fence: `assertLeader(who.candidateId, { ns, term: who.term, session: manager })`. */
  assertLeader(manager: EntityManager): Promise<unknown>;
}

/** The runner's side of a {@link ScheduledRun}: whether its transaction committed the slot `done`. */
export class RunHandle implements ScheduledRun {
  readonly ns: string;
  readonly name: string;
  readonly slot: Date;
  readonly attempt: number;
  readonly lease: Lease;
  readonly #c: RunContext;
  #used = false;
  #committed = false;

  constructor(context: RunContext) {
    this.#c = context;
    this.ns = context.key.ns;
    this.name = context.key.name;
    this.slot = new Date(context.key.slot.getTime());
    this.attempt = context.attempt;
    this.lease = context.lease;
  }

  /** Whether `transaction` committed (the slot is then `done`, whatever the job does next). */
  get committed(): boolean {
    return this.#committed;
  }

  async transaction<T>(fn: (manager: EntityManager) => Promise<T>): Promise<T> {
    if (typeof fn !== 'function') throw new ValidationError('fn', `must be a function (got ${typeof fn})`);
    if (this.#used) throw new RunTransactionUsedError(this.name);
    this.#used = true;
    const c = this.#c;
    // A run whose signal aborted (its leadership ended, its schedule was cancelled, its loop
    // stopped) commits nothing, even while the lease is still live in the database: a cancel() or
    // stop() that resolved has nothing of it left to commit.
    c.lease.signal.throwIfAborted();
    const value = await withTransaction(c.dataSource, async (manager) => {
      // Fenced before the job's writes (they wait for no lock a takeover would need), and again by
      // the `done` write, which checks the lease under this term and the row still ours.
      await c.assertLeader(manager);
      const result = await fn(manager);
      if (c.lease.signal.aborted) {
        // Ended while `fn` ran. The database says so when the lease is gone there
        // (`NotLeaderError`, naming the leader); a lease still live but given up here (cancel,
        // stop) ends with the signal's reason. Either way nothing commits.
        await c.assertLeader(manager);
        c.lease.signal.throwIfAborted();
      }
      await c.store.finish(c.key, c.who, 'done', undefined, manager);
      return result;
    });
    this.#committed = true;
    return value;
  }
}
