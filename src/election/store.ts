import type { EntityManager } from 'typeorm';
import type { DbContext } from '../db/context';
import { sqlBool } from '../db/dialect';
import { execute, executeBound } from '../db/session';
import { prepare, PreparedSql, raw, RawSql, render, slot, sql, SqlFragment } from '../db/sql';
import { ElectionLeader } from '../../entities/ElectionLeader';
import { CANDIDATE_TABLE, HISTORY_TABLE, LEADER_TABLE } from './schema';
import { CandidateFields, CandidateMetadata, DEFAULT_ELIGIBLE, DEFAULT_PRIORITY, parseMetadata } from './validate';

/**
 * The election's statements, one function each, run on the manager they are given (the
 * transaction is the caller's business: see `session.ts`). Every instant comes from the
 * database clock (`dialect.now`). Decisions are read from rows, except for the conditional
 * writes below whose WHERE clause encodes the whole decision and which are judged by their
 * matched-row count (each argues why matched = changed: mysql2 reports matched rows by default,
 * changed rows when a DataSource turns its `FOUND_ROWS` flag off).
 */

/** The leader row as the library reads it: `live` is decided by the database clock. */
export interface LeaderRow {
  ns: string;
  leaderId: string | null;
  term: number;
  /** `leader_id` is set and `lease_expires_at > now`. */
  live: boolean;
  leaseExpiresAt: Date | null;
  updatedAt: Date;
  /** The metadata of the candidate row named by `leader_id`; null without one (or without metadata). */
  metadata: CandidateMetadata | null;
  /** The database clock when the row was read. */
  now: Date;
}

/** The leader row as a watcher sees it, with the database clock of the read (see `watch.ts`). */
export interface ObservedLeader {
  /** Undefined when the namespace has no leader row yet. */
  row: LeaderRow | undefined;
  /** The database clock at the read. */
  now: Date;
  /** When the row's current term was acquired, from its history row (null without one). */
  acquiredAt: Date | null;
  /** When the row's current term ended, from its history row (null while open or without one). */
  endedAt: Date | null;
  /** The named leader's candidate metadata (null when none or the candidate row is gone). */
  metadata: Record<string, unknown> | null;
}

/**
 * Where the caller of `elect` stands among the candidates, read with the leader row (in the same
 * statement, so it costs no round trip): its stored priority and eligibility, whether its row
 * exists, and the highest priority among the OTHER live eligible candidates.
 */
export interface Standing {
  registered: boolean;
  storedPriority: number | null;
  storedEligible: boolean | null;
  /** Null when no other live eligible candidate exists. */
  rivalPriority: number | null;
}

/** What one `elect` decided, as {@link ElectionStore.electInOneStatement} reports it. */
export interface ElectDecision {
  /** Null when nobody holds an unexpired lease after the call (the caller did not take a vacant one). */
  leaderId: string | null;
  term: number;
  isLeader: boolean;
  acquired: boolean;
  /** The caller renewed a lease it should give up (ineligible, or outranked by a live eligible candidate). */
  handOver: boolean;
  /** The caller's candidate row existed before the call. */
  wasRegistered: boolean;
  databaseNow: Date;
}

/** A candidate row as `getCandidates` reports it. */
export interface CandidateRow {
  candidateId: string;
  lastHeartbeatAt: Date;
  expiresAt: Date;
  priority: number;
  eligible: boolean;
  metadata: CandidateMetadata | null;
}

/**
 * The rule every path of `elect` applies, given the leader row as read under the lock and the
 * caller's standing. A leader always renews (nobody is preempted, not even by its own
 * preferences) and is told to hand over when it is ineligible or outranked; a vacant or expired
 * lease is taken only by an eligible candidate that no live eligible candidate outranks — the
 * preferred candidate takes it, the others defer to it. Leadership therefore only ever moves to
 * strictly higher priority while the candidates stay the same: it cannot go back and forth.
 */
export function decide(
  row: Pick<LeaderRow, 'leaderId' | 'live'>,
  candidateId: string,
  standing: Standing,
  fields: CandidateFields,
): { renewing: boolean; takes: boolean; handOver: boolean } {
  const eligible = fields.eligible ?? standing.storedEligible ?? DEFAULT_ELIGIBLE;
  const priority = fields.priority ?? standing.storedPriority ?? DEFAULT_PRIORITY;
  const outranked = standing.rivalPriority !== null && standing.rivalPriority > priority;
  const renewing = row.live && row.leaderId === candidateId;
  const takes = renewing || (!row.live && eligible && !outranked);
  return { renewing, takes, handOver: renewing && (!eligible || outranked) };
}


/** The OK packet of a MySQL/MariaDB write, as mysql2 hands it to TypeORM's `query()`. */
interface MysqlWriteResult {
  affectedRows?: unknown;
  insertId?: unknown;
  serverStatus?: unknown;
}

/** MySQL protocol: SERVER_STATUS_IN_TRANS, a transaction is open on the connection after the statement. */
const SERVER_STATUS_IN_TRANS = 1;

/** What a one-statement MariaDB write reports: whether it matched, and the database clock it judged by. */
export interface ConditionalWrite {
  matched: boolean;
  /** The database clock of the statement (`UTC_TIMESTAMP(6)` is fixed for a statement), when it matched. */
  databaseNow: Date | null;
}

/**
 * The MariaDB server features the one-round-trip paths rely on, learnt once per DataSource:
 * an UPDATE whose subquery reads a table it updates (MariaDB 10.3.2+; MySQL refuses it with error
 * 1093), and the name of the session isolation variable (`transaction_isolation` from 11.1 on).
 */
export interface MariadbFeatures {
  isolationVariable: 'tx_isolation' | 'transaction_isolation';
  /** `INSERT … RETURNING` (MariaDB 10.5+): a follower's `elect` in one statement. */
  returning: boolean;
}

/** `major.minor.patch` of a MariaDB `VERSION()` string, or undefined for MySQL. */
export function mariadbVersion(version: string): [number, number, number] | undefined {
  if (!/mariadb/i.test(version)) return undefined;
  const match = /^(\d+)\.(\d+)\.(\d+)/.exec(version);
  return match ? [Number(match[1]), Number(match[2]), Number(match[3])] : undefined;
}

/** The leader a process last saw per namespace (see `ElectionStore.remember`); at most this many namespaces. */
const MAX_REMEMBERED = 10_000;

/** PostgreSQL channel on which lease changes are announced (delivered at commit). */
export const NOTIFY_CHANNEL = 'gemstone_election';

/**
 * What a NOTIFY on {@link NOTIFY_CHANNEL} carries, as JSON: the lease change plus the `schema`
 * and `table` of the leader table it happened in. The channel is shared by every DataSource on
 * the database; listeners drop news about another schema's or prefix's tables.
 */
export interface LeaseChange {
  ns: string;
  /** The new leader, or null when the lease was vacated. */
  leaderId: string | null;
  term: number;
}

export function createStore(context: DbContext) {
  const { dialect: d } = context;
  const candidates = context.table(CANDIDATE_TABLE);
  const leaders = context.table(LEADER_TABLE);
  const history = context.table(HISTORY_TABLE);
  // Identifies the leader table in announcements: an unqualified name lives in current_schema().
  const leaderSchema = context.schemaName(LEADER_TABLE);
  const announcedSchema = leaderSchema === undefined ? raw('current_schema()') : sql`CAST(${leaderSchema} AS text)`;
  const announcedTable = sql`CAST(${context.tableName(LEADER_TABLE)} AS text)`;
  /** Booleans as parameters: pg takes them as they are, mysql2 and better-sqlite3 want 1/0. */
  const bool = (value: boolean | undefined) => (value === undefined ? null : d.name === 'postgres' ? value : value ? 1 : 0);

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
   * The caller's {@link Standing}, as columns next to the leader row (`:me` is the caller's id).
   * The subqueries are plain reads, also under FOR UPDATE (which locks the leader row only).
   */
  const selectStanding = (alias: string) =>
    [
      `(SELECT c.priority FROM ${candidates.text} c WHERE c.ns = ${alias}.ns AND c.candidate_id = :me) AS my_priority`,
      `(SELECT c.eligible FROM ${candidates.text} c WHERE c.ns = ${alias}.ns AND c.candidate_id = :me) AS my_eligible`,
      `(SELECT MAX(c.priority) FROM ${candidates.text} c WHERE c.ns = ${alias}.ns AND c.candidate_id <> :me AND c.eligible AND c.expires_at > ${d.now.text}) AS rival_priority`,
    ].join(', ');

  /** The columns and values of the candidate options a call gave (omitted ones keep what is stored). */
  function fieldColumns(fields: CandidateFields): { names: string[]; values: unknown[] } {
    const names: string[] = [];
    const values: unknown[] = [];
    if (fields.metadataJson !== undefined) names.push('metadata'), values.push(fields.metadataJson);
    if (fields.priority !== undefined) names.push('priority'), values.push(fields.priority);
    if (fields.eligible !== undefined) names.push('eligible'), values.push(bool(fields.eligible));
    return { names, values };
  }

  /** `, col1, col2` and `, $a, $b` for the INSERT of a candidate row, or nothing. */
  function fieldInsert(fields: CandidateFields): { columns: RawSql; values: SqlFragment } {
    const { names, values } = fieldColumns(fields);
    let list = sql``;
    for (const value of values) list = sql`${list}, ${value}`;
    return { columns: raw(names.map((name) => `, ${name}`).join('')), values: list };
  }

  /** The candidate upsert: heartbeat columns always, the given options too. */
  function candidateUpsert(ns: string, candidateId: string, expireSeconds: number, fields: CandidateFields): SqlFragment {
    const { columns, values } = fieldInsert(fields);
    const updated = ['last_heartbeat_at', 'expires_at', ...fieldColumns(fields).names];
    return sql`INSERT INTO ${candidates} (ns, candidate_id, last_heartbeat_at, expires_at${columns})
VALUES (${ns}, ${candidateId}, ${d.now}, ${d.nowPlus(expireSeconds)}${values})
${d.upsert(['ns', 'candidate_id'], updated)}`;
  }

  /** Runs a MySQL/MariaDB write and returns its OK packet (TypeORM's `query()` passes it through). */
  async function mysqlWrite(m: EntityManager, statement: SqlFragment): Promise<MysqlWriteResult> {
    const { text, values } = render(statement, d.placeholders);
    const result: unknown = await m.query(text, [...values]);
    return (typeof result === 'object' && result !== null ? result : {}) as MysqlWriteResult;
  }

  /** Whether a conditional write matched (see the callers for why matched = changed), and its clock. */
  function conditional(result: MysqlWriteResult): ConditionalWrite {
    const matched = Number(result.affectedRows) > 0;
    return { matched, databaseNow: matched ? (d.parseInstant(result.insertId) as Date) : null };
  }

  /**
   * Reports the statement's clock in the OK packet: `LAST_INSERT_ID(expr)` returns `expr` and makes
   * it the packet's insert id, the documented way to return a value from an UPDATE without another
   * round trip. (It also becomes the connection's `LAST_INSERT_ID()` until the next insert that
   * generates an id, which is what that function reports after such statements anyway.)
   */
  const clockInInsertId = `0 * LAST_INSERT_ID(${d.instant(d.now.text).text})`;

  /** `c.col = ?` for the candidate options a call gave, as SET items of a multi-table UPDATE. */
  function fieldSets(fields: CandidateFields): SqlFragment {
    const { names, values } = fieldColumns(fields);
    let list = sql``;
    names.forEach((name, i) => (list = sql`${list}, c.${raw(name)} = ${values[i]}`));
    return list;
  }

  /**
   * The caller's effective eligibility and the absence of a live eligible candidate of strictly
   * higher priority than its effective priority ({@link decide}'s `eligible && !outranked`), as a
   * condition on the caller's candidate row `c` (values before the statement's own changes).
   *
   * Outside READ COMMITTED (an autocommit statement runs at the session's level, REPEATABLE READ
   * by default) InnoDB reads the rivals of a writing statement with shared locks. They are read
   * through the primary key, never the `(ns, expires_at)` index: a heartbeat locks its candidate
   * row before it moves that index entry, so a rival scan of the index would take locks in the
   * opposite order (a deadlock with every concurrent heartbeat); through the primary key the
   * statement only waits for heartbeats in flight, and they only wait for it.
   */
  function unrivalled(candidateId: string, fields: CandidateFields): SqlFragment {
    return sql`COALESCE(${bool(fields.eligible)}, c.eligible)
  AND NOT EXISTS (SELECT 1 FROM ${candidates} r FORCE INDEX (PRIMARY) WHERE r.ns = c.ns AND r.candidate_id <> ${candidateId} AND r.eligible
    AND r.expires_at > ${d.now} AND r.priority > COALESCE(${fields.priority ?? null}, c.priority))`;
  }

  let mariadbProbe: Promise<MariadbFeatures | undefined> | undefined;
  /** The namespace's leader and term as this process last saw them (a hint; see `renewInOneStatement`). */
  const seenLeaders = new Map<string, { leaderId: string; term: number }>();

  /**
   * PostgreSQL: the text of {@link electInOneStatement}, rendered once per combination of the
   * candidate options a call gives (which columns the candidate upsert writes) and kept: a call
   * only binds its values (`ns`, `id`, `expire`, and the options). The same text on every call
   * is also what lets it run as a named prepared statement (planned once per connection).
   */
  const electStatements = new Map<number, PreparedSql>();
  function electStatement(fields: CandidateFields): PreparedSql {
    const key = (fields.metadataJson !== undefined ? 1 : 0) | (fields.priority !== undefined ? 2 : 0) | (fields.eligible !== undefined ? 4 : 0);
    let prepared = electStatements.get(key);
    if (prepared) return prepared;
    const names = fieldColumns(fields).names;
    const columns = raw(names.map((name) => `, ${name}`).join(''));
    let values = sql``;
    for (const name of names) values = sql`${values}, ${slot(name)}`;
    const updated = raw(names.map((name) => `, ${name} = EXCLUDED.${name}`).join(''));
    const ns = sql`CAST(${slot('ns')} AS varchar)`;
    const me = sql`CAST(${slot('id')} AS varchar)`;
    const later = sql`(clock_timestamp() + make_interval(secs => ${slot('expire')}))`;
    prepared = prepare(
      sql`WITH locked AS (
  SELECT ns, leader_id, term, lease_expires_at FROM ${leaders} WHERE ns = ${ns} FOR UPDATE
), standing AS (
  SELECT COALESCE(bool_or(candidate_id = ${me}), false) AS registered,
    COALESCE(CAST(${slot('eligible')} AS boolean), bool_or(eligible) FILTER (WHERE candidate_id = ${me}), ${raw(String(DEFAULT_ELIGIBLE))}) AS eligible,
    COALESCE(CAST(${slot('priority')} AS integer), max(priority) FILTER (WHERE candidate_id = ${me}), ${raw(String(DEFAULT_PRIORITY))}) AS priority,
    max(priority) FILTER (WHERE candidate_id <> ${me} AND eligible AND expires_at > clock_timestamp()) AS rival_priority
  FROM ${candidates} WHERE ns = ${ns}
), seen AS (
  SELECT ns, leader_id, term, lease_expires_at, COALESCE(leader_id IS NOT NULL AND lease_expires_at > clock_timestamp(), false) AS live FROM locked
), ranked AS (
  SELECT seen.*, (seen.live AND seen.leader_id = ${me}) AS renewing, standing.eligible, standing.registered,
    COALESCE(standing.rival_priority > standing.priority, false) AS outranked
  FROM seen, standing
), decided AS (
  SELECT ns, leader_id, term, lease_expires_at, live, renewing, registered, (renewing OR (NOT live AND eligible AND NOT outranked)) AS takes,
    (renewing AND (NOT eligible OR outranked)) AS hand_over
  FROM ranked
), lease AS (
  UPDATE ${leaders} AS l
  SET leader_id = ${me}, term = CASE WHEN decided.renewing THEN decided.term ELSE decided.term + 1 END,
    lease_expires_at = ${later}, updated_at = clock_timestamp()
  FROM decided WHERE l.ns = decided.ns AND decided.takes
  RETURNING l.ns, l.leader_id, l.term
), touch AS (
  INSERT INTO ${candidates} (ns, candidate_id, last_heartbeat_at, expires_at${columns})
  SELECT ns, ${me}, clock_timestamp(), ${later}${values} FROM decided
  ON CONFLICT (ns, candidate_id) DO UPDATE SET last_heartbeat_at = EXCLUDED.last_heartbeat_at, expires_at = EXCLUDED.expires_at${updated}
), closed AS (
  UPDATE ${history} AS h SET ended_at = decided.lease_expires_at, end_reason = CAST(${'expired'} AS varchar)
  FROM decided WHERE decided.takes AND NOT decided.renewing AND decided.leader_id IS NOT NULL
    AND h.ns = decided.ns AND h.term = decided.term AND h.ended_at IS NULL
), opened AS (
  INSERT INTO ${history} (ns, term, leader_id, acquired_at, ended_at, end_reason)
  SELECT lease.ns, lease.term, lease.leader_id, clock_timestamp(), NULL, NULL FROM lease, decided WHERE NOT decided.renewing
  ON CONFLICT (ns, term) DO UPDATE SET leader_id = EXCLUDED.leader_id, acquired_at = EXCLUDED.acquired_at, ended_at = NULL, end_reason = NULL
), announced AS (
  SELECT pg_notify(CAST(${NOTIFY_CHANNEL} AS text), json_build_object('schema', ${announcedSchema}, 'table', ${announcedTable},
    'ns', lease.ns, 'leaderId', lease.leader_id, 'term', lease.term)::text)
  FROM lease, decided WHERE NOT decided.renewing
)
SELECT decided.leader_id, decided.term, decided.live, decided.renewing, decided.takes, decided.hand_over, decided.registered,
  lease.term AS new_term, (SELECT count(*) FROM announced) AS announced, ${d.instant(d.now.text)} AS db_now
FROM decided LEFT JOIN lease ON true`,
      d.placeholders,
      'gemstone_elect',
    );
    electStatements.set(key, prepared);
    return prepared;
  }

  return {
    /** A leader row as read by `selectLeader` (also by the SQLite programs). */
    toRow,

    /**
     * Whether `elect` creates the leader row before locking it. PostgreSQL locks first and
     * inserts only for a new namespace, saving a statement on every renewal.
     */
    insertsLeaderRowFirst: d.name !== 'postgres',

    /**
     * MySQL/MariaDB: `elect` first reads the leader row WITHOUT a lock; when it shows an
     * unexpired lease held by another candidate, the call only touches the caller's candidate
     * row and returns that leader — followers never queue for the leader row's lock, which the
     * leader's renewal and every takeover still take (`lockLeader`).
     *
     * Why this keeps the rule "read the leader row with FOR UPDATE wherever leadership may change
     * hands" (docs/protocol.md): a follower's call cannot change leadership — it never writes the leader row — so
     * there is nothing for the lock to serialize. The read is the first of a transaction the
     * library owns, so InnoDB's snapshot is taken at that moment (it is current), and `live` is
     * judged by the server clock at that moment: the call is linearized at the read, when the
     * lease it reports was held. Any other outcome (vacant, expired, the caller's own lease,
     * no row) takes the locked path in the same transaction, leader row before candidate row.
     * Not on PostgreSQL (one statement does it all) nor SQLite (its write lock is the only lock,
     * and a deferred read before a write would fail with SQLITE_BUSY_SNAPSHOT under contention).
     */
    followerReadsFirst: d.name === 'mysql',

    /** register / heartbeat: create the candidate row or extend it, storing the options given. */
    async touchCandidate(m: EntityManager, ns: string, candidateId: string, expireSeconds: number, fields: CandidateFields = {}): Promise<void> {
      await execute(context, m, candidateUpsert(ns, candidateId, expireSeconds, fields));
    },

    /** The candidate upsert as a statement, for the SQLite programs. */
    candidateUpsert,

    /**
     * Creates a vacant leader row (term 0) unless one exists. It cannot raise a duplicate-key
     * error, so a race for the first row never aborts a caller's transaction. On MySQL it also
     * locks an existing row; on SQLite it takes the database write lock (first write statement).
     */
    async ensureLeaderRow(m: EntityManager, ns: string): Promise<void> {
      await execute(
        context,
        m,
        sql`INSERT INTO ${leaders} (ns, leader_id, lease_expires_at, updated_at, term)
VALUES (${ns}, NULL, NULL, ${d.now}, 0)
${d.insertIfAbsent(['ns'])}`,
      );
    },

    /**
     * Reads the leader row under a row lock held until the transaction ends: `write` (FOR
     * UPDATE) where leadership may change hands, `read` (FOR SHARE) to fence leader-only work.
     * SQLite has no row locks: a no-op write takes its database write lock instead, unless the
     * transaction already wrote.
     */
    async lockLeader(m: EntityManager, ns: string, mode: 'write' | 'read', writeLockHeld = false): Promise<LeaderRow | undefined> {
      return (await this.lockLeaderFor(m, ns, mode, writeLockHeld, undefined))?.row;
    },

    /**
     * {@link lockLeader}, plus the {@link Standing} of `candidateId` when given (what `elect`
     * decides by), read in the same statement.
     */
    async lockLeaderFor(
      m: EntityManager,
      ns: string,
      mode: 'write' | 'read',
      writeLockHeld: boolean,
      candidateId: string | undefined,
    ): Promise<{ row: LeaderRow; standing: Standing } | undefined> {
      if (!d.rowLocks && !writeLockHeld) {
        await execute(context, m, sql`UPDATE ${leaders} SET ns = ns WHERE ns = ${ns}`);
      }
      const query = m
        .createQueryBuilder()
        .select(selectLeader('l'))
        .from(ElectionLeader, 'l')
        .where('l.ns = :ns', { ns });
      if (candidateId !== undefined) query.addSelect(selectStanding('l')).setParameter('me', candidateId);
      // MySQL/MariaDB take FOR UPDATE for both modes: TypeORM renders a share lock as MySQL 8's
      // `FOR SHARE` for a MariaDB server behind `type: "mysql"`, which MariaDB rejects.
      if (d.rowLocks) query.setLock(mode === 'read' && d.name === 'postgres' ? 'pessimistic_read' : 'pessimistic_write');
      const row = await query.getRawOne<Record<string, unknown>>();
      return row ? { row: toRow(row), standing: toStanding(row) } : undefined;
    },

    /**
     * Whether `assertLeader` writes the leader row after its check (MySQL/MariaDB). A locked read
     * fences only on the server that holds the lock: under MariaDB Galera (and other
     * certification-based multi-primary replication) a takeover committed on another node never
     * waits for it, and a fenced transaction whose write set touches only the caller's tables
     * passes certification after that takeover (measured: 14 stale commits in 100 tight races).
     * A real change of the leader row puts it in the transaction's write set: certification then
     * orders the fenced transaction and any takeover, and the later of the two aborts (a deadlock
     * error). On a single InnoDB server the write costs one statement on a row the transaction has
     * already locked `FOR UPDATE`: measured in docs/databases.md, it is taken everywhere rather
     * than only where Galera is detected, because detection cannot see every topology (MySQL Group
     * Replication multi-primary, proxies that route connections to different servers).
     */
    fencesByWriting: d.name === 'mysql',

    /**
     * Touches the leader row so the transaction's write set contains it: `updated_at` moves to the
     * database clock, and at least one microsecond forward, so the row always really changes
     * (MySQL/MariaDB skip rows an UPDATE leaves as they were, and such a row would not be written).
     * Runs only after the row was read under its lock and the caller was found to be the leader.
     */
    async touchLeader(m: EntityManager, ns: string): Promise<void> {
      await execute(context, m, sql`UPDATE ${leaders} SET updated_at = GREATEST(${d.now}, updated_at + INTERVAL 1 MICROSECOND) WHERE ns = ${ns}`);
    },

    /** The leader row without a lock (for reads that change nothing). */
    async readLeader(m: EntityManager, ns: string): Promise<LeaderRow | undefined> {
      const [row] = await execute(context, m, sql`SELECT ${raw(selectLeader('l'))} FROM ${leaders} l WHERE l.ns = ${ns}`);
      return row ? toRow(row) : undefined;
    },

    /**
     * The leader row and the database clock in one statement, for watchers: without a row it
     * still answers the clock. Never locks.
     */
    observeStatement,

    /** Reads what {@link observeStatement} selected. */
    parseObserved: toObserved,

    async observeLeader(m: EntityManager, ns: string): Promise<ObservedLeader> {
      const [row] = await execute(context, m, observeStatement(ns));
      return toObserved(row);
    },

    /**
     * {@link readLeader} plus whether `candidateId` has a candidate row (MySQL follower read), and
     * on MySQL/MariaDB the lease end in whole microseconds as stored (null elsewhere or when vacant).
     */
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
      const lease = row.lease_expires_at;
      const leaseMicros = d.name === 'mysql' && lease !== null && lease !== undefined ? Number(lease) : null;
      return { row: toRow(row), registered: Number(row.registered) > 0, leaseMicros };
    },

    /**
     * PostgreSQL: the whole `elect` of an existing namespace in ONE statement (one round trip, one
     * transaction when run outside the caller's), returning what it decided; undefined when the
     * namespace has no leader row yet (nothing was written: the caller takes the general path).
     *
     * Same protocol as the general path, step for step (docs/protocol.md: lock order, database clock, retries):
     * - `locked` reads the leader row `FOR UPDATE`; `lease` and `touch` take their input rows
     *   from it, so the leader row is locked before the candidate row is written (lock order).
     * - `live` is judged by `clock_timestamp()` in `seen`, evaluated above the lock, so after
     *   waiting for the lock it is the clock of that moment, not of the statement's start.
     * - `standing` reads the caller's stored priority and eligibility and the highest priority
     *   of the other live eligible candidates in one aggregate (plain reads of the statement's snapshot); with
     *   the options given, `decided` applies {@link decide}'s rule. This is what keeps priority
     *   free for renewals: no extra round trip, one index range of the namespace's candidates.
     * - Under READ COMMITTED the locked read returns the newest committed row, and the UPDATE
     *   re-reads that newest version before writing it: a takeover committed while we waited is
     *   seen, never overwritten.
     * - The announcement (pg_notify, delivered at commit) is sent only when the lease changed
     *   hands, with the same payload fields as {@link announce}.
     * - History (see `history.ts`), only when the lease changed hands: `closed` ends a lapsed
     *   term at its lease's end, `opened` starts the new one. A renewal writes none of it.
     */
    electInOneStatement:
      d.name !== 'postgres'
        ? undefined
        : async (m: EntityManager, ns: string, candidateId: string, expireSeconds: number, fields: CandidateFields = {}): Promise<ElectDecision | undefined> => {
            const [row] = await executeBound(context, m, electStatement(fields), {
              ns,
              id: candidateId,
              expire: expireSeconds,
              metadata: fields.metadataJson,
              priority: fields.priority ?? null,
              eligible: bool(fields.eligible),
            });
            if (!row) return undefined;
            const takes = row.takes === true;
            const live = row.live === true;
            return {
              leaderId: takes ? candidateId : live ? (row.leader_id as string) : null,
              term: Number(takes ? row.new_term : row.term),
              isLeader: takes,
              acquired: takes && row.renewing !== true,
              handOver: row.hand_over === true,
              wasRegistered: row.registered === true,
              databaseNow: d.parseInstant(row.db_now) as Date,
            };
          },

    /**
     * MariaDB (10.3.2+, not a Galera node) only: the features of the one-round-trip paths of
     * `elect`, or undefined (MySQL, older MariaDB, Galera, other databases), learnt once per DataSource. A failed look-up is not
     * remembered and answers undefined (the transactional path).
     */
    mariadb(): Promise<MariadbFeatures | undefined> {
      if (d.name !== 'mysql') return Promise.resolve(undefined);
      if (!mariadbProbe) {
        const probe = execute<{ version?: unknown }>(context, context.dataSource.manager, sql`SELECT VERSION() AS version`).then((rows) => {
          const version = mariadbVersion(String(rows[0]?.version ?? ''));
          if (!version) return undefined;
          const [major, minor, patch] = version;
          const at = (a: number, b: number, c: number) => major > a || (major === a && (minor > b || (minor === b && patch >= c)));
          if (!at(10, 3, 2)) return undefined;
          return execute<{ wsrep?: unknown }>(context, context.dataSource.manager, sql`SELECT @@wsrep_on AS wsrep`).then(([row]) => {
            // A Galera node certifies write sets at commit, not under row locks: the compare-and-set
            // and one-statement paths are not proven there, so Galera keeps the locked path.
            if (row !== undefined && (Number(row.wsrep) === 1 || String(row.wsrep).toUpperCase() === 'ON')) return undefined;
            return Object.freeze({
              isolationVariable: at(11, 1, 0) ? ('transaction_isolation' as const) : ('tx_isolation' as const),
              returning: at(10, 5, 0),
            });
          });
        });
        mariadbProbe = probe;
        probe.catch(() => (mariadbProbe = undefined));
      }
      return mariadbProbe.catch(() => undefined);
    },

    /** The leader and term of `ns` this process last saw (through any service on this DataSource). */
    remembered(ns: string): { leaderId: string; term: number } | undefined {
      return seenLeaders.get(ns);
    },

    /** Remembers what an `elect` found: the leader and its term, or nothing when the lease is vacant. */
    remember(ns: string, leaderId: string | null, term: number): void {
      seenLeaders.delete(ns);
      if (leaderId === null) return;
      if (seenLeaders.size >= MAX_REMEMBERED) seenLeaders.delete(seenLeaders.keys().next().value as string);
      seenLeaders.set(ns, { leaderId, term });
    },

    /**
     * MariaDB: the renewing leader's whole `elect` in ONE autocommit statement — the leader row and
     * the caller's candidate row in one multi-table UPDATE whose WHERE clause is the decision:
     * the row names the caller under `term` (the term it last saw itself lead under), the lease is
     * unexpired by the database clock of this statement, the candidate row exists, and the caller
     * would not be told to hand over (eligible, not outranked by a live eligible candidate). Then
     * nothing else can differ from what the locked path would do: it is a renewal, the term stays
     * `term`, no history is written, `handOver` is false.
     *
     * Judged by the matched-row count: the leader row is always really changed when matched
     * (`updated_at` moves at least one microsecond forward), so the count is above zero exactly when
     * the rows matched, whether the connection reports matched rows (mysql2's default `FOUND_ROWS`)
     * or changed ones. No match changes nothing: the caller takes the general path.
     *
     * Locks: the leader row first (STRAIGHT_JOIN reads `l` first), then the caller's candidate row,
     * like every path; the rival subquery runs per joined row, after both are locked. The statement
     * is its own transaction (autocommit), so no lock outlives it; it reads nothing but locked rows
     * and the rivals' eligibility, so its isolation level does not matter.
     */
    async renewInOneStatement(
      m: EntityManager,
      ns: string,
      candidateId: string,
      term: number,
      expireSeconds: number,
      fields: CandidateFields,
    ): Promise<ConditionalWrite & { inTransaction: boolean }> {
      const result = await mysqlWrite(
        m,
        sql`UPDATE ${leaders} l STRAIGHT_JOIN ${candidates} c ON c.ns = l.ns AND c.candidate_id = l.leader_id
SET l.lease_expires_at = ${d.nowPlus(expireSeconds)}, l.updated_at = GREATEST(${d.now}, l.updated_at + INTERVAL 1 MICROSECOND),
  l.term = l.term + ${raw(clockInInsertId)},
  c.last_heartbeat_at = ${d.now}, c.expires_at = ${d.nowPlus(expireSeconds)}${fieldSets(fields)}
WHERE l.ns = ${ns} AND l.leader_id = ${candidateId} AND l.term = ${term} AND l.lease_expires_at > ${d.now}
  AND ${unrivalled(candidateId, fields)}`,
      );
      return { ...conditional(result), inTransaction: (Number(result.serverStatus) & SERVER_STATUS_IN_TRANS) !== 0 };
    },

    /**
     * MariaDB 10.5+: the heartbeat of `elect` and the read of the leader row in ONE autocommit
     * statement, an `INSERT … SELECT … ON DUPLICATE KEY UPDATE … RETURNING`: the caller's candidate
     * row is created or extended (with the options given) and the leader row is returned as the
     * statement saw it, with the database clock of the statement. A follower's call is this
     * statement alone: one round trip, one transaction, and no exclusive lock on the leader row.
     *
     * Locks: the SELECT reads the leader row before the candidate row is written (lock order).
     * Under READ COMMITTED that read takes no lock; at the session's default REPEATABLE READ InnoDB
     * reads it with a shared lock for the statement's duration, which followers share (they never
     * queue behind each other) and which only waits for an exclusive holder (a renewal statement,
     * a takeover). `clean` is false when the read may have seen uncommitted rows (the session runs
     * at READ UNCOMMITTED) or a transaction was left open (autocommit off): then only a
     * transaction of the library's own may decide (the heartbeat written here is harmless).
     *
     * It writes only when the leader row shows another candidate's unexpired lease (the follower's
     * case); otherwise it writes nothing, returns nothing (undefined) and so commits nothing: a
     * takeover then pays for one commit, in its own transaction, not two.
     *
     * `registered`: whether the candidate row existed. `LAST_INSERT_ID(expr)` is set to 0 by the
     * proposed row (evaluated for every row the SELECT yields) and to 1 by the duplicate-key
     * update, which runs only for an existing row; RETURNING reads it after the row is written.
     */
    async followerInOneStatement(
      m: EntityManager,
      ns: string,
      candidateId: string,
      expireSeconds: number,
      fields: CandidateFields,
      features: MariadbFeatures,
    ): Promise<{ row: LeaderRow; registered: boolean; leaseMicros: number | null; clean: boolean } | undefined> {
      const { columns, values } = fieldInsert(fields);
      const updated = ['last_heartbeat_at', ...fieldColumns(fields).names].map((c) => `, ${c} = VALUES(${c})`).join('');
      const of = (expression: string) => sql`(SELECT ${raw(expression)} FROM ${leaders} x WHERE x.ns = ${ns})`;
      const rows = await execute(
        context,
        m,
        sql`INSERT INTO ${candidates} (ns, candidate_id, last_heartbeat_at, expires_at${columns})
SELECT l.ns, ${candidateId}, ${d.now}, ${d.nowPlus(expireSeconds)} + INTERVAL 0 * LAST_INSERT_ID(0) MICROSECOND${values}
FROM ${leaders} l WHERE l.ns = ${ns} AND l.leader_id <> ${candidateId} AND l.lease_expires_at > ${d.now}
ON DUPLICATE KEY UPDATE expires_at = VALUES(expires_at) + INTERVAL 0 * LAST_INSERT_ID(1) MICROSECOND${raw(updated)}
RETURNING LAST_INSERT_ID() AS registered, ns, ${of('x.leader_id')} AS leader_id, ${of('x.term')} AS term,
  ${of(`CASE WHEN x.lease_expires_at > ${d.now.text} THEN 1 ELSE 0 END`)} AS live,
  ${of(d.instant('x.lease_expires_at').text)} AS lease_expires_at, ${of(d.instant('x.updated_at').text)} AS updated_at,
  NULL AS metadata, ${d.instant(d.now.text)} AS db_now,
  @@SESSION.${raw(features.isolationVariable)} AS isolation, @@SESSION.autocommit AS autocommit`,
      );
      const [row] = rows;
      if (!row) return undefined;
      const clean = !/UNCOMMITTED/i.test(String(row.isolation)) && Number(row.autocommit) === 1;
      const lease = row.lease_expires_at;
      return { row: toRow(row), registered: Number(row.registered) === 1, leaseMicros: lease === null || lease === undefined ? null : Number(lease), clean };
    },

    /**
     * MariaDB, inside the library's own READ COMMITTED transaction: the takeover of a vacant or
     * expired lease as one multi-table UPDATE whose WHERE clause is the decision — the leader row is
     * still exactly as `seen` (term, holder, lease end), vacant or expired by the database clock of
     * this statement, and the caller is eligible and not outranked. It gives the caller the lease
     * under `seen.term + 1`, heartbeats its candidate row and closes the lapsed term's history row
     * at the old lease's end (`expired`), like the locked path does; the caller then opens the new
     * term's history row in the same transaction. Under READ COMMITTED InnoDB evaluates the WHERE
     * clause on the newest committed row and re-evaluates it after waiting for the lock, so a
     * racing takeover makes this one match nothing (compare-and-set).
     *
     * Judged by the matched-row count: a match always changes the leader row (its term goes up),
     * so matched = changed. No match changed nothing: the caller takes the locked path.
     */
    async takeOverInOneStatement(
      m: EntityManager,
      ns: string,
      candidateId: string,
      seen: { term: number; leaderId: string | null; leaseMicros: number | null },
      expireSeconds: number,
      fields: CandidateFields,
    ): Promise<ConditionalWrite> {
      const epoch = raw("'1970-01-01 00:00:00'");
      const lease = seen.leaseMicros === null ? null : sql`TIMESTAMPADD(MICROSECOND, ${seen.leaseMicros}, ${epoch})`;
      const result = await mysqlWrite(
        m,
        sql`UPDATE ${leaders} l STRAIGHT_JOIN ${candidates} c ON c.ns = l.ns AND c.candidate_id = ${candidateId}
LEFT JOIN ${history} h ON h.ns = l.ns AND h.term = ${seen.term} AND h.ended_at IS NULL AND ${bool(seen.leaderId !== null)} = 1
SET l.leader_id = ${candidateId}, l.term = ${seen.term + 1} + ${raw(clockInInsertId)},
  l.lease_expires_at = ${d.nowPlus(expireSeconds)}, l.updated_at = ${d.now},
  h.ended_at = ${lease ?? null}, h.end_reason = ${'expired'},
  c.last_heartbeat_at = ${d.now}, c.expires_at = ${d.nowPlus(expireSeconds)}${fieldSets(fields)}
WHERE l.ns = ${ns} AND l.term = ${seen.term} AND l.leader_id <=> ${seen.leaderId} AND l.lease_expires_at <=> ${lease ?? null}
  AND (l.leader_id IS NULL OR l.lease_expires_at <= ${d.now})
  AND ${unrivalled(candidateId, fields)}`,
      );
      return conditional(result);
    },

    /**
     * The general path's renewal, decided when it is written: extends the lease only if the row
     * still names the caller under `term` with an unexpired lease by the database clock of this
     * statement. False when the lease ran out between the locked read and this write (the row is
     * locked, so nothing else can have changed): the call is then a takeover, not a renewal.
     * Matched = changed: `updated_at` moves at least one microsecond forward (MySQL/MariaDB), and
     * the count is read from the statement itself (PostgreSQL: RETURNING; SQLite: `changes()`, on
     * the connection whose write lock the transaction holds).
     */
    async renewIfLive(m: EntityManager, ns: string, candidateId: string, term: number, expireSeconds: number): Promise<boolean> {
      const where = sql`WHERE ns = ${ns} AND leader_id = ${candidateId} AND term = ${term} AND lease_expires_at > ${d.now}`;
      switch (d.name) {
        case 'mysql': {
          const result = await mysqlWrite(
            m,
            sql`UPDATE ${leaders} SET lease_expires_at = ${d.nowPlus(expireSeconds)}, updated_at = GREATEST(${d.now}, updated_at + INTERVAL 1 MICROSECOND) ${where}`,
          );
          return Number(result.affectedRows) > 0;
        }
        case 'postgres': {
          const [row] = await execute(
            context,
            m,
            sql`WITH renewed AS (UPDATE ${leaders} SET lease_expires_at = ${d.nowPlus(expireSeconds)}, updated_at = ${d.now} ${where} RETURNING 1)
SELECT COUNT(*) AS n FROM renewed`,
          );
          return Number(row?.n) > 0;
        }
        case 'sqlite': {
          await execute(context, m, sql`UPDATE ${leaders} SET lease_expires_at = ${d.nowPlus(expireSeconds)}, updated_at = ${d.now} ${where}`);
          const [row] = await execute(context, m, sql`SELECT changes() AS n`);
          return Number(row?.n) > 0;
        }
      }
    },

    /** Gives the lease to `leaderId` under `term` until now + expireSeconds. */
    async setLeader(m: EntityManager, ns: string, leaderId: string, term: number, expireSeconds: number): Promise<void> {
      await execute(
        context,
        m,
        sql`UPDATE ${leaders} SET leader_id = ${leaderId}, term = ${term}, lease_expires_at = ${d.nowPlus(expireSeconds)}, updated_at = ${d.now}
WHERE ns = ${ns}`,
      );
    },

    /** Clears leader_id and lease_expires_at (the term stays: the next leader gets term + 1). */
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

    /** The active candidates with everything they said about themselves, sorted by id. */
    async candidateRows(m: EntityManager, ns: string): Promise<CandidateRow[]> {
      const rows = await execute(context, m, this.candidateRowsStatement(ns));
      return this.toCandidateRows(rows);
    },

    candidateRowsStatement(ns: string): SqlFragment {
      return sql`SELECT candidate_id, ${d.instant('last_heartbeat_at')} AS last_heartbeat_at, ${d.instant('expires_at')} AS expires_at,
  priority, eligible, metadata FROM ${candidates} WHERE ns = ${ns} AND expires_at > ${d.now}`;
    },

    toCandidateRows(rows: Record<string, unknown>[]): CandidateRow[] {
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
    },

    /** Announces a lease change to LISTENers (PostgreSQL only; delivered when the transaction commits). */
    async announce(m: EntityManager, change: LeaseChange): Promise<void> {
      if (d.name !== 'postgres') return;
      await execute(
        context,
        m,
        sql`SELECT pg_notify(CAST(${NOTIFY_CHANNEL} AS text), json_build_object('schema', ${announcedSchema}, 'table', ${announcedTable},
  'ns', CAST(${change.ns} AS text), 'leaderId', CAST(${change.leaderId} AS text), 'term', CAST(${change.term} AS bigint))::text)`,
      );
    },
  };
}

export type ElectionStore = ReturnType<typeof createStore>;
