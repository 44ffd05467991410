import type { EntityManager } from 'typeorm';
import type { DbContext } from '../../db/context';
import type { SqlFragment } from '../../db/sql';

/** A table as the caller named it: `schema` where the database has schemas (PostgreSQL). */
export interface GuardTarget {
  readonly table: string;
  readonly schema?: string;
}

/**
 * Thrown by a database's guard part when the election's leader table, whose rows a guard checks,
 * does not exist. The session helpers' explainer (`db/explain-error.ts`) makes it the
 * `TablesMissingError` that names the database and says to run `initDb` or the migrations.
 */
export class LeaderTableMissing extends Error {
  constructor(readonly leaderTable: string) {
    super(`the leader table ${leaderTable}, whose rows a guard checks, does not exist`);
  }
}

/** The fence a proof is of: what `assertLeader` was asked. */
export interface FenceProof {
  readonly ns: string;
  readonly candidateId: string;
  /** The term the caller named; undefined: any term it holds. */
  readonly term: number | undefined;
}

/** One guarded table as the database's catalog shows it. */
export interface GuardedTable {
  /** The table's name (as it is now: a renamed table keeps its guard). */
  readonly table: string;
  /** Its schema on PostgreSQL; null where the database has none. */
  readonly schema: string | null;
  /** The namespace whose live leadership a write to it must prove. */
  readonly ns: string;
}

/** What a database's refusal of an unproved write says, read from its error. */
export interface GuardRefusal {
  readonly ns: string;
  readonly table: string;
  /**
   * The leader row's holder and term when the write was refused (null: none, or no row;
   * undefined: the database cannot say, SQLite, whose refusal is a fixed message).
   */
  readonly leaderId: string | null | undefined;
  readonly term: number | null | undefined;
  /** The candidate the transaction's proof named for `ns`, if it proved one (a stale one). */
  readonly provedBy: string | null;
}

/**
 * Guarded tables on one database (see `election/guards.ts`): a trigger on each guarded table that
 * refuses INSERT, UPDATE and DELETE unless the writing transaction proved, in that transaction,
 * the live leadership of the table's namespace — the proof recorded by the fence itself
 * (`election/fence.ts`), in the same statement that takes its lock.
 */
export interface GuardParts {
  /**
   * Columns appended to the fence's locking read of the leader row (alias `alias`, read after its
   * lock): they record, for the rest of the transaction only, that `candidateId` holds the live
   * lease of the row's namespace (under `term` when given), when it does; nothing otherwise.
   */
  proofColumns(alias: string, candidateId: string, term: number | undefined): SqlFragment;
  /**
   * Called after the fence's read with {@link proofColumns}: where the proof outlives the
   * transaction on its own (a MySQL user variable), what makes it end with it; where the read
   * cannot record it (SQLite: the proof is a row), the proof itself. Absent where the database
   * ends it (PostgreSQL's transaction-local setting).
   */
  afterProof?(context: DbContext, m: EntityManager, fence: FenceProof): Promise<void>;
  /**
   * Installs (or replaces) the guard of `target` for `ns`, in `m`'s transaction. A table the
   * connection cannot see is a `ValidationError` (parameter `table`); a missing leader table,
   * {@link LeaderTableMissing}.
   */
  guard(context: DbContext, m: EntityManager, target: GuardTarget, ns: string): Promise<void>;
  /** Removes the guard of `target`; whether there was one. */
  unguard(context: DbContext, m: EntityManager, target: GuardTarget): Promise<boolean>;
  /** Every table this installation guards, by schema and name. */
  list(context: DbContext, m: EntityManager): Promise<GuardedTable[]>;
  /** The refusal a database error is, or undefined when it is another error. */
  refusal(error: unknown): GuardRefusal | undefined;
}
