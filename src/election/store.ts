import type { EntityManager } from 'typeorm';
import type { DbContext } from '../db/context';
import { sqlBool } from '../databases/dialect';
import { execute, executeBound, executeRaw } from '../db/session';
import { prepare, PreparedSql, raw, RawSql, slot, sql, SqlFragment } from '../db/sql';
import { judgeElect } from './decision';
import { CANDIDATE_TABLE, HISTORY_TABLE, LEADER_TABLE } from './schema';
import { CandidateFields, CandidateMetadata, DEFAULT_ELIGIBLE, DEFAULT_PRIORITY, parseMetadata } from './validate';

/**
 * The election's statements, one function each, run on the manager they are given (the
 * transaction is the caller's business: see `session.ts`). Every instant comes from the
 * database clock (`dialect.now`). Decisions are read from rows under the leader row's lock; a
 * renewal is written by a conditional write judged by its matched-row count (`renewIfLive`).
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
 * caller's standing: {@link judgeElect}, the reference decision (see `decision.ts`, which names its
 * branches). A leader always renews and is told to hand over when it is ineligible or outranked; a
 * vacant or expired lease is taken only by an eligible candidate that no live eligible candidate
 * outranks. Leadership therefore only ever moves to strictly higher priority while the candidates
 * stay the same: it cannot go back and forth.
 */
export function decide(
  row: Pick<LeaderRow, 'leaderId' | 'live'>,
  candidateId: string,
  standing: Standing,
  fields: CandidateFields,
): { renewing: boolean; takes: boolean; handOver: boolean } {
  const { renewing, takes, handOver } = judgeElect(row, candidateId, standing, fields);
  return { renewing, takes, handOver };
}


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
), seen AS (
  -- The locked row only when its holder and term are the ones the statement's snapshot shows:
  -- the history and the candidates below are read from that snapshot. Otherwise nothing is
  -- decided nor written, and the caller runs the statement again.
  SELECT k.ns, k.leader_id, k.term, k.lease_expires_at,
    COALESCE(k.leader_id IS NOT NULL AND k.lease_expires_at > clock_timestamp(), false) AS live
  FROM locked k JOIN ${leaders} s ON s.ns = k.ns AND s.term = k.term AND s.leader_id IS NOT DISTINCT FROM k.leader_id
), ranked AS (
  SELECT seen.*, (seen.live AND seen.leader_id = ${me}) AS renewing, st.registered, st.eligible,
    COALESCE(st.rival_priority > st.priority, false) AS outranked
  FROM seen CROSS JOIN LATERAL (
    SELECT COALESCE(bool_or(c.candidate_id = ${me}), false) AS registered,
      COALESCE(CAST(${slot('eligible')} AS boolean), bool_or(c.eligible) FILTER (WHERE c.candidate_id = ${me}), ${raw(String(DEFAULT_ELIGIBLE))}) AS eligible,
      COALESCE(CAST(${slot('priority')} AS integer), max(c.priority) FILTER (WHERE c.candidate_id = ${me}), ${raw(String(DEFAULT_PRIORITY))}) AS priority,
      max(c.priority) FILTER (WHERE c.candidate_id <> ${me} AND c.eligible AND c.expires_at > clock_timestamp()) AS rival_priority
    FROM ${candidates} c WHERE c.ns = seen.ns
  ) st
), decided AS (
  SELECT ns, leader_id, term, lease_expires_at, live, renewing, registered, (renewing OR (NOT live AND eligible AND NOT outranked)) AS takes,
    (renewing AND (NOT eligible OR outranked)) AS hand_over
  FROM ranked
), lease AS (
  UPDATE ${leaders} AS l
  SET leader_id = ${me}, term = CASE WHEN decided.renewing AND (decided.hand_over OR l.lease_expires_at > clock_timestamp()) THEN decided.term ELSE decided.term + 1 END,
    lease_expires_at = ${later}, updated_at = clock_timestamp()
  FROM decided WHERE l.ns = decided.ns AND decided.takes AND NOT (decided.hand_over AND l.lease_expires_at <= clock_timestamp())
  RETURNING l.ns, l.leader_id, l.term, l.term = decided.term AS renewed, l.updated_at AS granted_at
), touch AS (
  INSERT INTO ${candidates} (ns, candidate_id, last_heartbeat_at, expires_at${columns})
  SELECT ns, ${me}, clock_timestamp(), ${later}${values} FROM decided
  ON CONFLICT (ns, candidate_id) DO UPDATE SET last_heartbeat_at = EXCLUDED.last_heartbeat_at, expires_at = EXCLUDED.expires_at${updated}
  -- Whether the row existed is told by the write, not by the snapshot: a row deleted by a
  -- transaction that committed after the statement began is created here (xmax = 0: inserted).
  RETURNING (xmax = 0) AS inserted
), closed AS (
  UPDATE ${history} AS h SET ended_at = decided.lease_expires_at, end_reason = CAST(${'expired'} AS varchar)
  FROM lease, decided WHERE NOT lease.renewed AND decided.leader_id IS NOT NULL
    AND h.ns = decided.ns AND h.term = decided.term AND h.ended_at IS NULL
), opened AS (
  INSERT INTO ${history} (ns, term, leader_id, acquired_at, ended_at, end_reason)
  SELECT lease.ns, lease.term, lease.leader_id, lease.granted_at, NULL, NULL FROM lease WHERE NOT lease.renewed
  ON CONFLICT (ns, term) DO UPDATE SET leader_id = EXCLUDED.leader_id, acquired_at = EXCLUDED.acquired_at, ended_at = NULL, end_reason = NULL
), announced AS (
  SELECT pg_notify(CAST(${NOTIFY_CHANNEL} AS text), json_build_object('schema', ${announcedSchema}, 'table', ${announcedTable},
    'ns', lease.ns, 'leaderId', lease.leader_id, 'term', lease.term)::text)
  FROM lease WHERE NOT lease.renewed
)
SELECT decided.ns IS NULL AS stale, decided.leader_id, decided.term, decided.live, decided.hand_over,
  COALESCE((SELECT NOT inserted FROM touch), decided.registered) AS registered,
  lease.term AS new_term, lease.renewed, (SELECT count(*) FROM announced) AS announced, ${d.instant(d.now.text)} AS db_now
FROM locked LEFT JOIN decided ON true LEFT JOIN lease ON true`,
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
    /**
     * Whether the upsert created the row, as the write itself tells (undefined on SQLite, where the
     * write lock held since the transaction's first write keeps the earlier read current): a read
     * before it may have seen a row that another transaction deleted in between. PostgreSQL: the
     * new version's `xmax` is 0 only for an insert; MySQL/MariaDB: one affected row is an insert
     * (an update of an existing row always changes it, `last_heartbeat_at` moves, and counts two).
     */
    async touchCandidate(m: EntityManager, ns: string, candidateId: string, expireSeconds: number, fields: CandidateFields = {}): Promise<boolean | undefined> {
      const upsert = candidateUpsert(ns, candidateId, expireSeconds, fields);
      switch (d.name) {
        case 'postgres': {
          const [row] = await execute<{ inserted?: unknown }>(context, m, sql`${upsert} RETURNING (xmax = 0) AS inserted`);
          return row?.inserted === true;
        }
        case 'mysql': {
          const result = (await executeRaw(context, m, upsert)) as { affectedRows?: unknown } | undefined;
          return Number(result?.affectedRows) === 1;
        }
        case 'sqlite':
          await execute(context, m, upsert);
          return undefined;
      }
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
     * transaction already wrote. `writeLockHeld`: this transaction already holds the row's
     * exclusive lock (SQLite: the database's; MySQL: `ensureLeaderRow` locked it).
     */
    async lockLeader(m: EntityManager, ns: string, mode: 'write' | 'read', writeLockHeld = false): Promise<LeaderRow | undefined> {
      return (await this.lockLeaderFor(m, ns, mode, writeLockHeld, undefined))?.row;
    },

    /**
     * {@link lockLeader}, plus the {@link Standing} of `candidateId` when given (what `elect`
     * decides by), read in the same statement.
     *
     * `live` is judged by the clock of after the lock: a locking read that waited for the row
     * while its lease ran out must not call that lease live. PostgreSQL computes a plain locking
     * SELECT's columns below the lock (before any wait), so the row is locked in a CTE and judged
     * by `clock_timestamp()` above it. MySQL/MariaDB fix `UTC_TIMESTAMP(6)` when a statement
     * starts, so the lock is taken first, by a statement that decides nothing, and the row is read
     * by the next one, which no longer waits.
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
      if (d.name === 'mysql' && !writeLockHeld) await execute(context, m, sql`SELECT ns FROM ${leaders} WHERE ns = ${ns} FOR UPDATE`);
      const standing = candidateId === undefined ? raw('') : sql`, ${selectStanding('l', candidateId)}`;
      let statement: SqlFragment;
      if (d.name === 'postgres') {
        const lock = raw(mode === 'read' ? 'FOR SHARE' : 'FOR UPDATE');
        statement = sql`WITH locked AS (SELECT ns, leader_id, term, lease_expires_at, updated_at FROM ${leaders} WHERE ns = ${ns} ${lock})
SELECT ${raw(selectLeader('l'))}${standing} FROM locked l`;
      } else {
        // MySQL/MariaDB take FOR UPDATE for both modes (`FOR SHARE` is MySQL 8 only; MariaDB has
        // LOCK IN SHARE MODE), and the fence writes the row anyway (see `fencesByWriting`).
        const lock = raw(d.rowLocks ? ' FOR UPDATE' : '');
        statement = sql`SELECT ${raw(selectLeader('l'))}${standing} FROM ${leaders} l WHERE l.ns = ${ns}${lock}`;
      }
      const [row] = await execute(context, m, statement);
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
     * namespace has no leader row yet, and `'stale'` when the row changed hands after the
     * statement's snapshot was taken (in both cases nothing was written: the caller runs the
     * statement again, or takes the locked path).
     *
     * It decides as the locked path does ({@link decide}, on the newest committed leader row, by the
     * database clock after the lock), clause by clause:
     * - `locked` reads the leader row `FOR UPDATE`: after waiting for another transaction's lock,
     *   its newest committed version (READ COMMITTED). `lease` and `touch` take their input rows
     *   from it, so the leader row is locked before the candidate row is written (lock order).
     * - Everything else the statement reads comes from its snapshot, taken when it began, before
     *   any wait: the history row the takeover closes and the candidates. `seen` therefore keeps
     *   the locked row only when its holder and term are the snapshot's. A takeover or a vacancy
     *   committed while the statement waited (whose history row, candidate changes and the term
     *   itself the snapshot does not show) makes it decide nothing, write nothing and answer
     *   `'stale'`; the next statement has a new snapshot. What else can have changed meanwhile:
     *   the holder's renewal (the lease end, read from the locked row) and candidates' heartbeats,
     *   which take no lock of the leader row on any path: the locked path reads them in its locking
     *   statement, whose snapshot is taken before its wait too.
     * - `live` (in `seen`) and the rivals' liveness (in `ranked`, a subquery run per locked row) are
     *   judged by `clock_timestamp()` evaluated after the lock was granted. (Not in `locked`
     *   itself: PostgreSQL computes a locking SELECT's columns before waiting for the lock when the
     *   holder leaves the row as it was, e.g. a fenced transaction's `FOR SHARE`.)
     * - `ranked` reads the caller's stored priority and eligibility and the highest priority of the
     *   other live eligible candidates in one aggregate over the namespace's candidate rows; with
     *   the options given, `decided` applies {@link decide}'s rule: renew, take a vacant or expired
     *   lease, or follow.
     * - `lease` writes the decision, and decides a renewal again by the clock of the write: a lease
     *   that ran out since `seen` is taken as term + 1 (or, when the caller should hand it over,
     *   not taken at all), never extended under its old term.
     * - History (see `history.ts`), only when the lease changed hands: `closed` ends the lapsed
     *   term at its lease's end, `opened` starts the new one, dated by the write that granted it.
     *   A renewal writes none of it.
     * - The announcement (pg_notify, delivered at commit) is sent only when the lease changed
     *   hands, with the same payload fields as {@link announce}.
     */
    electInOneStatement:
      d.name !== 'postgres'
        ? undefined
        : async (
            m: EntityManager,
            ns: string,
            candidateId: string,
            expireSeconds: number,
            fields: CandidateFields = {},
          ): Promise<ElectDecision | 'stale' | undefined> => {
            const [row] = await executeBound(context, m, electStatement(fields), {
              ns,
              id: candidateId,
              expire: expireSeconds,
              metadata: fields.metadataJson,
              priority: fields.priority ?? null,
              eligible: bool(fields.eligible),
            });
            if (!row) return undefined;
            if (row.stale === true) return 'stale';
            const leads = row.new_term !== null && row.new_term !== undefined;
            const renewed = leads && row.renewed === true;
            const leaderId = row.leader_id as string | null;
            return {
              leaderId: leads ? candidateId : row.live === true && leaderId !== candidateId ? leaderId : null,
              term: Number(leads ? row.new_term : row.term),
              isLeader: leads,
              acquired: leads && !renewed,
              handOver: renewed && row.hand_over === true,
              wasRegistered: row.registered === true,
              databaseNow: d.parseInstant(row.db_now) as Date,
            };
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
          const result = (await executeRaw(
            context,
            m,
            sql`UPDATE ${leaders} SET lease_expires_at = ${d.nowPlus(expireSeconds)}, updated_at = GREATEST(${d.now}, updated_at + INTERVAL 1 MICROSECOND) ${where}`,
          )) as { affectedRows?: unknown } | undefined;
          return Number(result?.affectedRows) > 0;
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
