import type { EntityManager } from 'typeorm';
import type { DbContext } from '../db/context';
import { sqlBool } from '../databases/dialect';
import { partsOf } from '../databases/parts';
import type { SharedStore } from '../databases/contract/store';
import { execute } from '../db/session';
import { Bound, raw, RawSql, sql, SqlFragment } from '../db/sql';
import type { LeaseChange } from './observe/listen-options';
import type { CandidateRow, LeaderRow, ObservedLeader, Standing } from './rows';
import { CANDIDATE_TABLE, HISTORY_TABLE, LEADER_TABLE } from './schema';
import { BoundCandidateFields, CandidateFields, parseMetadata } from './validate';
import type { ElectionStore } from './store-interface';

export type { CandidateRow, ElectDecision, LeaderRow, ObservedLeader, Standing } from './rows';
export { NOTIFY_CHANNEL } from './observe/listen-options';
export type { LeaseChange } from './observe/listen-options';
export type { ElectionStore } from './store-interface';

/**
 * The election's statements, one function each, run on the manager they are given (the
 * transaction is the caller's business: see `session.ts`). Every instant comes from the
 * database clock (`dialect.now`). Decisions are read from rows under the leader row's lock; a
 * renewal is written by a conditional write judged by its matched-row count (`renewIfLive`).
 *
 * The statements here are the same on every database; what a database does differently (its
 * locking read, how a write tells what it did, its fast paths) are its members, made by its
 * folder (`databases/<db>/elect.ts`) from the shared ones and reached through `partsOf`.
 */

export { decide } from './decision';

export function createStore(context: DbContext): ElectionStore {
  const { dialect: d } = context;
  const candidates = context.table(CANDIDATE_TABLE);
  const leaders = context.table(LEADER_TABLE);
  const history = context.table(HISTORY_TABLE);
  /** Booleans as parameters, as the driver takes them (see `Dialect.bool`); null when not given. */
  const bool = (value: boolean | undefined) => (value === undefined ? null : d.bool(value));

  function toRow(raw: Record<string, unknown>): LeaderRow {
    const leaderId = (raw.leader_id as string | null) ?? null;
    return {
      ns: String(raw.ns),
      leaderId,
      term: Number(raw.term),
      live: leaderId !== null && sqlBool(raw.live),
      leaseExpiresAt: d.parseInstant(raw.lease_expires_at),
      updatedAt: d.parseInstant(raw.updated_at) as Date,
      metadata: parseMetadata(raw.metadata),
      now: d.parseInstant(raw.db_now) as Date,
    };
  }

  function toObserved(raw: Record<string, unknown> | undefined): ObservedLeader {
    if (!raw) throw new Error('gemstone-utils: the database clock read returned no row');
    const now = d.parseInstant(raw.db_now) as Date;
    const row = raw.ns === null || raw.ns === undefined ? undefined : toRow(raw);
    return { row, now, acquiredAt: d.parseInstant(raw.acquired_at), endedAt: d.parseInstant(raw.ended_at), metadata: parseMetadata(raw.metadata) };
  }

  function toStanding(raw: Record<string, unknown>): Standing {
    const stored = raw.my_priority;
    return {
      registered: stored !== null && stored !== undefined,
      storedPriority: stored === null || stored === undefined ? null : Number(stored),
      storedEligible: raw.my_eligible === null || raw.my_eligible === undefined ? null : sqlBool(raw.my_eligible),
      rivalPriority: raw.rival_priority === null || raw.rival_priority === undefined ? null : Number(raw.rival_priority),
    };
  }

  const selectLeader = (alias: string) =>
    [
      `${alias}.ns AS ns`,
      `${alias}.leader_id AS leader_id`,
      `${alias}.term AS term`,
      `CASE WHEN ${alias}.lease_expires_at > ${d.now.text} THEN 1 ELSE 0 END AS live`,
      `${d.instant(`${alias}.lease_expires_at`).text} AS lease_expires_at`,
      `${d.instant(`${alias}.updated_at`).text} AS updated_at`,
      `${d.instant(d.now.text).text} AS db_now`,
      // A scalar subquery, not a join: PostgreSQL refuses FOR UPDATE on the nullable side of an outer join.
      `(SELECT c.metadata FROM ${candidates.text} c WHERE c.ns = ${alias}.ns AND c.candidate_id = ${alias}.leader_id) AS metadata`,
    ].join(', ');

  // The leader's metadata comes from selectLeader's subquery (the join's `c` names the same row).
  const observeStatement = (ns: string): SqlFragment =>
    sql`SELECT ${raw(selectLeader('l'))}, ${d.instant(d.now.text)} AS db_now, ${d.instant('h.acquired_at')} AS acquired_at,
  ${d.instant('h.ended_at')} AS ended_at
FROM (SELECT 1 AS one) clock
LEFT JOIN ${leaders} l ON l.ns = ${ns}
LEFT JOIN ${history} h ON h.ns = l.ns AND h.term = l.term`;

  /**
   * The caller's {@link Standing}, as columns next to the leader row.
   * The subqueries are plain reads, also under FOR UPDATE (which locks the leader row only).
   */
  const selectStanding = (alias: string, me: string): SqlFragment => {
    const l = raw(alias);
    return sql`(SELECT c.priority FROM ${candidates} c WHERE c.ns = ${l}.ns AND c.candidate_id = ${me}) AS my_priority,
  (SELECT c.eligible FROM ${candidates} c WHERE c.ns = ${l}.ns AND c.candidate_id = ${me}) AS my_eligible,
  (SELECT MAX(c.priority) FROM ${candidates} c WHERE c.ns = ${l}.ns AND c.candidate_id <> ${me} AND c.eligible AND c.expires_at > ${d.now}) AS rival_priority`;
  };

  /** The columns and values of the candidate options a call gave (omitted ones keep what is stored). */
  function fieldColumns(fields: BoundCandidateFields): { names: string[]; values: unknown[] } {
    const names: string[] = [];
    const values: unknown[] = [];
    if (fields.metadataJson !== undefined) names.push('metadata'), values.push(fields.metadataJson);
    if (fields.priority !== undefined) names.push('priority'), values.push(fields.priority);
    if (fields.eligible !== undefined) names.push('eligible'), values.push(bool(fields.eligible));
    return { names, values };
  }

  /** `, col1, col2` and `, $a, $b` for the INSERT of a candidate row, or nothing. */
  function fieldInsert(fields: BoundCandidateFields): { columns: RawSql; values: SqlFragment } {
    const { names, values } = fieldColumns(fields);
    let list = sql``;
    for (const value of values) list = sql`${list}, ${value}`;
    return { columns: raw(names.map((name) => `, ${name}`).join('')), values: list };
  }

  /** The candidate upsert: heartbeat columns always, the given options too. */
  function candidateUpsert(ns: Bound<string>, candidateId: Bound<string>, expireSeconds: number, fields: BoundCandidateFields): SqlFragment {
    const { columns, values } = fieldInsert(fields);
    const updated = ['last_heartbeat_at', 'expires_at', ...fieldColumns(fields).names];
    return sql`INSERT INTO ${candidates} (ns, candidate_id, last_heartbeat_at, expires_at${columns})
VALUES (${ns}, ${candidateId}, ${d.now}, ${d.nowPlus(expireSeconds)}${values})
${d.upsert(['ns', 'candidate_id'], updated)}`;
  }

  function candidateRowsStatement(ns: string): SqlFragment {
    return sql`SELECT candidate_id, ${d.instant('last_heartbeat_at')} AS last_heartbeat_at, ${d.instant('expires_at')} AS expires_at,
  priority, eligible, metadata FROM ${candidates} WHERE ns = ${ns} AND expires_at > ${d.now}`;
  }

  function toCandidateRows(rows: Record<string, unknown>[]): CandidateRow[] {
    return (
      rows
        .map((row) => ({
          candidateId: String(row.candidate_id),
          lastHeartbeatAt: d.parseInstant(row.last_heartbeat_at) as Date,
          expiresAt: d.parseInstant(row.expires_at) as Date,
          priority: Number(row.priority),
          eligible: sqlBool(row.eligible),
          metadata: parseMetadata(row.metadata),
        }))
        // Sorted here, not by ORDER BY: collations differ between databases.
        .sort((a, b) => (a.candidateId < b.candidateId ? -1 : a.candidateId > b.candidateId ? 1 : 0))
    );
  }

  /** The leader row of `ns` with the `standing` columns, read with `lock` appended. */
  const selectLeaderRow = (ns: string, standing: RawSql | SqlFragment, lock: RawSql): SqlFragment =>
    sql`SELECT ${raw(selectLeader('l'))}${standing} FROM ${leaders} l WHERE l.ns = ${ns}${lock}`;

  /** What every database's members build on (see `databases/contract/store.ts`). */
  const shared: SharedStore = {
    context,
    candidates,
    leaders,
    history,
    selectLeader,
    selectLeaderRow,
    toRow,
    fieldColumns,
    candidateUpsert,
    candidateRowsStatement,
    toCandidateRows,
    bool,
  };
  /** This database's members: what it does differently (its folder's `elect.ts`). */
  const members = partsOf(context).elect.create(shared);

  // Each member is documented once, on ElectionStore (store-interface.ts).
  return {
    shared,
    toRow,
    insertsLeaderRowFirst: members.insertsLeaderRowFirst,
    followerReadsFirst: members.followerReadsFirst,

    async touchCandidate(m: EntityManager, ns: string, candidateId: string, expireSeconds: number, fields: CandidateFields = {}): Promise<boolean | undefined> {
      return members.touchCandidate(m, candidateUpsert(ns, candidateId, expireSeconds, fields));
    },
    candidateUpsert,

    async ensureLeaderRow(m: EntityManager, ns: string): Promise<void> {
      await execute(
        context,
        m,
        sql`INSERT INTO ${leaders} (ns, leader_id, lease_expires_at, updated_at, term)
VALUES (${ns}, NULL, NULL, ${d.now}, 0)
${d.insertIfAbsent(['ns'])}`,
      );
    },

    async lockLeader(m: EntityManager, ns: string, mode: 'write' | 'read', writeLockHeld = false): Promise<LeaderRow | undefined> {
      return (await this.lockLeaderFor(m, ns, mode, writeLockHeld, undefined))?.row;
    },

    async lockLeaderFor(
      m: EntityManager,
      ns: string,
      mode: 'write' | 'read',
      writeLockHeld: boolean,
      candidateId: string | undefined,
    ): Promise<{ row: LeaderRow; standing: Standing } | undefined> {
      const standing = candidateId === undefined ? raw('') : sql`, ${selectStanding('l', candidateId)}`;
      const row = await members.lockLeader(m, ns, mode, writeLockHeld, standing);
      return row ? { row: toRow(row), standing: toStanding(row) } : undefined;
    },
    fencesByWriting: members.touchLeader !== undefined,

    async touchLeader(m: EntityManager, ns: string): Promise<void> {
      await members.touchLeader?.(m, ns);
    },

    async readLeader(m: EntityManager, ns: string): Promise<LeaderRow | undefined> {
      const [row] = await execute(context, m, sql`SELECT ${raw(selectLeader('l'))} FROM ${leaders} l WHERE l.ns = ${ns}`);
      return row ? toRow(row) : undefined;
    },
    observeStatement,
    parseObserved: toObserved,

    async readLeaderFor(
      m: EntityManager,
      ns: string,
      candidateId: string,
    ): Promise<{ row: LeaderRow; registered: boolean; leaseMicros: number | null } | undefined> {
      const [row] = await execute(
        context,
        m,
        sql`SELECT ${raw(selectLeader('l'))}, (SELECT COUNT(*) FROM ${candidates} c WHERE c.ns = l.ns AND c.candidate_id = ${candidateId}) AS registered
FROM ${leaders} l WHERE l.ns = ${ns}`,
      );
      if (!row) return undefined;
      const lease: unknown = row.lease_expires_at;
      const leaseMicros = members.leaseMicros?.(lease) ?? null;
      return { row: toRow(row), registered: Number(row.registered) > 0, leaseMicros };
    },
    electInOneStatement: members.electInOneStatement,
    renewInOneStatement: members.renewInOneStatement,

    async renewIfLive(m: EntityManager, ns: string, candidateId: string, term: number, expireSeconds: number): Promise<boolean> {
      const where = sql`WHERE ns = ${ns} AND leader_id = ${candidateId} AND term = ${term} AND lease_expires_at > ${d.now}`;
      return members.renewIfLive(m, where, expireSeconds);
    },

    async setLeader(m: EntityManager, ns: string, leaderId: string, term: number, expireSeconds: number): Promise<void> {
      await execute(
        context,
        m,
        sql`UPDATE ${leaders} SET leader_id = ${leaderId}, term = ${term}, lease_expires_at = ${d.nowPlus(expireSeconds)}, updated_at = ${d.now}
WHERE ns = ${ns}`,
      );
    },

    async vacate(m: EntityManager, ns: string): Promise<void> {
      await execute(context, m, sql`UPDATE ${leaders} SET leader_id = NULL, lease_expires_at = NULL, updated_at = ${d.now} WHERE ns = ${ns}`);
    },

    async deleteCandidate(m: EntityManager, ns: string, candidateId: string): Promise<void> {
      await execute(context, m, sql`DELETE FROM ${candidates} WHERE ns = ${ns} AND candidate_id = ${candidateId}`);
    },

    async isLeader(m: EntityManager, ns: string, candidateId: string): Promise<boolean> {
      const rows = await execute(
        context,
        m,
        sql`SELECT 1 AS yes FROM ${leaders} WHERE ns = ${ns} AND leader_id = ${candidateId} AND lease_expires_at > ${d.now}`,
      );
      return rows.length > 0;
    },

    async activeCandidates(m: EntityManager, ns: string): Promise<string[]> {
      const rows = await execute<{ candidate_id: string }>(
        context,
        m,
        sql`SELECT candidate_id FROM ${candidates} WHERE ns = ${ns} AND expires_at > ${d.now}`,
      );
      // Sorted here, not by ORDER BY: collations differ between databases.
      return rows.map((row) => row.candidate_id).sort();
    },

    async candidateRows(m: EntityManager, ns: string): Promise<CandidateRow[]> {
      const rows = await execute(context, m, candidateRowsStatement(ns));
      return toCandidateRows(rows);
    },
    candidateRowsStatement,
    toCandidateRows,

    async announce(m: EntityManager, change: LeaseChange): Promise<void> {
      await members.announce?.(m, change);
    },
  };
}

const stores = new WeakMap<DbContext, ElectionStore>();

/** The store of a DataSource's context, made once (every path of the library shares it). */
export function storeOf(context: DbContext): ElectionStore {
  let store = stores.get(context);
  if (!store) stores.set(context, (store = createStore(context)));
  return store;
}
