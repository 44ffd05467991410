import type { EntityManager } from 'typeorm';
import type { DbContext } from '../../db/context';
import type { Bound, RawSql, SqlFragment } from '../../db/sql';
import type { LeaseChange } from '../../election/observe/listen-options';
import type { CandidateRow, ElectDecision, LeaderRow } from '../../election/rows';
import type { BoundCandidateFields, CandidateFields } from '../../election/validate';

/*
 * The contract of the single-namespace election (`election/store.ts`) with each database: the
 * store keeps the statements that are the same on all three and hands them over as a
 * {@link SharedStore}; each database's folder answers with its {@link ElectMembers}, the members
 * it does differently (its locking read, its renewal, how a write tells what it did, its fast
 * paths and flags).
 */

/** The tables, statements and readers of the election that are the same on every database. */
export interface SharedStore {
  readonly context: DbContext;
  /** The candidate, leader and history tables, escaped and qualified. */
  readonly candidates: RawSql;
  readonly leaders: RawSql;
  readonly history: RawSql;
  /** The columns of a leader row as {@link SharedStore.toRow} reads them, from the table aliased `alias`. */
  selectLeader(alias: string): string;
  /** The leader row of `ns` with the `standing` columns (or nothing), read with `lock` appended (a locking clause or nothing). */
  selectLeaderRow(ns: string, standing: RawSql | SqlFragment, lock: RawSql): SqlFragment;
  /** A leader row as {@link SharedStore.selectLeader} selected it. */
  toRow(raw: Record<string, unknown>): LeaderRow;
  /** The columns and values of the candidate options a call gave (omitted ones keep what is stored). */
  fieldColumns(fields: BoundCandidateFields): { names: string[]; values: unknown[] };
  /** The candidate upsert: heartbeat columns always, the given options too. */
  candidateUpsert(ns: Bound<string>, candidateId: Bound<string>, expireSeconds: number, fields: BoundCandidateFields): SqlFragment;
  /** The active candidates of `ns` with everything they said about themselves. */
  candidateRowsStatement(ns: string): SqlFragment;
  /** Reads what {@link SharedStore.candidateRowsStatement} selected, sorted by id. */
  toCandidateRows(rows: Record<string, unknown>[]): CandidateRow[];
  /** A boolean option as a statement parameter (null when not given). */
  bool(value: boolean | undefined): boolean | number | null;
}

/**
 * PostgreSQL's whole `elect` of an existing namespace in one statement (see its folder's
 * `elect.ts`). `followerReads`: the statement runs outside any transaction of the caller's (its
 * snapshot is its own), so a follower may be answered from that snapshot without locking the
 * leader row.
 */
export type ElectInOneStatement = (
  m: EntityManager,
  ns: string,
  candidateId: string,
  expireSeconds: number,
  fields?: CandidateFields,
  followerReads?: boolean,
) => Promise<ElectDecision | 'stale' | undefined>;

/**
 * A leader's renewal of its own lease in ONE autocommit statement, where the database has one
 * (MariaDB: see its folder's `elect.ts`). `term` is the term the caller last led under. Returns the
 * decision when the statement renewed (branch R, never H: it renews only when the reference would
 * renew without telling the caller to hand over); undefined when it wrote nothing, whatever the
 * reason, and the caller then decides by the locked path.
 */
export type RenewInOneStatement = (
  m: EntityManager,
  ns: string,
  candidateId: string,
  term: number,
  expireSeconds: number,
  fields?: CandidateFields,
) => Promise<ElectDecision | undefined>;

/** What one database does differently in the single-namespace election. */
export interface ElectMembers {
  /** Whether `elect` creates the leader row before locking it (else: it locks first, and inserts only for a new namespace). */
  readonly insertsLeaderRowFirst: boolean;
  /** Whether `elect` first reads the leader row without a lock and, for a follower, stops there. */
  readonly followerReadsFirst: boolean;
  /**
   * Runs the candidate upsert `upsert`; whether it created the row, as the write itself tells
   * (undefined where an earlier read in the transaction stays current).
   */
  touchCandidate(m: EntityManager, upsert: SqlFragment): Promise<boolean | undefined>;
  /**
   * Reads the leader row of `ns` (with the `standing` columns) under the lock `mode` asks for,
   * held until the transaction ends, judged by the clock of after the lock. `writeLockHeld`: the
   * transaction already holds the row's exclusive lock. The raw row, or undefined without one.
   */
  lockLeader(
    m: EntityManager,
    ns: string,
    mode: 'write' | 'read',
    writeLockHeld: boolean,
    standing: RawSql | SqlFragment,
  ): Promise<Record<string, unknown> | undefined>;
  /**
   * Extends the lease of the row `where` selects (the caller's, unexpired by this statement's
   * clock) to now + expireSeconds; whether it matched, as the statement itself counts it.
   */
  renewIfLive(m: EntityManager, where: SqlFragment, expireSeconds: number): Promise<boolean>;
  /**
   * Where `assertLeader` writes the leader row after its check (the database's reason is in its
   * folder): touches the row so the fenced transaction's write set contains it. Absent elsewhere.
   */
  touchLeader?(m: EntityManager, ns: string): Promise<void>;
  /** The lease end in whole microseconds as stored, where the database stores it so (null when vacant); absent elsewhere. */
  leaseMicros?(stored: unknown): number | null;
  /** The whole `elect` of an existing namespace in one statement, where the database has one. */
  readonly electInOneStatement?: ElectInOneStatement;
  /** A leader's renewal in one autocommit statement, where the database has one. */
  readonly renewInOneStatement?: RenewInOneStatement;
  /** Announces a lease change to listeners (delivered when the transaction commits), where the database has them. */
  announce?(m: EntityManager, change: LeaseChange): Promise<void>;
}

/** The `elect` part: the members of one database, made once per DataSource from its shared store. */
export interface ElectParts {
  create(shared: SharedStore): ElectMembers;
}
