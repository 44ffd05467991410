import type { EntityManager } from 'typeorm';
import type { ElectInOneStatement, RenewInOneStatement, SharedStore } from '../databases/contract/store';
import type { Bound, SqlFragment } from '../db/sql';
import type { LeaseChange } from './observe/listen-options';
import type { CandidateRow, LeaderRow, ObservedLeader, Standing } from './rows';
import type { BoundCandidateFields, CandidateFields } from './validate';

/**
 * The election's statements, one member each, run on the manager they are given (the
 * transaction is the caller's business: see `db/session.ts`). Every instant comes from the
 * database clock. What is the same on every database is written once (`store.ts`, one
 * statement per function in `statements/`); what a database does differently comes from its folder (`databases/<db>/elect.ts`), behind the
 * members marked "where the database has one".
 */
export interface ElectionStore {
  /** The statements every database shares: what its members and its programs build on. */
  shared: SharedStore;
  /** A leader row as `SharedStore.selectLeader` selects it (`leaderColumns`, statements/leader-row.ts; also read so by the SQLite programs). */
  toRow: (raw: Record<string, unknown>) => LeaderRow;
  /**
   * Whether `elect` creates the leader row before locking it (else it locks first and inserts
   * only for a new namespace); each database says why in its folder.
   */
  insertsLeaderRowFirst: boolean;
  /**
   * Whether `elect` first reads the leader row WITHOUT a lock and, when it shows an unexpired
   * lease held by another candidate, only touches the caller's candidate row (MySQL/MariaDB:
   * followers never queue for the leader row's lock; the reason is in that folder).
   */
  followerReadsFirst: boolean;
  /**
   * register / heartbeat: create the candidate row or extend it, storing the options given.
   * Returns whether the upsert created the row, as the write itself tells (each database's
   * `touchCandidate` says how; undefined where an earlier read stays current): a read before it
   * may have seen a row that another transaction deleted in between.
   */
  touchCandidate(m: EntityManager, ns: string, candidateId: string, expireSeconds: number, fields?: CandidateFields): Promise<boolean | undefined>;
  /** The candidate upsert as a statement, for the SQLite programs. */
  candidateUpsert: (ns: Bound<string>, candidateId: Bound<string>, expireSeconds: number, fields: BoundCandidateFields) => SqlFragment;
  /**
   * Creates a vacant leader row (term 0) unless one exists. It cannot raise a duplicate-key
   * error, so a race for the first row never aborts a caller's transaction. On MySQL it also
   * locks an existing row; on SQLite it takes the database write lock (first write statement).
   */
  ensureLeaderRow(m: EntityManager, ns: string): Promise<void>;
  /**
   * Reads the leader row under a row lock held until the transaction ends: `write` (FOR
   * UPDATE) where leadership may change hands, `read` (FOR SHARE) to fence leader-only work.
   * SQLite has no row locks: a no-op write takes its database write lock instead, unless the
   * transaction already wrote. `writeLockHeld`: this transaction already holds the row's
   * exclusive lock (SQLite: the database's; MySQL: `ensureLeaderRow` locked it).
   */
  lockLeader(m: EntityManager, ns: string, mode: "write" | "read", writeLockHeld?: boolean): Promise<LeaderRow | undefined>;
  /**
   * {@link lockLeader}, plus the {@link Standing} of `candidateId` when given (what `elect`
   * decides by), read in the same statement.
   *
   * `live` is judged by the clock of after the lock: a locking read that waited for the row
   * while its lease ran out must not call that lease live. How each database takes the lock and
   * reads after it is its folder's `lockLeader`.
   */
  lockLeaderFor(m: EntityManager, ns: string, mode: "write" | "read", writeLockHeld: boolean, candidateId: string | undefined): Promise<{
      row: LeaderRow;
      standing: Standing;
  } | undefined>;
  /**
   * {@link lockLeader} in `read` mode for the fence of `candidateId` (under `term` when given):
   * where the database has guarded tables, the same statement records the transaction's proof
   * of that leadership when the locked row shows it (see `databases/contract/guards.ts`).
   */
  lockLeaderToFence(m: EntityManager, ns: string, candidateId: string, term: number | undefined): Promise<LeaderRow | undefined>;
  /**
   * Whether `assertLeader` writes the leader row after its check (MySQL/MariaDB: what fences
   * across Galera nodes; the reason is in that folder's `touchLeader`).
   */
  fencesByWriting: boolean;
  /** Touches the leader row so the transaction's write set contains it (where {@link fencesByWriting}). */
  touchLeader(m: EntityManager, ns: string): Promise<void>;
  /** The leader row without a lock (for reads that change nothing). */
  readLeader(m: EntityManager, ns: string): Promise<LeaderRow | undefined>;
  /**
   * The leader row and the database clock in one statement, for watchers: without a row it
   * still answers the clock. Never locks.
   */
  observeStatement: (ns: string) => SqlFragment;
  /** Reads what {@link observeStatement} selected. */
  parseObserved: (raw: Record<string, unknown> | undefined) => ObservedLeader;
  /**
   * {@link readLeader} plus whether `candidateId` has a candidate row (MySQL follower read), and
   * on MySQL/MariaDB the lease end in whole microseconds as stored (null elsewhere or when vacant).
   */
  readLeaderFor(m: EntityManager, ns: string, candidateId: string): Promise<{
      row: LeaderRow;
      registered: boolean;
      leaseMicros: number | null;
  } | undefined>;
  /**
   * The whole `elect` of an existing namespace in ONE statement, where the database has one
   * (PostgreSQL: see its folder's `elect.ts`); undefined elsewhere. Returns what it decided;
   * undefined when the namespace has no leader row yet, and `'stale'` when the row changed hands
   * after the statement's snapshot was taken (in both cases nothing was written).
   */
  electInOneStatement: ElectInOneStatement | undefined;
  /**
   * A leader's renewal in ONE autocommit statement, where the database has one (MariaDB: see
   * its folder's `elect.ts`); undefined elsewhere. Returns the decision when it renewed, undefined
   * when it wrote nothing (the caller then decides by the locked path).
   */
  renewInOneStatement: RenewInOneStatement | undefined;
  /**
   * The general path's renewal, decided when it is written: extends the lease only if the row
   * still names the caller under `term` with an unexpired lease by the database clock of this
   * statement. False when the lease ran out between the locked read and this write (the row is
   * locked, so nothing else can have changed): the call is then a takeover, not a renewal.
   * The count is read from the statement itself, as each database's `renewIfLive` says.
   */
  renewIfLive(m: EntityManager, ns: string, candidateId: string, term: number, expireSeconds: number): Promise<boolean>;
  /** Gives the lease to `leaderId` under `term` until now + expireSeconds. */
  setLeader(m: EntityManager, ns: string, leaderId: string, term: number, expireSeconds: number): Promise<void>;
  /** Clears leader_id and lease_expires_at (the term stays: the next leader gets term + 1). */
  vacate(m: EntityManager, ns: string): Promise<void>;
  /** Removes the candidate's row (resign, deregister). */
  deleteCandidate(m: EntityManager, ns: string, candidateId: string): Promise<void>;
  /** Whether `candidateId` holds an unexpired lease of `ns` by the database clock. */
  isLeader(m: EntityManager, ns: string, candidateId: string): Promise<boolean>;
  /** The ids of the candidates whose heartbeat has not expired, sorted by id. */
  activeCandidates(m: EntityManager, ns: string): Promise<string[]>;
  /** The active candidates with everything they said about themselves, sorted by id. */
  candidateRows(m: EntityManager, ns: string): Promise<CandidateRow[]>;
  /** {@link candidateRows} as a statement, for the SQLite programs. */
  candidateRowsStatement: (ns: string) => SqlFragment;
  /** Reads what {@link candidateRowsStatement} selected. */
  toCandidateRows: (rows: Record<string, unknown>[]) => CandidateRow[];
  /** Announces a lease change to listeners (PostgreSQL LISTEN/NOTIFY, delivered when the transaction commits); a no-op elsewhere. */
  announce(m: EntityManager, change: LeaseChange): Promise<void>;
}
