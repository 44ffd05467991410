import type { DataSource, EntityManager } from 'typeorm';
import { contextOf, DbContext } from '../db/context';
import { getDataSource } from '../db/default-data-source';
import { assertInitialized, withExplainedFailures } from '../db/explain-error';
import { dataSourceOfSession, execute, inOneStatement, inTransaction, runnerOf, Session, withManager } from '../db/session';
import { ValidationError, shown } from '../errors';
import type { SqlFragment } from '../db/sql';
import { assertEntitiesRegistered } from './entities-check';
import { electsLocked } from './paths';
import { LeadingTerms } from './leading-terms';
import { partsOf } from '../databases/parts';
import type { ElectionPrograms } from '../databases/contract/programs';
import { decide, ElectionStore, LeaderRow, storeOf } from './store';
import type { CandidateInfo, ElectOutcome } from './rows';
import { fenceLeader } from './fence';
import type { StepDownReason } from './decision';
import { runAsOperator, type OperatorLease, type OperatorOptions } from './operator';
import { withTransaction } from '../db/transaction';
import { checkGuardTarget, GuardedTable, guardedTables, guardTable, GuardTableOptions, unguardTable, UnguardTableOptions } from './guards';
import { runStatementsOf } from '../schedules/statements';
import { checkRunsOptions, type GetRunsOptions } from '../schedules/validate';
import type { ScheduledRunInfo } from '../schedules/runs-store';
import { checkWatchOptions, LeaderWatch, MissedTerm, WatchOptions, WatchSource } from './observe/watch';
import { checkHistoryOptions, createHistoryStatements, GetHistoryOptions, HistoryEntry, HistoryStatements, VacateReason } from './observe/history';
import {
  CallOptions,
  CANDIDATE_OPTION_KEYS,
  CandidateFields,
  CandidateMetadata,
  CandidateOptions,
  checkCallOptions,
  checkCandidateFields,
  checkCandidateId,
  checkExpireSeconds,
  checkOptions,
  checkTerm,
  DEFAULT_EXPIRE_SECONDS,
} from './validate';
import { isDataSource } from '../db/shape';

export type { CandidateInfo } from './rows';

/** The current lease of a namespace. */
export interface LeaderInfo {
  /** The namespace. */
  ns: string;
  /** The candidate that holds the unexpired lease. */
  leaderId: string;
  /** Fencing token of this leadership. */
  term: number;
  /** When the lease runs out unless renewed (database clock). */
  leaseExpiresAt: Date;
  /**
   * Database clock at the last write of the leader row: a grant, renewal or vacancy, and on
   * MySQL/MariaDB also a fenced transaction's `assertLeader` (as read before that call's own write).
   */
  updatedAt: Date;
  /** The leader's candidate metadata; null when it gave none (or its candidate row is gone). */
  metadata: CandidateMetadata | null;
}

/** `registerCandidate`, `heartbeat` and `elect` options: where, plus what the candidate says about itself. */
export interface CandidateCallOptions extends CallOptions, CandidateOptions {}

/** The options of an {@link ElectionService}. */
export interface ElectionServiceOptions {
  /** Lease and candidate expiry in seconds. Default {@link DEFAULT_EXPIRE_SECONDS} (60). */
  readonly expireSeconds?: number;
  /**
   * SQLite: how long a call without `session` waits for a transaction someone else holds open on
   * the shared connection before it throws `SqliteTransactionOpenError`. Default
   * `DEFAULT_SQLITE_WAIT_MS` (5000).
   */
  readonly sqliteWaitMs?: number;
}


const histories = new WeakMap<DbContext, HistoryStatements>();
function historyOf(context: DbContext): HistoryStatements {
  let history = histories.get(context);
  if (!history) histories.set(context, (history = createHistoryStatements(context)));
  return history;
}

/**
 * @internal What a watch of `ns` reads, each statement sent by `readRows` (outside any
 * transaction): the leader row with the database clock, and the history rows of the terms it
 * missed, with the leader's metadata. `ElectionService.watch` reads with the service's own paths;
 * the dashboard with reads it can cancel at the database.
 */
export function leaderWatchSource(
  dataSource: DataSource,
  ns: string,
  readRows: (statement: SqlFragment) => Promise<Record<string, unknown>[]>,
): WatchSource {
  const context = contextOf(dataSource);
  const store = storeOf(context);
  const history = historyOf(context);
  return {
    dataSource,
    observe: async () => store.parseObserved((await readRows(store.observeStatement(ns)))[0]),
    missed: async (from, to): Promise<MissedTerm[]> =>
      (await readRows(history.selectRange(ns, from, to))).map((row) => ({ ...history.toEntry(row), metadata: history.metadataOf(row) })),
  };
}

function toInfo(row: LeaderRow): LeaderInfo {
  return {
    ns: row.ns,
    leaderId: row.leaderId as string,
    term: row.term,
    leaseExpiresAt: row.leaseExpiresAt as Date,
    updatedAt: row.updatedAt,
    metadata: row.metadata,
  };
}

/**
 * PostgreSQL: how many times `elect` runs its one statement when the leader row changed hands
 * while the statement waited for its lock (see `store.electInOneStatement`) before it takes the
 * locked path.
 */
const ONE_STATEMENT_ATTEMPTS = 3;

/** One `elect` call's checked arguments and what its path depends on, as the paths below take them. */
interface ElectCall {
  readonly dataSource: DataSource;
  readonly session: Session | undefined;
  readonly store: ElectionStore;
  readonly ns: string;
  readonly id: string;
  readonly expire: number;
  readonly fields: CandidateFields;
  /** The call runs in the caller's transaction. */
  readonly joined: boolean;
  /** The test hook of `paths.ts`: the locked path only. */
  readonly locked: boolean;
}

/** A follower's outcome: the lease of `row` is unexpired and held by someone else. */
function followerOutcome(ns: string, row: LeaderRow, wasRegistered: boolean): ElectOutcome {
  return { ns, leaderId: row.leaderId, term: row.term, isLeader: false, acquired: false, handOver: false, wasRegistered, databaseNow: row.now };
}

/**
 * Leader election on one DataSource: candidates register and heartbeat, `elect` acquires or
 * renews a per-namespace lease under a row lock, and `assertLeader` fences leader-only writes.
 *
 * Every method takes `{ ns, session }`: with a session inside an active transaction the call
 * joins it (and never commits, rolls back or releases it). Bad arguments throw
 * {@link ValidationError} before any statement runs.
 */
export class ElectionService {
  readonly #dataSource: DataSource | undefined;
  #expireSeconds: number;
  readonly #sqliteWaitMs: number | undefined;
  readonly #programs = new WeakMap<DataSource, ElectionPrograms>();
  readonly #terms = new WeakMap<DataSource, LeadingTerms>();

  /**
   * @param dataSource The DataSource to use. Default: `getDataSource()`, looked up at each call
   *   (so a service can be created before `initDb`).
   */
  constructor(dataSource?: DataSource, options?: ElectionServiceOptions) {
    if (dataSource !== undefined && !isDataSource(dataSource)) {
      throw new ValidationError('dataSource', 'must be a TypeORM DataSource (or omitted for the default from initDb)');
    }
    const checked = checkOptions(options, ['expireSeconds', 'sqliteWaitMs']);
    const wait = checked.sqliteWaitMs;
    if (wait !== undefined && (typeof wait !== 'number' || !Number.isFinite(wait) || wait < 0)) {
      throw new ValidationError('options.sqliteWaitMs', `must be a finite number of milliseconds >= 0 (got ${shown(wait)})`);
    }
    this.#sqliteWaitMs = wait;
    this.#dataSource = dataSource;
    this.#expireSeconds =
      checked.expireSeconds === undefined ? DEFAULT_EXPIRE_SECONDS : checkExpireSeconds(checked.expireSeconds, 'options.expireSeconds');
  }

  /** Lease and candidate expiry in seconds. Default 60. */
  get expireSeconds(): number {
    return this.#expireSeconds;
  }

  /** Sets the lease and candidate expiry for later calls (finite, > 0, ≤ one year). */
  setExpire(seconds: number): void {
    this.#expireSeconds = checkExpireSeconds(seconds, 'seconds');
  }

  /** The DataSource a call runs on: the session's, which must match an explicit one. */
  #resolve(session: Session | undefined): DataSource {
    runnerOf(session); // validates the session before anything else
    if (session === undefined) {
      const dataSource = this.#dataSource ?? getDataSource();
      assertInitialized(dataSource);
      assertEntitiesRegistered(dataSource);
      return dataSource;
    }
    const own = dataSourceOfSession(session);
    if (this.#dataSource && own !== this.#dataSource) {
      throw new ValidationError('options.session', "belongs to a different DataSource than this ElectionService's");
    }
    assertEntitiesRegistered(own);
    return own;
  }

  /**
   * The programs of a database that runs calls as programs (SQLite, see its `programs` part), when
   * there is no transaction of the caller's to join: the call runs as one program on the shared
   * connection, never nested in another transaction nor hosting one. Undefined otherwise: the
   * call takes the general path.
   */
  #programsFor(dataSource: DataSource, session: Session | undefined): ElectionPrograms | undefined {
    const context = contextOf(dataSource);
    const part = partsOf(context).programs;
    if (!part || runnerOf(session)?.isTransactionActive) return undefined;
    let programs = this.#programs.get(dataSource);
    if (!programs) {
      programs = withExplainedFailures(dataSource, part.create(context, dataSource, () => this.#sqliteWaitMs, storeOf(context).shared));
      this.#programs.set(dataSource, programs);
    }
    return programs;
  }

  #write<T>(session: Session | undefined, work: (m: EntityManager, store: ElectionStore) => Promise<T>): Promise<T> {
    return inTransaction(this.#resolve(session), session, (m, context) => work(m, storeOf(context)));
  }

  #read<T>(session: Session | undefined, work: (m: EntityManager, store: ElectionStore) => Promise<T>): Promise<T> {
    return withManager(this.#resolve(session), session, (m, context) => work(m, storeOf(context)));
  }

  /** The checked arguments of a call that heartbeats (register, elect): the id, where, the candidate's options, the lease length. */
  #candidateCall(candidateId: string, options: CandidateCallOptions | undefined) {
    const id = checkCandidateId(candidateId);
    const checked = checkCallOptions(options, CANDIDATE_OPTION_KEYS);
    return { id, ns: checked.ns, session: checked.session, fields: checkCandidateFields(checked), expire: this.#expireSeconds };
  }

  /**
   * Creates the candidate row if missing; sets `last_heartbeat_at = now`, `expires_at = now +
   * expireSeconds`, and stores the `metadata`, `priority` and `eligible` given (omitted ones keep
   * their stored values; a new row gets none, 0 and true).
   */
  async registerCandidate(candidateId: string, options?: CandidateCallOptions): Promise<void> {
    const { id, ns, session, fields, expire } = this.#candidateCall(candidateId, options);
    const programs = this.#programsFor(this.#resolve(session), session);
    if (programs) return programs.touch(ns, id, expire, fields);
    await this.#write(session, (m, store) => store.touchCandidate(m, ns, id, expire, fields));
  }

  /** Alias of {@link registerCandidate}. */
  heartbeat(candidateId: string, options?: CandidateCallOptions): Promise<void> {
    return this.registerCandidate(candidateId, options);
  }

  /**
   * Acquires or renews the lease and heartbeats the caller (storing the candidate options given,
   * as {@link registerCandidate} does); returns the leader's UUID after the call. Never preempts
   * an unexpired lease held by another candidate. A vacant or expired lease is taken only by an
   * eligible caller that no live eligible candidate outranks (strictly higher `priority`); so the
   * result is null when nobody holds the lease after the call.
   */
  async elect(candidateId: string, options?: CandidateCallOptions): Promise<string | null> {
    return (await this.electOutcome(candidateId, options)).leaderId;
  }

  /** {@link elect}, with the term and whether the caller leads (what a worker loop needs). */
  async electOutcome(candidateId: string, options?: CandidateCallOptions): Promise<ElectOutcome> {
    const { id, ns, session, fields, expire } = this.#candidateCall(candidateId, options);
    const dataSource = this.#resolve(session);
    // A test hook (see `paths.ts`): the locked path only, whatever fast path would apply.
    const locked = electsLocked(this);
    const programs = locked ? undefined : this.#programsFor(dataSource, session);
    if (programs) return programs.elect(ns, id, expire, fields);
    const store = storeOf(contextOf(dataSource));
    const joined = runnerOf(session)?.isTransactionActive === true;
    const call: ElectCall = { dataSource, session, store, ns, id, expire, fields, joined, locked };
    const { renewInOneStatement } = store;
    if (!renewInOneStatement) return this.#electDecided(call);
    // MariaDB and PostgreSQL: a leader renews in one statement of its own, under the term it last
    // led under (the statement checks it, see their `renew.ts`), outside a caller's transaction;
    // anything that statement does not renew (it wrote nothing) is decided as any call is.
    const leading = this.#leadingTerms(dataSource);
    const began = performance.now();
    const term = joined || locked ? undefined : leading.renewable(ns, id, expire, began);
    const renewed = term === undefined ? undefined : await withManager(dataSource, session, (m) => renewInOneStatement(m, ns, id, term, expire, fields));
    const outcome = renewed ? { ns, ...renewed } : await this.#electDecided(call);
    leading.observe(outcome, began);
    return outcome;
  }

  /**
   * `elect` decided whole: PostgreSQL's one statement for an existing namespace, else (and when
   * that statement keeps finding the row changed hands) in a transaction.
   */
  async #electDecided(call: ElectCall): Promise<ElectOutcome> {
    const { dataSource, session, store, ns, id, expire, fields, joined, locked } = call;
    const { electInOneStatement } = store;
    if (electInOneStatement && !locked) {
      // PostgreSQL, existing namespace: one round trip, and the leader row is locked for one
      // statement's execution instead of four round trips (what queues concurrent candidates);
      // outside a caller's transaction, a follower does not lock it at all.
      // A row that changed hands while the statement waited for its lock is decided by a new
      // statement (a new snapshot; in the caller's transaction the lock is already held, so the
      // second one sees it as it is), a few times at most, then by the locked path.
      for (let attempt = 0; attempt < ONE_STATEMENT_ATTEMPTS; attempt++) {
        const decision = await inOneStatement(dataSource, session, (m) => electInOneStatement(m, ns, id, expire, fields, !joined));
        if (decision === undefined) break;
        if (decision !== 'stale') return { ns, ...decision };
      }
    }
    return this.#electInTransaction(call);
  }

  /** The terms this process last saw each namespace led under (what a one-statement renewal checks). */
  #leadingTerms(dataSource: DataSource): LeadingTerms {
    let terms = this.#terms.get(dataSource);
    if (!terms) this.#terms.set(dataSource, (terms = new LeadingTerms()));
    return terms;
  }

  /** `elect` in a transaction: the MySQL follower's read first where it applies, else the locked path. */
  #electInTransaction(call: ElectCall): Promise<ElectOutcome> {
    const { dataSource, session, store, ns, id, expire, fields, joined, locked } = call;
    return inTransaction(dataSource, session, async (m) => {
      // MySQL follower fast path (see `store.followerReadsFirst`): only in a transaction of our
      // own, whose first consistent read is current; a caller's may hold an older snapshot.
      if (store.followerReadsFirst && !joined && !locked) {
        const seen = await store.readLeaderFor(m, ns, id);
        if (seen?.row.live && seen.row.leaderId !== id) {
          const inserted = await store.touchCandidate(m, ns, id, expire, fields);
          return followerOutcome(ns, seen.row, inserted === undefined ? seen.registered : !inserted);
        }
        return this.#electLocked(m, dataSource, store, ns, id, expire, fields, seen !== undefined);
      }
      return this.#electLocked(m, dataSource, store, ns, id, expire, fields, false);
    });
  }

  /**
   * The general path, inside a transaction: lock the leader row (creating it first where needed),
   * decide by {@link decide}, write, heartbeat. `rowExists`: the leader row was just seen.
   */
  async #electLocked(
    m: EntityManager,
    dataSource: DataSource,
    store: ElectionStore,
    ns: string,
    id: string,
    expire: number,
    fields: CandidateFields,
    rowExists: boolean,
  ): Promise<ElectOutcome> {
    // MySQL: a locking read of a missing row takes gap locks that deadlock a later insert;
    // SQLite: the first write takes the database lock. Both create the row first, unless it
    // was just seen (a locking read of an existing row takes no gap lock).
    const insertFirst = store.insertsLeaderRowFirst && !rowExists;
    if (insertFirst) await store.ensureLeaderRow(m, ns);
    let locked = await store.lockLeaderFor(m, ns, 'write', insertFirst, id);
    if (!locked) {
      await store.ensureLeaderRow(m, ns);
      locked = await store.lockLeaderFor(m, ns, 'write', true, id);
    }
    if (!locked) throw new Error(`gemstone-utils: leader row of ${JSON.stringify(ns)} vanished inside its transaction`);

    const { row, standing } = locked;
    let live = row.live;
    let databaseNow = row.now;
    let { renewing, takes, handOver } = decide(row, id, standing, fields);
    // A renewal is decided again when it is written, by the database clock of that statement:
    // a lease that ran out since the locked read is taken over (term + 1, its history closed
    // `expired`), never silently extended under the old term.
    if (renewing && !(await store.renewIfLive(m, ns, id, row.term, expire))) {
      live = false;
      ({ renewing, takes, handOver } = decide({ leaderId: row.leaderId, live }, id, standing, fields));
      // The answer now holds from that write on, not at the read (the lease was live then): the
      // clock it reports is read again, under the lock this transaction still holds, so nothing
      // changed since the write. (Statements with a clock of their own, MySQL/MariaDB: a read
      // just before the lease's end and the write just after it. Found by the chaos checker.)
      const reread = await store.lockLeaderFor(m, ns, 'write', true, id);
      if (reread) databaseNow = reread.row.now;
    }
    const wasRegistered = standing.registered;
    let outcome: ElectOutcome;
    if (!takes) {
      const leaderId = live ? row.leaderId : null;
      outcome = { ns, leaderId, term: row.term, isLeader: false, acquired: false, handOver: false, wasRegistered, databaseNow };
    } else if (renewing) {
      outcome = { ns, leaderId: id, term: row.term, isLeader: true, acquired: false, handOver, wasRegistered, databaseNow };
    } else {
      const term = row.term + 1;
      // A takeover closes the lapsed term (at its lease's end, read before the row changes)
      // and opens the new one, in this transaction; a renewal writes no history.
      const history = historyOf(contextOf(dataSource));
      if (row.leaderId !== null) await history.run(m, history.closeTerm(ns, 'expired', true));
      await store.setLeader(m, ns, id, term, expire);
      await history.run(m, history.openTerm(ns));
      await store.announce(m, { ns, leaderId: id, term });
      outcome = { ns, leaderId: id, term, isLeader: true, acquired: true, handOver, wasRegistered, databaseNow };
    }
    // Lock order: leader row first, then the candidate row.
    const inserted = await store.touchCandidate(m, ns, id, expire, fields);
    return inserted === undefined ? outcome : { ...outcome, wasRegistered: !inserted };
  }

  /** True only when the caller is `leader_id` and the lease is unexpired (database clock). */
  async isLeader(candidateId: string, options?: CallOptions): Promise<boolean> {
    const id = checkCandidateId(candidateId);
    const { ns, session } = checkCallOptions(options);
    const programs = this.#programsFor(this.#resolve(session), session);
    if (programs) return programs.isLeader(ns, id);
    return this.#read(session, (m, store) => store.isLeader(m, ns, id));
  }

  /** Active candidates (`expires_at > now`), sorted ascending. */
  async listCandidates(options?: CallOptions): Promise<string[]> {
    const { ns, session } = checkCallOptions(options);
    const programs = this.#programsFor(this.#resolve(session), session);
    if (programs) return programs.activeCandidates(ns);
    return this.#read(session, (m, store) => store.activeCandidates(m, ns));
  }

  /**
   * The active candidates (`expires_at > now`) with their heartbeat, expiry, priority,
   * eligibility and metadata, sorted by `candidateId`.
   */
  async getCandidates(options?: CallOptions): Promise<CandidateInfo[]> {
    const { ns, session } = checkCallOptions(options);
    const programs = this.#programsFor(this.#resolve(session), session);
    if (programs) return programs.candidateRows(ns);
    return this.#read(session, (m, store) => store.candidateRows(m, ns));
  }

  /** Deletes the candidate row; if it was the leader, vacates the lease (faster failover). */
  async unregisterCandidate(candidateId: string, options?: CallOptions): Promise<void> {
    const id = checkCandidateId(candidateId);
    const { ns, session } = checkCallOptions(options);
    const programs = this.#programsFor(this.#resolve(session), session);
    if (programs) return programs.unregister(ns, id);
    await this.#write(session, async (m, store) => {
      await this.#vacateIfHeld(m, store, ns, id, 'unregistered');
      await store.deleteCandidate(m, ns, id);
    });
  }

  /** The unexpired lease of the namespace, or null when vacant or expired. */
  async getLeader(options?: CallOptions): Promise<LeaderInfo | null> {
    const { ns, session } = checkCallOptions(options);
    const programs = this.#programsFor(this.#resolve(session), session);
    const row = programs ? await programs.readLeader(ns) : await this.#read(session, (m, store) => store.readLeader(m, ns));
    return row?.live ? toInfo(row) : null;
  }

  /** resign and handOver: the same step down, recorded in the history with `reason`. */
  async #stepDown(candidateId: string, options: CallOptions | undefined, reason: StepDownReason): Promise<boolean> {
    const id = checkCandidateId(candidateId);
    const { ns, session } = checkCallOptions(options);
    const programs = this.#programsFor(this.#resolve(session), session);
    if (programs) return programs.resign(ns, id, reason);
    return this.#write(session, (m, store) => this.#vacateIfHeld(m, store, ns, id, reason));
  }

  /**
   * Steps down but stays a candidate. True only if the caller held an unexpired lease; a row
   * still naming the caller with an expired lease is vacated too, and false returned.
   */
  async resign(candidateId: string, options?: CallOptions): Promise<boolean> {
    return this.#stepDown(candidateId, options, 'resigned');
  }

  /**
   * {@link resign} for a preferred candidate: the same step down, recorded in the history as
   * `handed-over` instead of `resigned` (what a `LeaderElector` does when a live eligible
   * candidate of higher priority appears).
   */
  async handOver(candidateId: string, options?: CallOptions): Promise<boolean> {
    return this.#stepDown(candidateId, options, 'handed-over');
  }

  /** Vacates the lease if `id` is named by the leader row; its term ends with `reason` (or `expired` if it had lapsed). */
  async #vacateIfHeld(m: EntityManager, store: ElectionStore, ns: string, id: string, reason: VacateReason): Promise<boolean> {
    // Whatever this decides (or a caller's rollback undoes), the next elect of `ns` takes the lock.
    this.#terms.get(m.connection)?.forget(ns);
    const row = await store.lockLeader(m, ns, 'write');
    if (row?.leaderId !== id) return false;
    const history = historyOf(contextOf(m.connection));
    await history.run(m, history.closeTerm(ns, reason, !row.live));
    await store.vacate(m, ns);
    await store.announce(m, { ns, leaderId: null, term: row.term });
    return row.live;
  }

  /**
   * Watches the namespace's leadership: an async iterable that yields the current state, then
   * every change (`{ ns, leaderId, term, metadata, at }`; `leaderId` null when vacant or
   * expired), in term order, never the same state twice. PostgreSQL delivers changes by
   * LISTEN/NOTIFY with a poll every `pollMs` (default 1000) as safety net; elsewhere the poll
   * alone. Ends without an error when `signal` aborts or the loop breaks. See {@link LeaderWatch}.
   * Throws {@link ValidationError} for bad options before anything runs.
   */
  watch(options?: WatchOptions): LeaderWatch {
    const checked = checkWatchOptions(options);
    const dataSource = this.#resolve(undefined);
    const programs = this.#programsFor(dataSource, undefined);
    const context = contextOf(dataSource);
    const readRows = (statement: SqlFragment) =>
      programs ? programs.readRows(statement) : withManager(dataSource, undefined, (m) => execute(context, m, statement));
    return new LeaderWatch(leaderWatchSource(dataSource, checked.ns, readRows), checked);
  }

  /**
   * The terms of the namespace, newest first, from the history table: `{ ns, term, leaderId,
   * acquiredAt, endedAt, endReason }` (`endedAt`/`endReason` null while current). At most
   * `limit` (default 100), only terms below `before` if given (to page backwards).
   */
  async getHistory(options?: GetHistoryOptions & { session?: Session }): Promise<HistoryEntry[]> {
    const query = checkHistoryOptions(options, ['session']);
    const session = query.session as Session | undefined;
    const dataSource = this.#resolve(session);
    const history = historyOf(contextOf(dataSource));
    const statement = history.select(query);
    const programs = this.#programsFor(dataSource, session);
    if (programs) return (await programs.readRows(statement)).map(history.toEntry);
    return withManager(dataSource, session, (m) => history.read(m, statement));
  }

  /**
   * The runs of schedules, newest slot first (then by namespace and name): `{ ns, name, slot,
   * state, attempt, term, candidateId, startedAt, finishedAt, error }`. Every namespace and
   * schedule unless `ns` / `name` narrow it; at most `limit` (default 100, 1 to 1000); only slots
   * strictly before `before` if given (to page backwards: pass the oldest slot you got; runs of
   * other schedules with that very slot are then on neither page's far side, so page by schedule
   * when slots coincide). Throws {@link ValidationError} naming the option for bad options.
   */
  async getRuns(options?: GetRunsOptions & { session?: Session }): Promise<ScheduledRunInfo[]> {
    const query = checkRunsOptions(options, ['session']);
    const session = query.session as Session | undefined;
    const dataSource = this.#resolve(session);
    assertEntitiesRegistered(dataSource, 'runs');
    const runs = runStatementsOf(contextOf(dataSource));
    const statement = runs.selectRuns(query);
    const programs = this.#programsFor(dataSource, session);
    const rows = programs
      ? await programs.readRows(statement)
      : await withManager(dataSource, session, (m, context) => execute(context, m, statement));
    // In the database's order: the next page starts where this one ends.
    return rows.map(runs.toInfo);
  }

  /**
   * The fencing check for leader-only writes. Must run inside the caller's transaction: it locks
   * the leader row against a change of leadership until that transaction ends, and throws
   * {@link NotLeaderError} unless the caller holds the unexpired lease (under `term`, if given).
   * Writes made after it in the same transaction can only commit while the caller leads.
   *
   * On MySQL/MariaDB it also writes the leader row (`updated_at`), which is what fences across
   * MariaDB Galera nodes: a takeover on another node then makes this transaction fail with a
   * deadlock error (`SerializationFailureError` here, or from your COMMIT as the driver's error):
   * roll back and run the transaction again. Concurrent fenced transactions of one leader wait
   * for each other on the row (they already did: the lock is exclusive there).
   */
  async assertLeader(candidateId: string, options: CallOptions & { term?: number }): Promise<LeaderInfo> {
    const id = checkCandidateId(candidateId);
    const checked = checkCallOptions(options, ['term']);
    const term = checkTerm(checked.term);
    const { ns, session } = checked;
    if (!runnerOf(session)?.isTransactionActive) {
      throw new ValidationError(
        'options.session',
        'must be a QueryRunner or EntityManager inside an active transaction: assertLeader fences the writes of that transaction',
      );
    }
    return this.#write(session, async (m, store) => toInfo(await fenceLeader(m, store, ns, id, term)));
  }

  /**
   * Makes the database itself refuse INSERT, UPDATE, DELETE and TRUNCATE on `table` (from this
   * application, another program or a console alike) unless the writing transaction proved, in
   * that same transaction, the live leadership of `options.ns`: by {@link assertLeader} with its
   * `session`, or inside `ScheduledRun.transaction`. The trigger checks the proof against the
   * leader row when the write happens (the term and holder the proof names, the lease unexpired
   * by the database clock) and takes the fence's lock. A refused write fails with the database's
   * error naming the table and the namespace; through `withTransaction` and
   * `ScheduledRun.transaction` it rejects as {@link NotLeaderError}. Idempotent: guarding again
   * replaces the guard (for another namespace too). PostgreSQL, MySQL/MariaDB and SQLite.
   * Nothing is changed when the table does not exist (a ValidationError naming it). DDL: on
   * PostgreSQL one trigger function per installation (next to the leader table) and one
   * statement trigger on the table (the role needs the table's TRIGGER privilege and CREATE on
   * that schema); on MySQL/MariaDB three row triggers (INSERT, UPDATE, DELETE: MySQL has no
   * TRUNCATE trigger, see docs/fencing.md) in the connection's database (the TRIGGER
   * privilege); on SQLite three row triggers and, once per installation, the proof table
   * `gemstone_election_proof` (a proving transaction's rows, never committed).
   */
  async guardTable(table: string, options?: GuardTableOptions): Promise<void> {
    const dataSource = this.#resolve(sessionIn(options));
    const { target, ns, session } = checkGuardTarget(contextOf(dataSource), table, options, []);
    await guardTable(dataSource, session, target, ns);
  }

  /** Removes the guard of `table` (one call: writes are no longer checked); whether it had one. */
  async unguardTable(table: string, options?: UnguardTableOptions): Promise<boolean> {
    checkOptions(options, ['schema', 'session']);
    const dataSource = this.#resolve(sessionIn(options));
    const { target, session } = checkGuardTarget(contextOf(dataSource), table, options, []);
    return unguardTable(dataSource, session, target);
  }

  /**
   * Writes to leader-only tables as an operator (a bulk load, a repair), through the guards and
   * recorded in the history: registers a candidate of its own (a fresh UUID, the highest
   * priority, `metadata` `{ operator, reason, host, pid }`), so that the leader hands over at its
   * next tick as it does to any preferred candidate (nobody is preempted before that: a leader
   * works on until its tick); once it leads, runs `work` in one transaction that first proves the
   * lease (`assertLeader` under the term it was granted: a guarded table accepts the writes, and
   * a takeover waits for the commit), then ends the term with the end reason `operator` in the
   * history and unregisters: the loops' candidates take the lease back at their next tick.
   *
   * Waits at most `waitMs` (default three leases) for the lease: a leader of the highest priority
   * never hands over, nor does a caller of `elect` without a loop; then it rejects with
   * {@link NotLeaderError} naming the holder, and nothing was written. `work` runs inside the
   * lease: it must commit within `expireSeconds` (the lease is not renewed while it runs, and a
   * guarded table refuses a write after the lease ran out): split a long load into several calls.
   * Like `withTransaction`, `work` may run more than once on a serialization conflict.
   */
  async runAsOperator<T>(options: OperatorOptions, work: (manager: EntityManager, lease: OperatorLease) => Promise<T>): Promise<T> {
    const dataSource = this.#resolve(undefined);
    return runAsOperator(
      {
        expireSeconds: this.#expireSeconds,
        electOutcome: (id, ask) => this.electOutcome(id, ask),
        provenTransaction: (id, ns, term, fn) =>
          withTransaction(dataSource, async (manager) => {
            await this.assertLeader(id, { ns, term, session: manager });
            return fn(manager);
          }),
        endTerm: (id, ns) => this.#stepDown(id, { ns }, 'operator'),
        unregisterCandidate: (id, o) => this.unregisterCandidate(id, o),
      },
      options,
      work,
    );
  }

  /** Every table this installation guards, with its schema (PostgreSQL; null on MySQL/MariaDB and SQLite) and namespace. */
  async guardedTables(options?: { session?: Session }): Promise<GuardedTable[]> {
    const checked = checkOptions(options, ['session']);
    const session = checked.session as Session | undefined;
    return guardedTables(this.#resolve(session), session);
  }
}

/** The `session` of an options object, before the options are checked (they are, after the DataSource is known). */
function sessionIn(options: unknown): Session | undefined {
  return typeof options === 'object' && options !== null && 'session' in options ? ((options as { session?: Session }).session) : undefined;
}
