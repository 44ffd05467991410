import type { DataSource, EntityManager } from 'typeorm';
import { contextOf, DbContext } from '../db/context';
import { getDataSource } from '../db/default-data-source';
import { dataSourceOfSession, inOneStatement, inTransaction, runnerOf, Session, withManager } from '../db/session';
import { NotLeaderError, ValidationError } from '../errors';
import { createStore, ElectionStore, LeaderRow } from './store';
import {
  CallOptions,
  checkCallOptions,
  checkCandidateId,
  checkExpireSeconds,
  checkOptions,
  checkTerm,
  DEFAULT_EXPIRE_SECONDS,
} from './validate';

/** The current lease of a namespace. */
export interface LeaderInfo {
  ns: string;
  leaderId: string;
  /** Fencing token of this leadership. */
  term: number;
  leaseExpiresAt: Date;
  /** Database clock at the last change of the leader row. */
  updatedAt: Date;
}

/** What one `elect` decided: `elect` returns `leaderId`; the LeaderElector needs the rest. */
export interface ElectOutcome {
  ns: string;
  /** The leader after the call: the caller or whoever holds an unexpired lease. */
  leaderId: string;
  /** The leader's term. */
  term: number;
  /** The caller holds the lease after this call. */
  isLeader: boolean;
  /** The caller acquired a lease it did not already hold unexpired (the term went up). */
  acquired: boolean;
}

export interface ElectionServiceOptions {
  /** Lease and candidate expiry in seconds. Default {@link DEFAULT_EXPIRE_SECONDS} (60). */
  readonly expireSeconds?: number;
}

const stores = new WeakMap<DbContext, ElectionStore>();
function storeOf(context: DbContext): ElectionStore {
  let store = stores.get(context);
  if (!store) stores.set(context, (store = createStore(context)));
  return store;
}

function isDataSource(value: unknown): value is DataSource {
  return typeof value === 'object' && value !== null && typeof (value as DataSource).createQueryRunner === 'function';
}

function toInfo(row: LeaderRow): LeaderInfo {
  return {
    ns: row.ns,
    leaderId: row.leaderId as string,
    term: row.term,
    leaseExpiresAt: row.leaseExpiresAt as Date,
    updatedAt: row.updatedAt,
  };
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

  /**
   * @param dataSource The DataSource to use. Default: `getDataSource()`, looked up at each call
   *   (so a service can be created before `initDb`).
   */
  constructor(dataSource?: DataSource, options?: ElectionServiceOptions) {
    if (dataSource !== undefined && !isDataSource(dataSource)) {
      throw new ValidationError('dataSource', 'must be a TypeORM DataSource (or omitted for the default from initDb)');
    }
    const checked = checkOptions(options, ['expireSeconds']);
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
    if (session === undefined) return this.#dataSource ?? getDataSource();
    const own = dataSourceOfSession(session);
    if (this.#dataSource && own !== this.#dataSource) {
      throw new ValidationError('options.session', "belongs to a different DataSource than this ElectionService's");
    }
    return own;
  }

  #write<T>(session: Session | undefined, work: (m: EntityManager, store: ElectionStore) => Promise<T>): Promise<T> {
    return inTransaction(this.#resolve(session), session, (m, context) => work(m, storeOf(context)));
  }

  #read<T>(session: Session | undefined, work: (m: EntityManager, store: ElectionStore) => Promise<T>): Promise<T> {
    return withManager(this.#resolve(session), session, (m, context) => work(m, storeOf(context)));
  }

  /** Creates the candidate row if missing; sets `last_heartbeat_at = now`, `expires_at = now + expireSeconds`. */
  async registerCandidate(candidateId: string, options?: CallOptions): Promise<void> {
    const id = checkCandidateId(candidateId);
    const { ns, session } = checkCallOptions(options);
    const expire = this.#expireSeconds;
    await this.#write(session, (m, store) => store.touchCandidate(m, ns, id, expire));
  }

  /** Alias of {@link registerCandidate}. */
  heartbeat(candidateId: string, options?: CallOptions): Promise<void> {
    return this.registerCandidate(candidateId, options);
  }

  /**
   * Acquires or renews the lease and heartbeats the caller; returns the leader's UUID after the
   * call. Never preempts an unexpired lease held by another candidate.
   */
  async elect(candidateId: string, options?: CallOptions): Promise<string> {
    return (await this.electOutcome(candidateId, options)).leaderId;
  }

  /** {@link elect}, with the term and whether the caller leads (what a worker loop needs). */
  async electOutcome(candidateId: string, options?: CallOptions): Promise<ElectOutcome> {
    const id = checkCandidateId(candidateId);
    const { ns, session } = checkCallOptions(options);
    const expire = this.#expireSeconds;
    const dataSource = this.#resolve(session);
    const store = storeOf(contextOf(dataSource));
    const { electInOneStatement } = store;
    if (electInOneStatement) {
      // PostgreSQL, existing namespace: one round trip, and the leader row is locked for one
      // statement's execution instead of four round trips (what queues concurrent candidates).
      const decision = await inOneStatement(dataSource, session, (m) => electInOneStatement(m, ns, id, expire));
      if (decision) return { ns, ...decision };
    }
    const joined = runnerOf(session)?.isTransactionActive === true;
    return inTransaction(dataSource, session, async (m) => {
      let rowExists = false;
      // MySQL follower fast path (see `store.followerReadsFirst`): only in a transaction of our
      // own, whose first consistent read is current; a caller's may hold an older snapshot.
      if (store.followerReadsFirst && !joined) {
        const seen = await store.readLeader(m, ns);
        if (seen?.live && seen.leaderId !== id) {
          await store.touchCandidate(m, ns, id, expire);
          return { ns, leaderId: seen.leaderId as string, term: seen.term, isLeader: false, acquired: false };
        }
        rowExists = seen !== undefined;
      }
      // MySQL: a locking read of a missing row takes gap locks that deadlock a later insert;
      // SQLite: the first write takes the database lock. Both create the row first, unless it
      // was just seen (a locking read of an existing row takes no gap lock).
      const insertFirst = store.insertsLeaderRowFirst && !rowExists;
      if (insertFirst) await store.ensureLeaderRow(m, ns);
      let row = await store.lockLeader(m, ns, 'write', insertFirst);
      if (!row) {
        await store.ensureLeaderRow(m, ns);
        row = await store.lockLeader(m, ns, 'write', true);
      }
      if (!row) throw new Error(`gemstone-utils: leader row of ${JSON.stringify(ns)} vanished inside its transaction`);

      let outcome: ElectOutcome;
      if (row.live && row.leaderId !== id) {
        outcome = { ns, leaderId: row.leaderId as string, term: row.term, isLeader: false, acquired: false };
      } else {
        const renewing = row.live && row.leaderId === id;
        const term = renewing ? row.term : row.term + 1;
        await store.setLeader(m, ns, id, term, expire);
        outcome = { ns, leaderId: id, term, isLeader: true, acquired: !renewing };
        if (!renewing) await store.announce(m, { ns, leaderId: id, term });
      }
      // Lock order: leader row first, then the candidate row.
      await store.touchCandidate(m, ns, id, expire);
      return outcome;
    });
  }

  /** True only when the caller is `leader_id` and the lease is unexpired (database clock). */
  async isLeader(candidateId: string, options?: CallOptions): Promise<boolean> {
    const id = checkCandidateId(candidateId);
    const { ns, session } = checkCallOptions(options);
    return this.#read(session, (m, store) => store.isLeader(m, ns, id));
  }

  /** Active candidates (`expires_at > now`), sorted ascending. */
  async listCandidates(options?: CallOptions): Promise<string[]> {
    const { ns, session } = checkCallOptions(options);
    return this.#read(session, (m, store) => store.activeCandidates(m, ns));
  }

  /** Deletes the candidate row; if it was the leader, vacates the lease (faster failover). */
  async unregisterCandidate(candidateId: string, options?: CallOptions): Promise<void> {
    const id = checkCandidateId(candidateId);
    const { ns, session } = checkCallOptions(options);
    await this.#write(session, async (m, store) => {
      await this.#vacateIfHeld(m, store, ns, id);
      await store.deleteCandidate(m, ns, id);
    });
  }

  /** The unexpired lease of the namespace, or null when vacant or expired. */
  async getLeader(options?: CallOptions): Promise<LeaderInfo | null> {
    const { ns, session } = checkCallOptions(options);
    const row = await this.#read(session, (m, store) => store.readLeader(m, ns));
    return row?.live ? toInfo(row) : null;
  }

  /**
   * Steps down but stays a candidate. True only if the caller held an unexpired lease; a row
   * still naming the caller with an expired lease is vacated too, and false returned.
   */
  async resign(candidateId: string, options?: CallOptions): Promise<boolean> {
    const id = checkCandidateId(candidateId);
    const { ns, session } = checkCallOptions(options);
    return this.#write(session, (m, store) => this.#vacateIfHeld(m, store, ns, id));
  }

  async #vacateIfHeld(m: EntityManager, store: ElectionStore, ns: string, id: string): Promise<boolean> {
    const row = await store.lockLeader(m, ns, 'write');
    if (row?.leaderId !== id) return false;
    await store.vacate(m, ns);
    await store.announce(m, { ns, leaderId: null, term: row.term });
    return row.live;
  }

  /**
   * The fencing check for leader-only writes. Must run inside the caller's transaction: it locks
   * the leader row against a change of leadership until that transaction ends, and throws
   * {@link NotLeaderError} unless the caller holds the unexpired lease (under `term`, if given).
   * Writes made after it in the same transaction can only commit while the caller leads.
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
    return this.#write(session, async (m, store) => {
      const row = await store.lockLeader(m, ns, 'read');
      if (!row?.live || row.leaderId !== id || (term !== undefined && row.term !== term)) {
        throw new NotLeaderError({
          ns,
          candidateId: id,
          leaderId: row?.live ? row.leaderId : null,
          term: row ? row.term : null,
          ...(term !== undefined ? { expectedTerm: term } : {}),
        });
      }
      return toInfo(row);
    });
  }
}
