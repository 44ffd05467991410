import type { EntityManager } from 'typeorm';
import { execute, executeBound } from '../../db/session';
import { prepare, raw, RawSql, slot, sql, SqlFragment } from '../../db/sql';
import type { LeaseChange } from '../../election/observe/listen-options';
import type { ElectDecision } from '../../election/rows';
import type { CandidateFields } from '../../election/validate';
import type { ElectMembers, ElectParts, SharedStore } from '../contract/store';
import { leaseAnnouncement } from './announce';
import { preparedByFields } from './by-fields';
import { standingOf } from './standing';
import { createPostgresRenew } from './renew';

/**
 * PostgreSQL's members of the single-namespace election (see `election/store.ts` for the shared
 * statements): the whole `elect` in one statement, LISTEN/NOTIFY announcements, a locking read
 * judged above its lock, and writes that tell what they did by RETURNING.
 */
export const postgresElect: ElectParts = { create: createPostgresElect };

function createPostgresElect(shared: SharedStore): ElectMembers {
  const { context, candidates, leaders, history, bool } = shared;
  const d = context.dialect;
  const announcement = leaseAnnouncement(context);

  /**
   * The text of {@link electInOneStatement}, rendered once per combination of the candidate
   * options a call gives (see `by-fields.ts`): a call only binds its values (`ns`, `id`,
   * `expire`, and the options), and runs as a named prepared statement.
   */
  const electStatement = preparedByFields(shared, ({ ns, me, later, columns, values, updated }) => {
    return prepare(
      sql`WITH peek AS MATERIALIZED (
  -- The leader row as the statement's snapshot shows it, without a lock, and the clock read
  -- right after that snapshot was taken.
  SELECT ns, leader_id, term, lease_expires_at, clock_timestamp() AS at FROM ${leaders} WHERE ns = ${ns}
), follows AS MATERIALIZED (
  -- A follower: an unexpired lease held by another candidate. It only heartbeats; it never
  -- queues for the leader row's lock. Only when the snapshot is the statement's own (peek).
  SELECT ns, leader_id, term, at FROM peek
  WHERE CAST(${slot('peek')} AS boolean) AND leader_id IS NOT NULL AND leader_id <> ${me} AND lease_expires_at > at
), locked AS (
  -- Everyone else locks the row. (The uncorrelated NOT EXISTS is a one-time filter: no row is
  -- scanned, hence none locked, when the caller follows.)
  SELECT ns, leader_id, term, lease_expires_at FROM ${leaders} WHERE ns = ${ns} AND NOT EXISTS (SELECT 1 FROM follows) FOR UPDATE
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
  FROM seen ${standingOf(candidates, 'seen', me)}
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
  SELECT ns, ${me}, clock_timestamp(), ${later}${values} FROM (SELECT ns FROM decided UNION ALL SELECT ns FROM follows) AS touched
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
  SELECT ${announcement(raw('lease.ns'), raw('lease.leader_id'), raw('lease.term'))}
  FROM lease WHERE NOT lease.renewed
)
SELECT false AS stale, f.leader_id, f.term, true AS live, false AS hand_over, (SELECT NOT inserted FROM touch) AS registered,
  NULL AS new_term, NULL AS renewed, 0 AS announced, ${d.instant('f.at')} AS db_now
FROM follows f
UNION ALL
SELECT decided.ns IS NULL AS stale, decided.leader_id, decided.term, decided.live, decided.hand_over,
  COALESCE((SELECT NOT inserted FROM touch), decided.registered) AS registered,
  lease.term AS new_term, lease.renewed, (SELECT count(*) FROM announced) AS announced, ${d.instant(d.now.text)} AS db_now
FROM locked LEFT JOIN decided ON true LEFT JOIN lease ON true`,
      d.placeholders,
      'gemstone_elect',
    );
  });

  return {
    /**
     * `elect` locks the leader row first and inserts it only for a new namespace (the lock of a
     * missing row finds nothing and takes no gap lock here), saving a statement on every renewal.
     */
    insertsLeaderRowFirst: false,

    /**
     * No separate follower read: the one statement (see {@link electInOneStatement}) answers a
     * follower from its snapshot before it would lock.
     */
    followerReadsFirst: false,

    /** The new version's `xmax` is 0 only for an insert: the write tells whether the row existed. */
    async touchCandidate(m: EntityManager, upsert: SqlFragment): Promise<boolean> {
      const [row] = await execute<{ inserted?: unknown }>(context, m, sql`${upsert} RETURNING (xmax = 0) AS inserted`);
      return row?.inserted === true;
    },

    /**
     * PostgreSQL computes a plain locking SELECT's columns below the lock (before any wait), so
     * the row is locked in a CTE (`FOR SHARE` to fence, `FOR UPDATE` where leadership may change
     * hands) and judged by `clock_timestamp()` above it.
     */
    async lockLeader(m: EntityManager, ns: string, mode: 'write' | 'read', _writeLockHeld: boolean, standing: RawSql | SqlFragment) {
      const lock = raw(mode === 'read' ? 'FOR SHARE' : 'FOR UPDATE');
      const statement = sql`WITH locked AS (SELECT ns, leader_id, term, lease_expires_at, updated_at FROM ${leaders} WHERE ns = ${ns} ${lock})
SELECT ${raw(shared.selectLeader('l'))}${standing} FROM locked l`;
      const [row] = await execute(context, m, statement);
      return row;
    },

    /** The renewal counted by RETURNING. */
    async renewIfLive(m: EntityManager, where: SqlFragment, expireSeconds: number): Promise<boolean> {
      const [row] = await execute(
        context,
        m,
        sql`WITH renewed AS (UPDATE ${leaders} SET lease_expires_at = ${d.nowPlus(expireSeconds)}, updated_at = ${d.now} ${where} RETURNING 1)
SELECT COUNT(*) AS n FROM renewed`,
      );
      return Number(row?.n) > 0;
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
     * - `peek` and `follows` (only with `followerReads`, i.e. outside a transaction of the
     *   caller's, so that the snapshot is the statement's own, taken when it began): when the
     *   snapshot shows an unexpired lease held by another candidate, judged by `clock_timestamp()`
     *   read after the snapshot was taken, the call follows: the lease was committed and
     *   unexpired at the snapshot's moment, and a follower's call writes only its own candidate
     *   row (no call changes leadership without the leader row's lock), so the call is
     *   linearized there, and `databaseNow` is that clock reading. Nothing else runs: `locked`
     *   locks no row (its `NOT EXISTS` is a one-time filter), so followers never queue for the
     *   lock that renewals and takeovers take — 64 callers of one namespace used to. Inside the
     *   caller's transaction the snapshot may be older than the statement (REPEATABLE READ), and
     *   the statement locks as below.
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
    electInOneStatement: async (
      m: EntityManager,
      ns: string,
      candidateId: string,
      expireSeconds: number,
      fields: CandidateFields = {},
      followerReads = false,
    ): Promise<ElectDecision | 'stale' | undefined> => {
      const [row] = await executeBound(context, m, electStatement(fields), {
        peek: followerReads,
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

    /** A leader's renewal in one statement that sends only what a renewal needs (see `renew.ts`). */
    renewInOneStatement: createPostgresRenew(shared),

    /** Announces a lease change to LISTENers (delivered when the transaction commits). */
    async announce(m: EntityManager, change: LeaseChange): Promise<void> {
      await execute(
        context,
        m,
        sql`SELECT ${announcement(sql`CAST(${change.ns} AS text)`, sql`CAST(${change.leaderId} AS text)`, sql`CAST(${change.term} AS bigint)`)}`,
      );
    },
  };
}
