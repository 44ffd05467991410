import type { EntityManager } from 'typeorm';
import type { DbContext } from '../../db/context';
import { execute, inOneStatement, inTransaction } from '../../db/session';
import { raw, sql } from '../../db/sql';
import { compareNs, GroupElectInput, GroupElectOutcome, GroupNsOutcome, VacateReason } from '../../election/group-tick';
import { CANDIDATE_TABLE, HISTORY_TABLE, LEADER_TABLE } from '../../election/schema';
import { leaseAnnouncement } from './announce';
import type { GroupParts, GroupStatements } from '../contract/group';
import { postgresSession } from './connection';

/**
 * The group tick on PostgreSQL: ONE statement (after one that creates the leader rows of
 * namespaces not seen yet, see createRows; its CTEs vacate the leases given up, lock, decide,
 * write, open and close the terms and announce each change by NOTIFY), and one statement that
 * vacates many leases. A wait for a lock on the caller's own live lease is bounded by
 * `lock_timeout` (55P03), set for the statement's transaction only.
 */
export const postgresGroup: GroupParts = {
  foldsVacates: true,
  boundedLockWaits: true,
  isLockTimeout(error: unknown): boolean {
    const inner = ((error as { driverError?: unknown } | null)?.driverError ?? error) as { code?: unknown } | null;
    return inner?.code === '55P03';
  },
  statements: postgresGroupStatements,
};

function postgresGroupStatements(context: DbContext): GroupStatements {
  const { dialect: d } = context;
  const candidates = context.table(CANDIDATE_TABLE);
  const leaders = context.table(LEADER_TABLE);
  const history = context.table(HISTORY_TABLE);
  const announcement = leaseAnnouncement(context);
  const dataSource = context.dataSource;

  const parseJson = (value: unknown): unknown => (typeof value === 'string' ? JSON.parse(value) : value);

  async function electPostgres(m: EntityManager, input: GroupElectInput): Promise<GroupElectOutcome> {
    const wait = input.lockWaitMs;
    const me = sql`CAST(${input.candidateId} AS varchar)`;
    const eligible = sql`CAST(${input.eligible} AS boolean)`;
    const priority = sql`CAST(${input.priority} AS integer)`;
    const nss = raw('CAST((SELECT nss FROM params) AS varchar[])');
    const until = d.nowPlus(input.expireSeconds);
    const metaColumn = raw(input.metadataJson === undefined ? '' : ', metadata');
    const metaValue = input.metadataJson === undefined ? sql`` : sql`, ${input.metadataJson}`;
    const metaUpdate = raw(input.metadataJson === undefined ? '' : ', metadata = EXCLUDED.metadata');
    const release = [...(input.release ?? new Map<string, VacateReason>())].sort(([a], [b]) => compareNs(a, b));
    const [row] = await execute(
      context,
      m,
      sql`WITH params AS (
  SELECT CAST(${[...input.namespaces]} AS varchar[]) AS nss${
    wait === undefined
      ? sql``
      : sql`,
    -- For this transaction only: every lock wait of the statement from here on is bounded by it.
    set_config('lock_timeout', CAST(${`${Math.max(1, Math.round(wait))}ms`} AS text), true) AS lock_timeout`
  }
), released AS (
  -- The leases given up: vacated here rather than renewed (never waiting: a row locked by a
  -- takeover of a lapsed lease is left to it).
  SELECT l.ns, l.term, l.lease_expires_at, COALESCE(l.lease_expires_at > clock_timestamp(), false) AS live, r.reason
  FROM ${leaders} l JOIN unnest(CAST(${release.map(([ns]) => ns)} AS varchar[]), CAST(${release.map(([, reason]) => reason)} AS varchar[])) AS r (ns, reason)
    ON r.ns = l.ns
  WHERE l.leader_id = ${me} ORDER BY l.ns FOR UPDATE OF l SKIP LOCKED
), released_closed AS (
  UPDATE ${history} AS h SET ended_at = CASE WHEN k.live THEN clock_timestamp() ELSE k.lease_expires_at END,
    end_reason = CASE WHEN k.live THEN k.reason ELSE CAST(${'expired'} AS varchar) END
  FROM released k WHERE h.ns = k.ns AND h.term = k.term AND h.ended_at IS NULL
), vacated AS (
  UPDATE ${leaders} AS l SET leader_id = NULL, lease_expires_at = NULL, updated_at = clock_timestamp()
  FROM released k WHERE l.ns = k.ns RETURNING l.ns, l.term
), released_set AS MATERIALIZED (
  -- The released namespaces as one jsonb object (ns -> true), looked up by key below: a join of
  -- two of the statement's own results is planned from estimates of a row or two (the namespaces
  -- are a parameter the planner cannot count) as a nested loop, N x N comparisons.
  SELECT COALESCE(jsonb_object_agg(k.ns, true), CAST('{}' AS jsonb)) AS m FROM released k
), release_skipped AS (
  SELECT l.ns FROM ${leaders} l WHERE l.ns = ANY (CAST(${release.map(([ns]) => ns)} AS varchar[])) AND l.leader_id = ${me}
    AND (SELECT m FROM released_set) -> CAST(l.ns AS text) IS NULL
), vacated_announced AS (
  SELECT ${announcement(raw('v.ns'), raw('NULL'), raw('v.term'))} FROM vacated v
), input AS (
  SELECT DISTINCT x AS ns FROM unnest(${nss}) AS x
), snap AS (
  -- The rows as of the statement's snapshot (a plain read): what the history and candidates read here match.
  SELECT l.ns, l.leader_id, l.term FROM ${leaders} l WHERE l.ns = ANY (${nss})
), ${
        wait === undefined
          ? sql``
          : sql`own AS (
  -- The leases this candidate holds, live: locked first, in namespace order, WAITING for a lock
  -- another transaction holds (its own fenced transactions hold these rows for a moment, and a
  -- lease must not be lost to them), each wait bounded by lock_timeout (set in params first).
  SELECT l.ns FROM ${leaders} l
  WHERE l.ns = ANY (${nss}) AND l.leader_id = ${me} AND l.lease_expires_at > clock_timestamp()
    AND (SELECT lock_timeout FROM params) IS NOT NULL
  ORDER BY l.ns FOR UPDATE
), `
      }locked AS (
  -- SKIP LOCKED: the other rows are never waited for. A row locked by another transaction (a
  -- rival's takeover or tick, a vacate) is left for the next tick, so ticks of many namespaces do
  -- not convoy. With own: only once own has locked all its rows (the count), and own's rows,
  -- locked by this statement already, are not skipped.
  SELECT l.ns, l.leader_id, l.term, l.lease_expires_at FROM ${leaders} l
  WHERE l.ns = ANY (${nss})
    AND (l.leader_id IS NULL OR l.leader_id = ${me} OR l.lease_expires_at IS NULL OR l.lease_expires_at <= clock_timestamp())${
      wait === undefined ? sql`` : sql`
    AND (SELECT count(*) FROM own) >= 0`
    }
  ORDER BY l.ns FOR UPDATE SKIP LOCKED
), seen AS (
  -- Only rows whose term and holder are the snapshot's: a row taken over (or vacated) by a
  -- transaction that committed after the statement began is locked in its newest version, but
  -- that term's history row and the candidates as that transaction left them are invisible to
  -- this statement's snapshot; it is unknown this tick.
  SELECT k.ns, k.leader_id, k.term, k.lease_expires_at, COALESCE(k.leader_id IS NOT NULL AND k.lease_expires_at > clock_timestamp(), false) AS live
  FROM locked k JOIN snap s ON s.ns = k.ns AND s.term = k.term AND s.leader_id IS NOT DISTINCT FROM k.leader_id
), seen_set AS MATERIALIZED (
  -- seen's namespaces as one jsonb object (ns -> true), looked up by key (see released_set).
  SELECT COALESCE(jsonb_object_agg(s.ns, true), CAST('{}' AS jsonb)) AS m FROM seen s
), unlocked AS (
  -- Held by someone else (not locked), as of the snapshot, and not in seen; a row skipped as
  -- locked, or that changed hands after the snapshot, is in neither (unknown).
  SELECT l.ns, l.leader_id, l.term FROM ${leaders} l
  WHERE l.ns = ANY (${nss}) AND l.leader_id IS NOT NULL AND l.leader_id <> ${me} AND l.lease_expires_at > clock_timestamp()
    AND (SELECT m FROM seen_set) -> CAST(l.ns AS text) IS NULL
), missing AS (
  SELECT i.ns FROM input i WHERE NOT EXISTS (SELECT 1 FROM ${leaders} l WHERE l.ns = i.ns)
), others AS (
  SELECT c.candidate_id, max(c.priority) AS priority FROM ${candidates} c
  WHERE c.ns = ANY (${nss}) AND c.candidate_id <> ${me} AND c.eligible AND c.expires_at > clock_timestamp()
  GROUP BY c.candidate_id
), top AS (
  SELECT GREATEST((SELECT max(priority) FROM others), CASE WHEN ${eligible} THEN ${priority} END) AS priority
), members AS (
  SELECT candidate_id FROM others WHERE priority = (SELECT priority FROM top)
  UNION ALL SELECT ${me} WHERE ${eligible} AND ${priority} = (SELECT priority FROM top)
), quota AS (
  -- fairShare (election/group-tick.ts) of the top-priority members, less what the caller holds.
  SELECT CASE WHEN NOT CAST(${input.balance} AS boolean) THEN NULL
    WHEN NOT EXISTS (SELECT 1 FROM members WHERE candidate_id = ${me}) THEN 0
    ELSE GREATEST(0, m.n / m.k + CASE WHEN m.rank < m.n % m.k THEN 1 ELSE 0 END
      - (SELECT count(*) FROM seen WHERE live AND leader_id = ${me})) END AS n
  FROM (SELECT CAST(${input.namespaces.length} AS bigint) AS n, count(*) AS k,
    count(*) FILTER (WHERE candidate_id COLLATE "C" < ${me} COLLATE "C") AS rank FROM members) m
), base AS (
  -- Every namespace of the group but those held by others: the locked rows, and the missing ones.
  -- The highest priority of the other live eligible candidates, per namespace, by its index.
  SELECT s.ns, true AS existing, s.leader_id, s.term, s.lease_expires_at, s.live, (s.live AND s.leader_id = ${me}) AS renewing,
    COALESCE((SELECT max(c.priority) FROM ${candidates} c WHERE c.ns = s.ns AND c.candidate_id <> ${me} AND c.eligible
      AND c.expires_at > clock_timestamp()) > ${priority}, false) AS outranked
  FROM seen s
  UNION ALL
  SELECT mi.ns, false, NULL, 0, NULL, false, false,
    COALESCE((SELECT max(c.priority) FROM ${candidates} c WHERE c.ns = mi.ns AND c.candidate_id <> ${me} AND c.eligible
      AND c.expires_at > clock_timestamp()) > ${priority}, false)
  FROM missing mi
), numbered AS (
  SELECT b.*, (NOT b.live AND ${eligible} AND NOT b.outranked) AS open,
    row_number() OVER (PARTITION BY (NOT b.live AND ${eligible} AND NOT b.outranked) ORDER BY b.ns) AS i
  FROM base b
), decided AS (
  -- decide() of store.ts per namespace; balance caps the acquisitions at the quota, in namespace order.
  SELECT n.ns, n.existing, n.leader_id, n.term, n.lease_expires_at, n.live, n.renewing,
    (n.renewing OR (n.open AND ((SELECT n FROM quota) IS NULL OR n.i <= (SELECT n FROM quota)))) AS takes,
    (n.renewing AND (NOT ${eligible} OR n.outranked)) AS hand_over
  FROM numbered n
), lease AS (
  -- A renewal is decided again when it is written: the statement may have waited (in own, for
  -- another leader row's lock) since the rows were read, and a lease that ran out meanwhile is a takeover by the
  -- database clock (term + 1, the lapsed term closed below), never the same term resurrected.
  UPDATE ${leaders} AS l
  SET leader_id = ${me}, term = CASE WHEN d.renewing AND (d.hand_over OR l.lease_expires_at > clock_timestamp()) THEN d.term ELSE d.term + 1 END,
    lease_expires_at = ${until}, updated_at = clock_timestamp()
  FROM decided d WHERE l.ns = d.ns AND d.existing AND d.takes
    -- A lease to be given up that ran out meanwhile is not taken again (judged here once: one
    -- that passes is renewed under its term above).
    AND NOT (d.hand_over AND l.lease_expires_at <= clock_timestamp())
  RETURNING l.ns, l.term, l.term = d.term AS renewing, d.leader_id AS old_leader, d.term AS old_term, d.lease_expires_at AS old_lease,
    l.updated_at AS granted_at
), created AS (
  INSERT INTO ${leaders} (ns, leader_id, lease_expires_at, updated_at, term)
  SELECT d.ns, CASE WHEN d.takes THEN ${me} END, CASE WHEN d.takes THEN ${until} END, clock_timestamp(), CASE WHEN d.takes THEN 1 ELSE 0 END
  FROM decided d WHERE NOT d.existing ORDER BY d.ns
  ON CONFLICT (ns) DO NOTHING
  RETURNING ns, leader_id, term, updated_at AS granted_at
), touch AS (
  INSERT INTO ${candidates} (ns, candidate_id, last_heartbeat_at, expires_at, priority, eligible${metaColumn})
  SELECT i.ns, ${me}, clock_timestamp(), ${until}, ${priority}, ${eligible}${metaValue} FROM input i
  WHERE (SELECT count(*) FROM decided) >= 0
  ON CONFLICT (ns, candidate_id) DO UPDATE SET last_heartbeat_at = EXCLUDED.last_heartbeat_at, expires_at = EXCLUDED.expires_at,
    priority = EXCLUDED.priority, eligible = EXCLUDED.eligible${metaUpdate}
), taken_over AS MATERIALIZED (
  -- The leases taken from a previous holder (lapsed): their namespaces, and one jsonb object
  -- ns -> {term, ended_at} of the lapsed term (read back typed as the history row's columns).
  SELECT COALESCE(array_agg(x.ns), CAST('{}' AS varchar[])) AS nss,
    COALESCE(jsonb_object_agg(x.ns, jsonb_build_object('term', x.old_term, 'ended_at', x.old_lease)), CAST('{}' AS jsonb)) AS m
  FROM lease x WHERE NOT x.renewing AND x.old_leader IS NOT NULL
), closed AS (
  -- The lapsed term of each lease taken over is closed 'expired' at its lease's end. The history
  -- rows are selected by ns = ANY (the primary key's index) and their term looked up by key in
  -- one row of taken_over, not by joining lease: see released_set.
  UPDATE ${history} AS h SET ended_at = (jsonb_populate_record(CAST(NULL AS ${history}), t.m -> CAST(h.ns AS text))).ended_at,
    end_reason = CAST(${'expired'} AS varchar)
  FROM taken_over t WHERE h.ns = ANY (t.nss)
    AND h.term = (jsonb_populate_record(CAST(NULL AS ${history}), t.m -> CAST(h.ns AS text))).term AND h.ended_at IS NULL
), acquired AS (
  -- Dated by the write that granted the lease (clock_timestamp() moves on while a statement of
  -- thousands of rows runs): a term never begins after its lease's end.
  SELECT ns, term, granted_at FROM lease WHERE NOT renewing
  UNION ALL SELECT ns, term, granted_at FROM created WHERE leader_id IS NOT NULL
), opened AS (
  INSERT INTO ${history} (ns, term, leader_id, acquired_at, ended_at, end_reason)
  SELECT a.ns, a.term, ${me}, a.granted_at, NULL, NULL FROM acquired a
  ON CONFLICT (ns, term) DO UPDATE SET leader_id = EXCLUDED.leader_id, acquired_at = EXCLUDED.acquired_at, ended_at = NULL, end_reason = NULL
), announced AS (
  SELECT ${announcement(raw('a.ns'), sql`${me}`, raw('a.term'))} FROM acquired a
), written AS MATERIALIZED (
  -- lease's rows as one jsonb object ns -> [term, renewing], looked up by key in result instead of
  -- joining decided to lease (see released_set).
  SELECT COALESCE(jsonb_object_agg(x.ns, jsonb_build_array(x.term, x.renewing)), CAST('{}' AS jsonb)) AS m FROM lease x
), result AS (
  -- The locked rows as decided and written (each taken one was written: it is locked; x.w: the
  -- row lease wrote, NULL when it wrote none), the created rows as inserted (a racing insert of
  -- the same row leaves it out: unknown), the others' rows.
  SELECT d.ns, CASE WHEN x.w IS NOT NULL THEN ${me} WHEN d.live AND NOT d.takes THEN d.leader_id END AS leader_id,
    COALESCE(CAST(x.w ->> 0 AS bigint), d.term) AS term,
    x.w IS NOT NULL AS leads, COALESCE(NOT CAST(x.w ->> 1 AS boolean), false) AS acquired,
    COALESCE(d.hand_over AND CAST(x.w ->> 1 AS boolean), false) AS hand_over
  FROM decided d CROSS JOIN LATERAL (SELECT (SELECT m FROM written) -> CAST(d.ns AS text) AS w) x WHERE d.existing
  UNION ALL
  SELECT ns, leader_id, term, leader_id IS NOT NULL, leader_id IS NOT NULL, false FROM created
  UNION ALL
  SELECT ns, leader_id, term, false, false, false FROM unlocked
)
SELECT (SELECT json_agg(json_build_object('n', ns, 'l', leader_id, 't', term, 'a', leads, 'q', acquired, 'h', hand_over)) FROM result) AS results,
  (SELECT json_agg(candidate_id) FROM members) AS members,
  (SELECT count(*) FROM announced) AS announced,
  (SELECT json_agg(json_build_object('n', ns, 't', term)) FROM vacated) AS released,
  (SELECT count(*) FROM vacated_announced) AS vacated_announced,
  (SELECT json_agg(ns) FROM release_skipped) AS release_skipped,
  -- Counted by a subplan per namespace (its primary-key lookup), not an anti join the planner
  -- makes a nested loop over a scan of the candidate rows.
  (SELECT count(*) FILTER (WHERE NOT EXISTS (SELECT 1 FROM ${candidates} c WHERE c.ns = i.ns AND c.candidate_id = ${me})) FROM input i) AS unregistered,
  ${d.instant(d.now.text)} AS db_now`,
    );
    if (!row) throw new Error('gemstone-utils: the group election statement returned no row');
    const results = (parseJson(row.results) ?? []) as Array<{ n: string; l: string | null; t: number | string | null; a: boolean; q: boolean; h: boolean }>;
    const outcomes: GroupNsOutcome[] = results.map((r) => ({
      ns: r.n,
      leaderId: r.l,
      term: r.t === null ? null : Number(r.t),
      isLeader: r.a === true,
      acquired: r.q === true,
      handOver: r.h === true,
    }));
    // A row that changed hands while the lock was awaited, or whose racing first insert won: unknown.
    if (outcomes.length < input.namespaces.length) {
      const answered = new Set(outcomes.map((o) => o.ns));
      for (const ns of input.namespaces) {
        if (!answered.has(ns)) outcomes.push({ ns, leaderId: null, term: null, isLeader: false, acquired: false, handOver: false });
      }
    }
    return {
      outcomes,
      members: ((parseJson(row.members) ?? []) as string[]).map(String).sort(),
      unregistered: Number(row.unregistered),
      databaseNow: d.parseInstant(row.db_now) as Date,
      released: ((parseJson(row.released) ?? []) as Array<{ n: string; t: number | string }>).map((r) => ({ ns: r.n, term: Number(r.t) })),
      releaseSkipped: ((parseJson(row.release_skipped) ?? []) as string[]).map(String),
    };
  }

  // ---- vacating many leases at once ---------------------------------------------------------------

  /**
   * Vacates every lease of `namespaces` the caller holds (a lapsed one naming it too), closing
   * each term with `reason` (`expired` at its lease's end if it had lapsed), announcing each
   * vacancy (PostgreSQL); with `unregister` also deletes the caller's candidate rows. One
   * transaction (PostgreSQL: one statement). Returns the namespaces whose unexpired lease was vacated.
   */
  async function vacatePostgres(m: EntityManager, namespaces: readonly string[], me: string, reason: VacateReason, unregister: boolean): Promise<string[]> {
    const id = sql`CAST(${me} AS varchar)`;
    const nss = raw('CAST((SELECT nss FROM params) AS varchar[])');
    const [row] = await execute(
      context,
      m,
      sql`WITH params AS (
  SELECT CAST(${[...namespaces]} AS varchar[]) AS nss
), locked AS (
  SELECT ns, term, lease_expires_at, COALESCE(lease_expires_at > clock_timestamp(), false) AS live FROM ${leaders}
  WHERE ns = ANY (${nss}) AND leader_id = ${id} ORDER BY ns FOR UPDATE
), closed AS (
  UPDATE ${history} AS h SET ended_at = CASE WHEN k.live THEN clock_timestamp() ELSE k.lease_expires_at END,
    end_reason = CASE WHEN k.live THEN CAST(${reason} AS varchar) ELSE CAST(${'expired'} AS varchar) END
  FROM locked k WHERE h.ns = k.ns AND h.term = k.term AND h.ended_at IS NULL
), vacated AS (
  UPDATE ${leaders} AS l SET leader_id = NULL, lease_expires_at = NULL, updated_at = clock_timestamp()
  FROM locked k WHERE l.ns = k.ns RETURNING l.ns, l.term, k.live
), deleted AS (
  DELETE FROM ${candidates} WHERE CAST(${unregister} AS boolean) AND ns = ANY (${nss}) AND candidate_id = ${id}
    AND (SELECT count(*) FROM locked) >= 0
), announced AS (
  SELECT ${announcement(raw('v.ns'), raw('NULL'), raw('v.term'))} FROM vacated v
)
SELECT (SELECT json_agg(ns) FROM vacated WHERE live) AS vacated, (SELECT count(*) FROM announced) AS announced`,
    );
    return ((parseJson(row?.vacated) ?? []) as string[]).map(String);
  }

  /**
   * Creates the leader rows of namespaces the group has not seen yet (vacant, term 0), in
   * namespace order, before the tick's statement, in its transaction. Inside the one statement a
   * missing row's insert met another transaction's insert of the same row only after the
   * decision, which had already counted that namespace against the balance quota: the tick then
   * took nothing in its place (the differential tests found it). Here an insert that meets
   * another transaction's waits for it (bounded like the tick's other lock waits), and the
   * statement then decides on the committed row. Rows that exist are left out: their unique
   * check would wait for a transaction updating them.
   */
  async function createRows(m: EntityManager, fresh: readonly string[], wait: number | undefined): Promise<void> {
    const sorted = [...fresh].sort(compareNs);
    await execute(
      context,
      m,
      sql`WITH params AS (
  SELECT ${
    wait === undefined ? sql`NULL` : sql`set_config('lock_timeout', CAST(${`${Math.max(1, Math.round(wait))}ms`} AS text), true)`
  } AS lock_timeout
)
INSERT INTO ${leaders} (ns, leader_id, lease_expires_at, updated_at, term)
SELECT x.ns, NULL, NULL, clock_timestamp(), 0 FROM unnest(CAST(${sorted} AS varchar[])) WITH ORDINALITY AS x (ns, i) CROSS JOIN params
-- Only rows missing from the snapshot: an insert that conflicts with an existing row another
-- transaction is updating would wait for that transaction.
WHERE NOT EXISTS (SELECT 1 FROM ${leaders} l WHERE l.ns = x.ns)
ORDER BY x.i
ON CONFLICT (ns) DO NOTHING`,
    );
  }

  return {
    // One statement once every row exists; a tick with namespaces not seen yet creates their rows
    // first, in the same transaction (see createRows).
    elect: async (input, known, retries) => {
      const fresh = input.namespaces.filter((ns) => !known.has(ns));
      // The one-statement path needs what a DataSource's connections are (learnt once, by one
      // statement of its own): learnt on this tick, which sends more than one statement anyway,
      // so that no later tick sends two.
      if (fresh.length > 0) await postgresSession.outsideIsReadCommitted(context);
      const outcome =
        fresh.length === 0
          ? await inOneStatement(dataSource, undefined, (m) => electPostgres(m, input), retries)
          : await inTransaction(
              dataSource,
              undefined,
              async (m) => {
                await createRows(m, fresh, input.lockWaitMs);
                return electPostgres(m, input);
              },
              retries,
            );
      for (const ns of fresh) known.add(ns);
      return outcome;
    },
    vacate: (namespaces, me, reason, unregister) => inOneStatement(dataSource, undefined, (m) => vacatePostgres(m, namespaces, me, reason, unregister)),
    read: (statement) => execute(context, dataSource.manager, statement),
  };
}
