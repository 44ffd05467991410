import type { DataSource, EntityManager } from 'typeorm';
import { contextOf, DbContext } from '../db/context';
import { sqlBool } from '../databases/dialect';
import { isMariadbServer, padded } from '../databases/mysql/session';
import { execute, inOneStatement, inTransaction } from '../db/session';
import { isBetterSqlite, runProgram, runSyncStep } from '../databases/sqlite/atomic';
import { raw, sql, SqlFragment } from '../db/sql';

import { GROUP_BATCH_SIZE } from './loop/group-options';
import type { VacateReason } from './observe/history';
import { CANDIDATE_TABLE, HISTORY_TABLE, LEADER_TABLE } from './schema';
import { decide, NOTIFY_CHANNEL } from './store';

/**
 * The statements of a {@link LeaderElectorGroup}: one tick campaigns for all of the group's
 * namespaces in one transaction (PostgreSQL: one statement), and one transaction vacates many.
 * Same protocol as `elect` (see `store.ts` and docs/protocol.md), namespace by namespace: the
 * database clock decides, nobody is preempted, the term goes up on each acquisition, the history
 * gets one row per term, leader rows are locked before candidate rows, in namespace order.
 */

/** What a tick campaigns with. `namespaces`: distinct, sorted by {@link compareNs}. */
export interface GroupElectInput {
  readonly namespaces: readonly string[];
  readonly candidateId: string;
  readonly expireSeconds: number;
  readonly priority: number;
  readonly eligible: boolean;
  /** Sent when registering (and after a candidate row went missing); undefined: keep what is stored. */
  readonly metadataJson: string | undefined;
  /** Acquire no more than this candidate's fair share (see {@link fairShare}). */
  readonly balance: boolean;
  /**
   * Leases given up (hand-over, resignation), vacated by the same transaction instead of being
   * renewed, each term closed with its reason; not among `namespaces`. PostgreSQL and MySQL only
   * (see {@link GroupStore.foldsVacates}).
   */
  readonly release?: ReadonlyMap<string, VacateReason>;
  /**
   * How long the tick waits for a lock on the leader row of a lease this candidate holds, live
   * (PostgreSQL and MySQL/MariaDB, in milliseconds; MySQL/MariaDB count lock waits in whole
   * seconds, at least one). Its own fenced transactions (`assertLeader`) lock those rows for a
   * moment, and such a row must still be renewed: the tick locks them first, in namespace order,
   * and waits, as an elector's renewal does; a lock held longer (a rival's transaction) makes the
   * tick run again at once without waiting for any row (see {@link GroupStore.elect}).
   * Undefined: never wait (such a row is left for the next tick).
   */
  readonly lockWaitMs?: number;
}

/** What the tick found for one namespace. */
export interface GroupNsOutcome {
  readonly ns: string;
  /** The leader after the tick; null when nobody holds an unexpired lease (or unknown). */
  readonly leaderId: string | null;
  /** The leader row's term; null when unknown (a racing first insert of the row won). */
  readonly term: number | null;
  readonly isLeader: boolean;
  /** The caller took a lease it did not hold (the term went up). */
  readonly acquired: boolean;
  /** The caller renewed a lease it should give up: not eligible, or outranked by a live eligible candidate. */
  readonly handOver: boolean;
}

export interface GroupElectOutcome {
  readonly outcomes: readonly GroupNsOutcome[];
  /**
   * The live eligible candidates of the group's namespaces at the highest priority among them
   * (this caller included when it is one), sorted: who the namespaces are balanced between.
   */
  readonly members: readonly string[];
  /** How many of the namespaces had no candidate row of the caller before the tick. */
  readonly unregistered: number;
  readonly databaseNow: Date;
  /** The leases of `release` vacated (held by the caller, lapsed ones too), with their terms. */
  readonly released?: ReadonlyArray<{ readonly ns: string; readonly term: number }>;
  /** The leases of `release` still held by the caller but locked by another transaction: not vacated, to retry. */
  readonly releaseSkipped?: readonly string[];
}

/** Namespace order of the lock: code points, as the binary collations of the tables sort. */
export function compareNs(a: string, b: string): number {
  return Buffer.compare(Buffer.from(a), Buffer.from(b));
}

/**
 * How many of `n` namespaces `me` should lead among `members`: ⌊n/k⌋, plus one for the first
 * `n mod k` members in id order; 0 when `me` is not a member.
 */
export function fairShare(n: number, members: readonly string[], me: string): number {
  const sorted = [...members].sort();
  const rank = sorted.indexOf(me);
  if (rank < 0) return 0;
  const k = sorted.length;
  return Math.floor(n / k) + (rank < n % k ? 1 : 0);
}

/**
 * A lock wait that ran out: PostgreSQL `lock_timeout` (55P03), MySQL/MariaDB
 * `innodb_lock_wait_timeout` (1205), MariaDB `max_statement_time` (1969).
 */
function isLockTimeout(error: unknown): boolean {
  const inner = ((error as { driverError?: unknown } | null)?.driverError ?? error) as { code?: unknown; errno?: unknown } | null;
  return inner?.code === '55P03' || Number(inner?.errno) === 1205 || Number(inner?.errno) === 1969;
}

function chunks<T>(items: readonly T[], size: number): T[][] {
  const out: T[][] = [];
  for (let i = 0; i < items.length; i += size) out.push(items.slice(i, i + size));
  return out;
}

/**
 * The items separated by commas, as a balanced tree of fragments: rendering recurses once per
 * level, so 10,000 items nest 14 deep rather than 10,000.
 */
function commaList(items: readonly unknown[]): SqlFragment {
  if (items.length <= 1) return sql`${items[0]}`;
  const half = Math.ceil(items.length / 2);
  return sql`${commaList(items.slice(0, half))}, ${commaList(items.slice(half))}`;
}

/** `(?, ?, …)` of the values, for `IN` (MySQL/MariaDB only: padded to a few lengths, see {@link padded}). */
function list(values: readonly unknown[]): SqlFragment {
  return sql`(${commaList(padded(values))})`;
}

export function createGroupStore(context: DbContext) {
  const { dialect: d } = context;
  const candidates = context.table(CANDIDATE_TABLE);
  const leaders = context.table(LEADER_TABLE);
  const history = context.table(HISTORY_TABLE);
  const leaderSchema = context.schemaName(LEADER_TABLE);
  const announcedSchema = leaderSchema === undefined ? raw('current_schema()') : sql`CAST(${leaderSchema} AS text)`;
  const announcedTable = sql`CAST(${context.tableName(LEADER_TABLE)} AS text)`;
  const bool = (value: boolean) => (d.name === 'postgres' ? value : value ? 1 : 0);
  const dataSource = context.dataSource;

  const parseJson = (value: unknown): unknown => (typeof value === 'string' ? JSON.parse(value) : value);

  // ---- PostgreSQL: one statement ----------------------------------------------------------------

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
), release_skipped AS (
  SELECT l.ns FROM ${leaders} l WHERE l.ns = ANY (CAST(${release.map(([ns]) => ns)} AS varchar[])) AND l.leader_id = ${me}
    AND NOT EXISTS (SELECT 1 FROM released k WHERE k.ns = l.ns)
), vacated_announced AS (
  SELECT pg_notify(CAST(${NOTIFY_CHANNEL} AS text), json_build_object('schema', ${announcedSchema}, 'table', ${announcedTable},
    'ns', v.ns, 'leaderId', NULL, 'term', v.term)::text) FROM vacated v
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
), unlocked AS (
  -- Held by someone else (not locked), as of the snapshot, and not in seen; a row skipped as
  -- locked, or that changed hands after the snapshot, is in neither (unknown).
  SELECT l.ns, l.leader_id, l.term FROM ${leaders} l
  WHERE l.ns = ANY (${nss}) AND l.leader_id IS NOT NULL AND l.leader_id <> ${me} AND l.lease_expires_at > clock_timestamp()
    AND NOT EXISTS (SELECT 1 FROM seen s WHERE s.ns = l.ns)
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
), closed AS (
  UPDATE ${history} AS h SET ended_at = x.old_lease, end_reason = CAST(${'expired'} AS varchar)
  FROM lease x WHERE NOT x.renewing AND x.old_leader IS NOT NULL
    AND h.ns = x.ns AND h.term = x.old_term AND h.ended_at IS NULL
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
  SELECT pg_notify(CAST(${NOTIFY_CHANNEL} AS text), json_build_object('schema', ${announcedSchema}, 'table', ${announcedTable},
    'ns', a.ns, 'leaderId', ${me}, 'term', a.term)::text) FROM acquired a
), result AS (
  -- The locked rows as decided and written (each taken one was written: it is locked), the created
  -- rows as inserted (a racing insert of the same row leaves it out: unknown), the others' rows.
  SELECT d.ns, CASE WHEN x.ns IS NOT NULL THEN ${me} WHEN d.live AND NOT d.takes THEN d.leader_id END AS leader_id,
    COALESCE(x.term, d.term) AS term,
    x.ns IS NOT NULL AS leads, COALESCE(NOT x.renewing, false) AS acquired, COALESCE(d.hand_over AND x.renewing, false) AS hand_over
  FROM decided d LEFT JOIN lease x ON x.ns = d.ns WHERE d.existing
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
  (SELECT count(*) FROM input i WHERE NOT EXISTS (SELECT 1 FROM ${candidates} c WHERE c.ns = i.ns AND c.candidate_id = ${me})) AS unregistered,
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

  // ---- MySQL/MariaDB: one transaction, a constant number of statements per batch ----------------

  async function electMysql(m: EntityManager, input: GroupElectInput, known: Set<string>): Promise<GroupElectOutcome> {
    const me = input.candidateId;
    const batches = chunks(input.namespaces, GROUP_BATCH_SIZE);
    // 0. The leases given up: vacated first, in the same transaction, rather than renewed.
    const released: Array<{ ns: string; term: number }> = [];
    const releaseSkipped: string[] = [];
    const release = [...(input.release ?? new Map<string, VacateReason>())].sort(([a], [b]) => compareNs(a, b));
    for (const batch of chunks(release, GROUP_BATCH_SIZE)) {
      const ours = await execute(context, m, sql`SELECT ns FROM ${leaders} WHERE ns IN ${list(batch.map(([ns]) => ns))} AND leader_id = ${me}`);
      const held = await execute(
        context,
        m,
        sql`SELECT ns, term FROM ${leaders} WHERE ns IN ${list(batch.map(([ns]) => ns))} AND leader_id = ${me} ORDER BY ns FOR UPDATE SKIP LOCKED`,
      );
      const lockedNs = new Set(held.map((r) => String(r.ns)));
      for (const r of ours) if (!lockedNs.has(String(r.ns))) releaseSkipped.push(String(r.ns));
      if (held.length === 0) continue;
      const reasons = new Map(batch);
      for (const reason of new Set(held.map((r) => reasons.get(String(r.ns))))) {
        const names = held.filter((r) => reasons.get(String(r.ns)) === reason).map((r) => String(r.ns));
        await execute(
          context,
          m,
          sql`UPDATE ${history} h JOIN ${leaders} l ON l.ns = h.ns AND l.term = h.term
SET h.end_reason = CASE WHEN l.lease_expires_at > ${d.now} THEN ${reason} ELSE ${'expired'} END,
  h.ended_at = CASE WHEN l.lease_expires_at > ${d.now} THEN ${d.now} ELSE l.lease_expires_at END
WHERE h.ns IN ${list(names)} AND h.ended_at IS NULL AND l.leader_id = ${me}`,
        );
      }
      const names = held.map((r) => String(r.ns));
      await execute(context, m, sql`UPDATE ${leaders} SET leader_id = NULL, lease_expires_at = NULL, updated_at = ${d.now} WHERE ns IN ${list(names)} AND leader_id = ${me}`);
      for (const r of held) released.push({ ns: String(r.ns), term: Number(r.term) });
    }
    // 1. Rows the group has not seen yet are created first (vacant; a locking read of a missing
    //    row would take gap locks), then every row is locked, in namespace order.
    for (const batch of batches) {
      const fresh = batch.filter((ns) => !known.has(ns));
      if (fresh.length === 0) continue;
      const values = commaList(padded(fresh).map((ns) => sql`(${ns}, NULL, NULL, ${d.now}, 0)`));
      await execute(context, m, sql`INSERT INTO ${leaders} (ns, leader_id, lease_expires_at, updated_at, term) VALUES ${values} ${d.insertIfAbsent(['ns'])}`);
    }
    type Row = { ns: string; leaderId: string | null; term: number; live: boolean; leaseExpired: boolean };
    const rows = new Map<string, Row>();
    // Rows this tick may change but found locked by another transaction: unknown this tick.
    const skipped = new Set<string>();
    let databaseNow: Date | undefined;
    const toRow = (r: Record<string, unknown>): Row => {
      const leaderId = (r.leader_id as string | null) ?? null;
      return { ns: String(r.ns), leaderId, term: Number(r.term), live: leaderId !== null && sqlBool(r.live), leaseExpired: leaderId !== null && !sqlBool(r.live) };
    };
    const liveCase = sql`CASE WHEN leader_id IS NOT NULL AND lease_expires_at > ${d.now} THEN 1 ELSE 0 END`;
    // A plain (non-locking) read first: rows held live by others are only reported, never locked,
    // so a follower never waits for a leader's renewal (nor makes it wait).
    const wantedByBatch: string[][] = [];
    const ownLive: string[] = [];
    for (const batch of batches) {
      const seen = await execute(
        context,
        m,
        sql`SELECT ns, leader_id, term, ${liveCase} AS live, ${d.instant(d.now.text)} AS db_now FROM ${leaders} WHERE ns IN ${list(batch)}`,
      );
      const wanted: string[] = [];
      for (const r of seen) {
        const row = toRow(r);
        known.add(row.ns);
        databaseNow ??= d.parseInstant(r.db_now) as Date;
        if (row.live && row.leaderId !== me) rows.set(row.ns, row);
        else wanted.push(row.ns);
        if (row.live && row.leaderId === me) ownLive.push(row.ns);
      }
      wantedByBatch.push(wanted);
    }
    // The leases this candidate holds, live: locked first, in namespace order, WAITING for a lock
    // another transaction holds (its own fenced transactions lock these rows and write them), each
    // wait bounded, for these statements only: MariaDB by `max_statement_time` (fractions of a
    // second), MySQL by `innodb_lock_wait_timeout` (whole seconds, one at least).
    if (input.lockWaitMs !== undefined && ownLive.length > 0) {
      const mariadb = await isMariadbServer(context.dataSource, m.queryRunner!);
      await execute(
        context,
        m,
        mariadb
          ? sql`SET @gemstone_wait_bound = @@SESSION.max_statement_time, SESSION max_statement_time = CAST(${input.lockWaitMs / 1000} AS DECIMAL(12, 6))`
          : sql`SET @gemstone_wait_bound = @@SESSION.innodb_lock_wait_timeout, SESSION innodb_lock_wait_timeout = CAST(${Math.max(1, Math.round(input.lockWaitMs / 1000))} AS UNSIGNED)`,
      );
      try {
        for (const batch of chunks(ownLive.sort(compareNs), GROUP_BATCH_SIZE)) {
          // Only the locks: the rows are read again, and judged by a later statement's clock, below.
          await execute(context, m, sql`SELECT ns FROM ${leaders} WHERE ns IN ${list(batch)} ORDER BY ns FOR UPDATE`);
        }
      } finally {
        await execute(context, m, mariadb ? sql`SET SESSION max_statement_time = @gemstone_wait_bound` : sql`SET SESSION innodb_lock_wait_timeout = @gemstone_wait_bound`);
      }
    }
    for (const wanted of wantedByBatch) {
      if (wanted.length === 0) continue;
      // Then the rows this tick may change (vacant, lapsed, ours), locked in namespace order and
      // re-checked on their newest version; SKIP LOCKED: a row another transaction holds is
      // left for the next tick rather than waited for (the rows locked above are this
      // transaction's: not skipped).
      const locked = await execute(
        context,
        m,
        sql`SELECT ns, leader_id, term, ${liveCase} AS live FROM ${leaders} WHERE ns IN ${list(wanted)}
  AND (leader_id IS NULL OR leader_id = ${me} OR lease_expires_at IS NULL OR lease_expires_at <= ${d.now}) ORDER BY ns FOR UPDATE SKIP LOCKED`,
      );
      for (const r of locked) rows.set(String(r.ns), toRow(r));
      for (const ns of wanted) if (!rows.has(ns)) skipped.add(ns);
    }
    // 2. The candidates of those namespaces, by a plain read (the leader rows are locked).
    const rival = new Map<string, number>();
    const others = new Map<string, number>();
    const registered = new Set<string>();
    for (const batch of batches) {
      const found = await execute(
        context,
        m,
        sql`SELECT ns, candidate_id, priority, CASE WHEN eligible AND expires_at > ${d.now} THEN 1 ELSE 0 END AS live_eligible
FROM ${candidates} WHERE ns IN ${list(batch)} AND (candidate_id = ${me} OR (eligible AND expires_at > ${d.now}))`,
      );
      for (const r of found) {
        const ns = String(r.ns);
        const id = String(r.candidate_id);
        if (id === me) {
          registered.add(ns);
          continue;
        }
        if (!sqlBool(r.live_eligible)) continue;
        const p = Number(r.priority);
        rival.set(ns, Math.max(rival.get(ns) ?? -Infinity, p));
        others.set(id, Math.max(others.get(id) ?? -Infinity, p));
      }
    }
    const members = membersOf(others, input);
    // 3. Decide, namespace by namespace, as `elect` does; balance caps the acquisitions.
    let held = 0;
    for (const row of rows.values()) if (row.live && row.leaderId === me) held++;
    let quota = input.balance ? Math.max(0, fairShare(input.namespaces.length, members, me) - held) : Infinity;
    const renew: string[] = [];
    const take: Row[] = [];
    const outcomes: GroupNsOutcome[] = [];
    for (const ns of input.namespaces) {
      const row = rows.get(ns);
      if (skipped.has(ns)) {
        outcomes.push({ ns, leaderId: null, term: null, isLeader: false, acquired: false, handOver: false });
        continue;
      }
      if (!row) {
        // Deleted behind our back after we saw it: created again by the next tick.
        known.delete(ns);
        outcomes.push({ ns, leaderId: null, term: null, isLeader: false, acquired: false, handOver: false });
        continue;
      }
      const standing = { registered: registered.has(ns), storedPriority: null, storedEligible: null, rivalPriority: rival.get(ns) ?? null };
      const { renewing, takes, handOver } = decide(row, me, standing, { priority: input.priority, eligible: input.eligible });
      if (renewing) {
        renew.push(ns);
        outcomes.push({ ns, leaderId: me, term: row.term, isLeader: true, acquired: false, handOver });
      } else if (takes && quota > 0) {
        quota--;
        take.push(row);
        outcomes.push({ ns, leaderId: me, term: row.term + 1, isLeader: true, acquired: true, handOver: false });
      } else {
        outcomes.push({ ns, leaderId: row.live ? row.leaderId : null, term: row.term, isLeader: false, acquired: false, handOver: false });
      }
    }
    // 4. Write: close lapsed terms, take, renew, open the new terms, heartbeat.
    const until = d.nowPlus(input.expireSeconds);
    for (const batch of chunks(take, GROUP_BATCH_SIZE)) {
      const lapsed = batch.filter((r) => r.leaderId !== null).map((r) => r.ns);
      if (lapsed.length > 0) {
        await execute(
          context,
          m,
          sql`UPDATE ${history} h JOIN ${leaders} l ON l.ns = h.ns AND l.term = h.term
SET h.ended_at = l.lease_expires_at, h.end_reason = ${'expired'}
WHERE h.ns IN ${list(lapsed)} AND h.ended_at IS NULL AND l.leader_id IS NOT NULL`,
        );
      }
      const names = batch.map((r) => r.ns);
      await execute(
        context,
        m,
        sql`UPDATE ${leaders} SET leader_id = ${me}, term = term + 1, lease_expires_at = ${until}, updated_at = ${d.now} WHERE ns IN ${list(names)}`,
      );
      await execute(
        context,
        m,
        sql`INSERT INTO ${history} (ns, term, leader_id, acquired_at, ended_at, end_reason)
SELECT l.ns, l.term, l.leader_id, l.updated_at, NULL, NULL FROM ${leaders} l WHERE l.ns IN ${list(names)}
${d.upsert(['ns', 'term'], ['leader_id', 'acquired_at', 'ended_at', 'end_reason'])}`,
      );
    }
    for (const batch of chunks(renew, GROUP_BATCH_SIZE)) {
      await execute(context, m, sql`UPDATE ${leaders} SET lease_expires_at = ${until}, updated_at = ${d.now} WHERE ns IN ${list(batch)} AND leader_id = ${me}`);
    }
    const metaColumn = raw(input.metadataJson === undefined ? '' : ', metadata');
    const updated = ['last_heartbeat_at', 'expires_at', 'priority', 'eligible', ...(input.metadataJson === undefined ? [] : ['metadata'])];
    for (const batch of batches) {
      const row = (ns: string) =>
        input.metadataJson === undefined
          ? sql`(${ns}, ${me}, ${d.now}, ${until}, ${input.priority}, ${bool(input.eligible)})`
          : sql`(${ns}, ${me}, ${d.now}, ${until}, ${input.priority}, ${bool(input.eligible)}, ${input.metadataJson})`;
      const values = commaList(padded(batch).map(row));
      await execute(
        context,
        m,
        sql`INSERT INTO ${candidates} (ns, candidate_id, last_heartbeat_at, expires_at, priority, eligible${metaColumn}) VALUES ${values}
${d.upsert(['ns', 'candidate_id'], updated)}`,
      );
    }
    if (!databaseNow) {
      const [clock] = await execute(context, m, sql`SELECT ${d.instant(d.now.text)} AS db_now`);
      databaseNow = d.parseInstant(clock?.db_now) as Date;
    }
    return { outcomes, members, unregistered: input.namespaces.length - registered.size, databaseNow, released, releaseSkipped };
  }

  /** The top-priority live eligible candidates (this one included when it qualifies), sorted. */
  function membersOf(others: Map<string, number>, input: GroupElectInput): string[] {
    let top = input.eligible ? input.priority : -Infinity;
    for (const p of others.values()) top = Math.max(top, p);
    const members = [...others].filter(([, p]) => p === top).map(([id]) => id);
    if (input.eligible && input.priority === top) members.push(input.candidateId);
    return members.sort();
  }

  // ---- SQLite: one program (see db/sqlite-atomic.ts) --------------------------------------------

  // The namespaces are ONE parameter, a JSON array read by json_each: no table to fill row by row.
  const inInput = (nsJson: string) => sql`IN (SELECT value FROM json_each(${nsJson}))`;
  // The clock once per statement (an uncorrelated subquery is evaluated once), not once per row.
  const nowOnce = sql`(SELECT ${d.now})`;
  const nowOnceText = `(SELECT ${d.now.text})`;

  /**
   * Runs a group program as one transaction that commits whole or changes nothing: on
   * better-sqlite3 as one synchronous step (prepared statements kept per connection under `key`,
   * another connection's lock briefly waited for, as the single elect does), on sqlite3 as one
   * `exec` by `runProgram`.
   */
  function runGroupProgram(key: string, statements: readonly SqlFragment[], waitMs: number | undefined): Promise<Record<string, unknown>[][]> {
    if (isBetterSqlite(dataSource)) {
      return runSyncStep(dataSource, (step) => statements.map((statement, i) => step.run(`${key}:${i}`, statement)), { transaction: true, waitMs });
    }
    return runProgram(dataSource, statements, { transaction: true, waitMs });
  }

  async function electSqlite(input: GroupElectInput, waitMs: number | undefined): Promise<GroupElectOutcome> {
    const me = input.candidateId;
    const nsJson = JSON.stringify(input.namespaces);
    const inNs = inInput(nsJson);
    const now = nowOnce;
    const until = sql`(SELECT ${d.nowPlus(input.expireSeconds)})`;
    const eligible = input.eligible ? 1 : 0;
    const over = (l: string) =>
      raw(`(${l}.leader_id IS NULL OR ${l}.lease_expires_at IS NULL OR (${l}.lease_expires_at <= ${nowOnceText}
  AND NOT EXISTS (SELECT 1 FROM ${history.text} h WHERE h.ns = ${l}.ns AND h.term = ${l}.term AND h.ended_at IS NULL)))`);
    const rivalOf = (l: string) =>
      sql`(SELECT MAX(c.priority) FROM ${candidates} c WHERE c.ns = ${raw(l)}.ns AND c.candidate_id <> ${me} AND c.eligible AND c.expires_at > ${now})`;
    const members = sql`WITH others AS (
  SELECT candidate_id, MAX(priority) AS p FROM ${candidates} WHERE ns ${inNs} AND candidate_id <> ${me} AND eligible AND expires_at > ${now}
  GROUP BY candidate_id
), top AS (
  SELECT MAX(p) AS p FROM (SELECT p FROM others UNION ALL SELECT ${input.priority} WHERE ${eligible} = 1)
), members AS (
  SELECT candidate_id FROM others WHERE p = (SELECT p FROM top)
  UNION ALL SELECT ${me} WHERE ${eligible} = 1 AND ${input.priority} = (SELECT p FROM top)
)`;
    const n = sql`CAST(${input.namespaces.length} AS INTEGER)`;
    const limit = input.balance
      ? sql`(${members} SELECT CASE WHEN NOT EXISTS (SELECT 1 FROM members WHERE candidate_id = ${me}) THEN 0
  ELSE MAX(0, ${n} / k + CASE WHEN rank < ${n} % k THEN 1 ELSE 0 END
    - (SELECT COUNT(*) FROM ${leaders} l WHERE l.ns ${inNs} AND l.leader_id = ${me} AND l.lease_expires_at > ${now})) END
  FROM (SELECT COUNT(*) AS k, COALESCE(SUM(candidate_id < ${me}), 0) AS rank FROM members))`
      : raw('-1');
    const metaColumn = raw(input.metadataJson === undefined ? '' : ', metadata');
    const metaValue = input.metadataJson === undefined ? sql`` : sql`, ${input.metadataJson}`;
    const metaSet = input.metadataJson === undefined ? sql`` : sql`, metadata = ${input.metadataJson}`;
    // Statements skipped by changes(): the statements of the program run together or not at all.
    const unless = (condition: SqlFragment) => sql`SELECT value FROM json_each(${nsJson}) WHERE ${condition}`;
    const statements = [
      // before: the leases the caller holds (the others cannot have been renewed), as ONE JSON
      // value: one row to hand to JavaScript instead of one per namespace.
      sql`SELECT json_group_object(l.ns, l.term) AS held FROM ${leaders} l WHERE l.ns ${inNs} AND l.leader_id = ${me} AND l.lease_expires_at > ${now}`,
      // Renewals first (the fair share counts what is held), each decided by the clock of this
      // statement: a lease that has run out is not renewed but taken over below, as a new term.
      sql`UPDATE ${leaders} SET lease_expires_at = ${until}, updated_at = ${now}
WHERE ns ${inNs} AND leader_id = ${me} AND lease_expires_at > ${now}`,
      // The leader rows the group has not created yet (vacant), unless the renewal just above
      // renewed every namespace (changes()): no row can be missing then.
      sql`INSERT INTO ${leaders} (ns, leader_id, lease_expires_at, updated_at, term)
SELECT i.value, NULL, NULL, ${now}, 0 FROM (${unless(sql`changes() < ${n}`)}) i
WHERE NOT EXISTS (SELECT 1 FROM ${leaders} l WHERE l.ns = i.value)
${d.insertIfAbsent(['ns'])}`,
      // Lapsed terms end at their lease's end (before anything changes hands).
      sql`UPDATE ${history} SET ended_at = (SELECT l.lease_expires_at FROM ${leaders} l WHERE l.ns = ${history}.ns), end_reason = ${'expired'}
WHERE ended_at IS NULL AND (ns, term) IN (SELECT l.ns, l.term FROM ${leaders} l
  WHERE l.ns ${inNs} AND l.leader_id IS NOT NULL AND l.lease_expires_at <= ${now})`,
      sql`UPDATE ${leaders} SET term = term + 1, leader_id = ${me}, lease_expires_at = ${until}, updated_at = ${now}
WHERE ns IN (SELECT l.ns FROM ${leaders} l WHERE l.ns ${inNs} AND ${over('l')} AND ${eligible} = 1
  AND COALESCE(${rivalOf('l')} > ${input.priority}, 0) = 0 ORDER BY l.ns LIMIT ${limit})`,
      // Only after acquisitions: changes() is the count of the UPDATE just before (a renewal opens no
      // term). Dated by that UPDATE's write (updated_at), not this statement's later clock.
      sql`INSERT INTO ${history} (ns, term, leader_id, acquired_at, ended_at, end_reason)
SELECT l.ns, l.term, l.leader_id, l.updated_at, NULL, NULL FROM ${leaders} l
WHERE l.ns IN (${unless(sql`changes() > 0`)}) AND l.leader_id = ${me} AND l.lease_expires_at > ${now}
  AND NOT EXISTS (SELECT 1 FROM ${history} h WHERE h.ns = l.ns AND h.term = l.term AND h.ended_at IS NULL)
${d.upsert(['ns', 'term'], ['leader_id', 'acquired_at', 'ended_at', 'end_reason'])}`,
      // The lapsed terms closed above that were not taken over are open again: D1 (ineligible), D2
      // (outranked) and a share cap leave a lapsed term open until someone takes the lease (T2
      // closes it then), as every other path does. Its leader row still names its holder and term.
      sql`UPDATE ${history} SET ended_at = NULL, end_reason = NULL
WHERE ended_at IS NOT NULL AND end_reason = ${'expired'} AND (ns, term) IN (SELECT l.ns, l.term FROM ${leaders} l
  WHERE l.ns ${inNs} AND l.leader_id IS NOT NULL AND l.lease_expires_at <= ${now} AND l.leader_id = ${history}.leader_id
    AND l.lease_expires_at = ${history}.ended_at)`,
      // Heartbeat of the caller's candidate rows, then the missing ones (none when the heartbeat
      // changed every namespace's row); the changes() of that INSERT counts them.
      sql`UPDATE ${candidates} SET last_heartbeat_at = ${now}, expires_at = ${until}, priority = ${input.priority}, eligible = ${eligible}${metaSet}
WHERE ns ${inNs} AND candidate_id = ${me}`,
      sql`INSERT INTO ${candidates} (ns, candidate_id, last_heartbeat_at, expires_at, priority, eligible${metaColumn})
SELECT i.value, ${me}, ${now}, ${until}, ${input.priority}, ${eligible}${metaValue} FROM (${unless(sql`changes() < ${n}`)}) i
WHERE NOT EXISTS (SELECT 1 FROM ${candidates} c WHERE c.ns = i.value AND c.candidate_id = ${me})
${d.insertIfAbsent(['ns', 'candidate_id'])}`,
      // after, in one row: the rows as JSON, how many candidate rows the INSERT above created, the
      // namespaces where a live eligible candidate outranks the caller (looked for only when one
      // does somewhere), the members, the clock.
      sql`${members} SELECT changes() AS unregistered,
  (SELECT json_group_array(json_array(l.ns, l.leader_id, l.term, CASE WHEN l.leader_id IS NOT NULL AND l.lease_expires_at > ${now} THEN 1 ELSE 0 END))
    FROM ${leaders} l WHERE l.ns ${inNs}) AS rows,
  (SELECT json_group_array(DISTINCT c.ns) FROM ${candidates} c
    WHERE c.ns IN (SELECT value FROM json_each(${nsJson}) WHERE (SELECT MAX(p) FROM others) > ${input.priority})
      AND c.candidate_id <> ${me} AND c.eligible AND c.expires_at > ${now} AND c.priority > ${input.priority}) AS outranked,
  (SELECT json_group_array(candidate_id) FROM members) AS members,
  ${d.now} AS db_now`,
    ];
    const variant = `${input.balance ? 'b' : ''}${input.metadataJson === undefined ? '' : 'm'}`;
    const results = await runGroupProgram(`group:elect:${variant}`, statements, waitMs);
    const held = JSON.parse(String(results[0]?.[0]?.held ?? '{}')) as Record<string, number>;
    const last = results[statements.length - 1]?.[0] ?? {};
    const unregistered = Number(last.unregistered ?? 0);
    const after = new Map<string, [string, string | null, number, number]>();
    for (const r of JSON.parse(String(last.rows ?? '[]')) as Array<[string, string | null, number, number]>) after.set(r[0], r);
    const outranked = new Set(JSON.parse(String(last.outranked ?? '[]')) as string[]);
    const memberIds = (JSON.parse(String(last.members ?? '[]')) as unknown[]).map(String).sort();
    const databaseNow = d.parseInstant(last.db_now) as Date;
    const outcomes = input.namespaces.map((ns): GroupNsOutcome => {
      const r = after.get(ns);
      if (!r) return { ns, leaderId: null, term: null, isLeader: false, acquired: false, handOver: false };
      const [, leaderId, term, liveFlag] = r;
      const live = leaderId !== null && liveFlag === 1;
      const isLeader = live && leaderId === me;
      return {
        ns,
        leaderId: live ? leaderId : null,
        term: Number(term),
        isLeader,
        acquired: isLeader && (Object.prototype.hasOwnProperty.call(held, ns) ? Number(held[ns]) !== Number(term) : true),
        handOver: isLeader && (!input.eligible || outranked.has(ns)),
      };
    });
    return { outcomes, members: memberIds, unregistered, databaseNow };
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
  SELECT pg_notify(CAST(${NOTIFY_CHANNEL} AS text), json_build_object('schema', ${announcedSchema}, 'table', ${announcedTable},
    'ns', v.ns, 'leaderId', NULL, 'term', v.term)::text) FROM vacated v
)
SELECT (SELECT json_agg(ns) FROM vacated WHERE live) AS vacated, (SELECT count(*) FROM announced) AS announced`,
    );
    return ((parseJson(row?.vacated) ?? []) as string[]).map(String);
  }

  async function vacateMysql(m: EntityManager, namespaces: readonly string[], me: string, reason: VacateReason, unregister: boolean): Promise<string[]> {
    const vacated: string[] = [];
    for (const batch of chunks(namespaces, GROUP_BATCH_SIZE)) {
      const held = await execute(
        context,
        m,
        sql`SELECT ns, CASE WHEN lease_expires_at > ${d.now} THEN 1 ELSE 0 END AS live FROM ${leaders}
WHERE ns IN ${list(batch)} AND leader_id = ${me} ORDER BY ns FOR UPDATE`,
      );
      if (held.length > 0) {
        const names = held.map((r) => String(r.ns));
        for (const r of held) if (sqlBool(r.live)) vacated.push(String(r.ns));
        await execute(
          context,
          m,
          sql`UPDATE ${history} h JOIN ${leaders} l ON l.ns = h.ns AND l.term = h.term
SET h.end_reason = CASE WHEN l.lease_expires_at > ${d.now} THEN ${reason} ELSE ${'expired'} END,
  h.ended_at = CASE WHEN l.lease_expires_at > ${d.now} THEN ${d.now} ELSE l.lease_expires_at END
WHERE h.ns IN ${list(names)} AND h.ended_at IS NULL AND l.leader_id = ${me}`,
        );
        await execute(
          context,
          m,
          sql`UPDATE ${leaders} SET leader_id = NULL, lease_expires_at = NULL, updated_at = ${d.now} WHERE ns IN ${list(names)} AND leader_id = ${me}`,
        );
      }
      if (unregister) await execute(context, m, sql`DELETE FROM ${candidates} WHERE ns IN ${list(batch)} AND candidate_id = ${me}`);
    }
    return vacated;
  }

  async function vacateSqlite(namespaces: readonly string[], me: string, reason: VacateReason, unregister: boolean, waitMs: number | undefined): Promise<string[]> {
    const inNs = inInput(JSON.stringify(namespaces));
    const statements = [
      sql`SELECT ns FROM ${leaders} WHERE ns ${inNs} AND leader_id = ${me} AND lease_expires_at > ${nowOnce}`,
      sql`UPDATE ${history} SET
  end_reason = (SELECT CASE WHEN l.lease_expires_at > ${nowOnce} THEN ${reason} ELSE ${'expired'} END FROM ${leaders} l WHERE l.ns = ${history}.ns),
  ended_at = (SELECT CASE WHEN l.lease_expires_at > ${nowOnce} THEN ${nowOnce} ELSE l.lease_expires_at END FROM ${leaders} l WHERE l.ns = ${history}.ns)
WHERE ended_at IS NULL AND (ns, term) IN (SELECT l.ns, l.term FROM ${leaders} l WHERE l.ns ${inNs} AND l.leader_id = ${me})`,
      sql`UPDATE ${leaders} SET leader_id = NULL, lease_expires_at = NULL, updated_at = ${nowOnce} WHERE ns ${inNs} AND leader_id = ${me}`,
      ...(unregister ? [sql`DELETE FROM ${candidates} WHERE ns ${inNs} AND candidate_id = ${me}`] : []),
    ];
    const results = await runGroupProgram(`group:vacate:${unregister ? 'u' : ''}`, statements, waitMs);
    return (results[0] ?? []).map((r) => String(r.ns));
  }

  return {
    /** Whether `elect` vacates {@link GroupElectInput.release} in the tick's own transaction (PostgreSQL, MySQL). */
    foldsVacates: d.name !== 'sqlite',

    /**
     * One tick for every namespace of the group, in one transaction (PostgreSQL: one statement).
     * With {@link GroupElectInput.lockWaitMs}: when a lock wait runs out (a rival's transaction
     * holds a row of a lease this candidate holds) or the waiting tick meets a deadlock, the
     * tick runs again at once without waiting for any leader row (a second transaction; the
     * first changed nothing), so the other namespaces are still renewed this tick.
     */
    async elect(
      input: GroupElectInput,
      state: { known: Set<string>; sqliteWaitMs?: number; /** Called before the rerun's transaction begins. */ beforeAttempt?: () => void },
    ): Promise<GroupElectOutcome> {
      if (input.namespaces.length === 0 && (input.release?.size ?? 0) === 0) {
        return { outcomes: [], members: [], unregistered: 0, databaseNow: await this.clock(state.sqliteWaitMs) };
      }
      const once = { conflictRetries: 0 };
      const skipping: GroupElectInput = { ...input, lockWaitMs: undefined };
      switch (d.name) {
        case 'postgres':
          if (input.lockWaitMs !== undefined) {
            try {
              return await inOneStatement(dataSource, undefined, (m) => electPostgres(m, input), once);
            } catch (error) {
              if (!isLockTimeout(error) && !d.isRetryableConflict(error)) throw error;
            }
          }
          state.beforeAttempt?.();
          return inOneStatement(dataSource, undefined, (m) => electPostgres(m, skipping));
        case 'mysql':
          if (input.lockWaitMs !== undefined) {
            try {
              return await inTransaction(dataSource, undefined, (m) => electMysql(m, input, state.known), once);
            } catch (error) {
              if (!isLockTimeout(error) && !d.isRetryableConflict(error)) throw error;
            }
          }
          state.beforeAttempt?.();
          return inTransaction(dataSource, undefined, (m) => electMysql(m, skipping, state.known));
        case 'sqlite':
          return electSqlite(input, state.sqliteWaitMs);
      }
    },

    /** Vacates the caller's leases of `namespaces` (and with `unregister` deletes its candidate rows) in one transaction. */
    async vacate(namespaces: readonly string[], me: string, reason: VacateReason, unregister: boolean, sqliteWaitMs?: number): Promise<string[]> {
      if (namespaces.length === 0) return [];
      const sorted = [...namespaces].sort(compareNs);
      switch (d.name) {
        case 'postgres':
          return inOneStatement(dataSource, undefined, (m) => vacatePostgres(m, sorted, me, reason, unregister));
        case 'mysql':
          return inTransaction(dataSource, undefined, (m) => vacateMysql(m, sorted, me, reason, unregister));
        case 'sqlite':
          return vacateSqlite(sorted, me, reason, unregister, sqliteWaitMs);
      }
    },

    /** The database clock (a group without namespaces still measures it). */
    async clock(sqliteWaitMs?: number): Promise<Date> {
      const statement = sql`SELECT ${d.instant(d.now.text)} AS db_now`;
      const rows =
        d.name === 'sqlite'
          ? ((await runProgram(dataSource, [statement], { transaction: false, waitMs: sqliteWaitMs }))[0] ?? [])
          : await execute(context, dataSource.manager, statement);
      return d.parseInstant(rows[0]?.db_now) as Date;
    },
  };
}

export type GroupStore = ReturnType<typeof createGroupStore>;

const stores = new WeakMap<DataSource, GroupStore>();

/** The group statements of a DataSource (built once). */
export function groupStoreOf(dataSource: DataSource): GroupStore {
  let store = stores.get(dataSource);
  if (!store) stores.set(dataSource, (store = createGroupStore(contextOf(dataSource))));
  return store;
}
