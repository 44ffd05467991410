import type { QueryRunner } from 'typeorm';
import type { DbContext } from '../../db/context';
import type { SqlFragment } from '../../db/sql';

/** Sends one read-only statement of a cancellable read and answers its rows. */
export type ReadStatement = (statement: SqlFragment) => Promise<Record<string, unknown>[]>;

/**
 * Reads that can be stopped at the server (`db/bounded-read.ts` asks it, see
 * `DatabaseParts.cancellableReads`): a read runs on one connection whose server-side id is
 * known, every statement bounded by a timeout the server enforces where the database has one,
 * and another connection can cancel the statement it runs. Absent where a read cannot wait
 * without a bound in the first place (SQLite: a read waits at most the library's wait for the
 * shared connection and the busy timeout; see the shared code for what it does there).
 */
export interface CancellableReads {
  /**
   * Runs `work` — reads only — on `runner` (connected by the caller, who releases it), every
   * statement it sends bounded at the server by `timeoutMs` where the database can. Before the
   * first statement of `work` is sent, `onSession` gets the server's id of the session the
   * statements run on: what {@link CancellableReads.cancel} takes.
   */
  run<T>(context: DbContext, runner: QueryRunner, timeoutMs: number, onSession: (id: number) => void, work: (send: ReadStatement) => Promise<T>): Promise<T>;
  /**
   * Cancels the statement session `id` runs now, from another (pooled) connection; a session
   * that runs nothing is left as it is. Resolves once the server has passed the cancel on.
   */
  cancel(context: DbContext, id: number): Promise<void>;
  /** Whether `error` ended a statement of `run` because of `cancel` or of the server-side bound. */
  isCancelled(error: unknown): boolean;
}
