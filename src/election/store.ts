import type { EntityManager } from 'typeorm';
import type { DbContext } from '../db/context';
import { partsOf } from '../databases/parts';
import type { ElectMembers, SharedStore } from '../databases/contract/store';
import { execute } from '../db/session';
import { raw, sql } from '../db/sql';
import type { LeaseChange } from './observe/listen-options';
import type { CandidateRow, LeaderRow, Standing } from './rows';
import { ElectionTables, electionTables } from './tables';
import type { CandidateFields } from './validate';
import type { ElectionStore } from './store-interface';
import { activeCandidatesStatement, candidateRowsStatement, toActiveCandidates, toCandidateRows } from './statements/candidate-rows';
import { boolParameter, candidateUpsert, deleteCandidateStatement, fieldColumns } from './statements/candidate-writes';
import { isLeaderStatement, leaderColumns, readLeaderForStatement, readLeaderStatement, selectLeaderRow, toLeaderRow } from './statements/leader-row';
import { ensureLeaderRowStatement, renewWhere, setLeaderStatement, vacateStatement } from './statements/leader-writes';
import { observeStatement, toObserved } from './statements/observe';
import { standingColumns, toStanding } from './statements/standing';

export type { CandidateRow, ElectDecision, LeaderRow, ObservedLeader, Standing } from './rows';
export { NOTIFY_CHANNEL } from './observe/listen-options';
export type { LeaseChange } from './observe/listen-options';
export type { ElectionStore } from './store-interface';

/**
 * The election's statements, one function each, run on the manager they are given (the
 * transaction is the caller's business: see `db/session.ts`). Every instant comes from the
 * database clock (`dialect.now`). Decisions are read from rows under the leader row's lock; a
 * renewal is written by a conditional write judged by its matched-row count (`renewIfLive`).
 *
 * The statements are the same on every database and live in `statements/`, one file per
 * statement (or per read and its parser); what a database does differently (its locking read,
 * how a write tells what it did, its fast paths) are its members, made by its folder
 * (`databases/<db>/elect.ts`) from the shared ones and reached through `partsOf`.
 */

export { decide } from './decision';

export function createStore(context: DbContext): ElectionStore {
  const t = electionTables(context);
  const shared = sharedStore(context, t);
  /** This database's members: what it does differently (its folder's `elect.ts`). */
  const members = partsOf(context).elect.create(shared);
  return { ...leaderCalls(context, t, shared, members), ...candidateCalls(context, t, members) };
}

/** What every database's members build on (see `databases/contract/store.ts`). */
function sharedStore(context: DbContext, t: ElectionTables): SharedStore {
  return {
    context,
    candidates: t.candidates,
    leaders: t.leaders,
    history: t.history,
    selectLeader: (alias) => leaderColumns(t, alias),
    selectLeaderRow: (ns, standing, lock) => selectLeaderRow(t, ns, standing, lock),
    toRow: (row) => toLeaderRow(t, row),
    fieldColumns: (fields) => fieldColumns(t, fields),
    candidateUpsert: (ns, candidateId, expireSeconds, fields) => candidateUpsert(t, ns, candidateId, expireSeconds, fields),
    candidateRowsStatement: (ns) => candidateRowsStatement(t, ns),
    toCandidateRows: (rows) => toCandidateRows(t, rows),
    bool: (value) => boolParameter(t, value),
  };
}

type LeaderCalls = Omit<ElectionStore, 'touchCandidate' | 'candidateUpsert' | 'deleteCandidate' | 'activeCandidates' | 'candidateRows' | 'candidateRowsStatement' | 'toCandidateRows'>;

// Each member is documented once, on ElectionStore (store-interface.ts).

/** The store's calls on the leader row (and the history and announcements that go with it). */
function leaderCalls(context: DbContext, t: ElectionTables, shared: SharedStore, members: ElectMembers): LeaderCalls {
  return {
    shared,
    toRow: shared.toRow,
    insertsLeaderRowFirst: members.insertsLeaderRowFirst,
    followerReadsFirst: members.followerReadsFirst,

    async ensureLeaderRow(m: EntityManager, ns: string): Promise<void> {
      await execute(context, m, ensureLeaderRowStatement(t, ns));
    },

    async lockLeader(m: EntityManager, ns: string, mode: 'write' | 'read', writeLockHeld = false): Promise<LeaderRow | undefined> {
      return (await this.lockLeaderFor(m, ns, mode, writeLockHeld, undefined))?.row;
    },

    async lockLeaderFor(m, ns, mode, writeLockHeld, candidateId): Promise<{ row: LeaderRow; standing: Standing } | undefined> {
      const standing = candidateId === undefined ? raw('') : sql`, ${standingColumns(t, 'l', candidateId)}`;
      const row = await members.lockLeader(m, ns, mode, writeLockHeld, standing);
      return row ? { row: toLeaderRow(t, row), standing: toStanding(row) } : undefined;
    },

    async lockLeaderToFence(m: EntityManager, ns: string, candidateId: string, term: number | undefined): Promise<LeaderRow | undefined> {
      // Where tables can be guarded, the same read records the transaction's proof (`contract/guards.ts`).
      const guards = partsOf(context).guards;
      const proof = guards?.proofColumns('l', candidateId, term) ?? raw('');
      const row = await members.lockLeader(m, ns, 'read', false, proof);
      await guards?.afterProof?.(context, m, { ns, candidateId, term });
      return row ? toLeaderRow(t, row) : undefined;
    },
    fencesByWriting: members.touchLeader !== undefined,

    async touchLeader(m: EntityManager, ns: string): Promise<void> {
      await members.touchLeader?.(m, ns);
    },

    async readLeader(m: EntityManager, ns: string): Promise<LeaderRow | undefined> {
      const [row] = await execute(context, m, readLeaderStatement(t, ns));
      return row ? toLeaderRow(t, row) : undefined;
    },
    observeStatement: (ns) => observeStatement(t, ns),
    parseObserved: (row) => toObserved(t, row),

    async readLeaderFor(m: EntityManager, ns: string, candidateId: string) {
      const [row] = await execute(context, m, readLeaderForStatement(t, ns, candidateId));
      if (!row) return undefined;
      const lease: unknown = row.lease_expires_at;
      const leaseMicros = members.leaseMicros?.(lease) ?? null;
      return { row: toLeaderRow(t, row), registered: Number(row.registered) > 0, leaseMicros };
    },
    electInOneStatement: members.electInOneStatement,
    renewInOneStatement: members.renewInOneStatement,

    async renewIfLive(m: EntityManager, ns: string, candidateId: string, term: number, expireSeconds: number): Promise<boolean> {
      return members.renewIfLive(m, renewWhere(t, ns, candidateId, term), expireSeconds);
    },

    async setLeader(m: EntityManager, ns: string, leaderId: string, term: number, expireSeconds: number): Promise<void> {
      await execute(context, m, setLeaderStatement(t, ns, leaderId, term, expireSeconds));
    },

    async vacate(m: EntityManager, ns: string): Promise<void> {
      await execute(context, m, vacateStatement(t, ns));
    },

    async isLeader(m: EntityManager, ns: string, candidateId: string): Promise<boolean> {
      const rows = await execute(context, m, isLeaderStatement(t, ns, candidateId));
      return rows.length > 0;
    },

    async announce(m: EntityManager, change: LeaseChange): Promise<void> {
      await members.announce?.(m, change);
    },
  };
}

/** The store's calls on the candidate rows. */
function candidateCalls(context: DbContext, t: ElectionTables, members: ElectMembers): Omit<ElectionStore, keyof LeaderCalls> {
  return {
    async touchCandidate(m: EntityManager, ns: string, candidateId: string, expireSeconds: number, fields: CandidateFields = {}): Promise<boolean | undefined> {
      return members.touchCandidate(m, candidateUpsert(t, ns, candidateId, expireSeconds, fields));
    },
    candidateUpsert: (ns, candidateId, expireSeconds, fields) => candidateUpsert(t, ns, candidateId, expireSeconds, fields),

    async deleteCandidate(m: EntityManager, ns: string, candidateId: string): Promise<void> {
      await execute(context, m, deleteCandidateStatement(t, ns, candidateId));
    },

    async activeCandidates(m: EntityManager, ns: string): Promise<string[]> {
      return toActiveCandidates(await execute(context, m, activeCandidatesStatement(t, ns)));
    },

    async candidateRows(m: EntityManager, ns: string): Promise<CandidateRow[]> {
      return toCandidateRows(t, await execute(context, m, candidateRowsStatement(t, ns)));
    },
    candidateRowsStatement: (ns) => candidateRowsStatement(t, ns),
    toCandidateRows: (rows) => toCandidateRows(t, rows),
  };
}

const stores = new WeakMap<DbContext, ElectionStore>();

/** The store of a DataSource's context, made once (every path of the library shares it). */
export function storeOf(context: DbContext): ElectionStore {
  let store = stores.get(context);
  if (!store) stores.set(context, (store = createStore(context)));
  return store;
}
