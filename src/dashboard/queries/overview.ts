import type { DataSource } from 'typeorm';
import type { DbContext } from '../../db/context';
import { sqlBool } from '../../databases/dialect';
import { raw, sql, SqlFragment } from '../../db/sql';
import { electionTables } from '../../election/tables';
import { parseMetadata, type CandidateMetadata } from '../../election/validate';
import { count, epochMs, inList, ReadBounds, boundedRead } from './read';
import { MAX_OVERVIEW_SNAPSHOTS } from '../options';
import { IntervalReads } from './snapshots';

/** The orders the overview offers. `health`: vacant first, then flapping, then the soonest lease end (an overdue renewal). */
export const OVERVIEW_SORTS = ['ns', 'term', 'lease', 'candidates', 'changes', 'health'] as const;
export type OverviewSort = (typeof OVERVIEW_SORTS)[number];

/** One page of the overview. */
export interface OverviewQuery {
  /** Only namespaces containing this text, ignoring ASCII case; '' for all. */
  readonly filter: string;
  readonly sort: OverviewSort;
  readonly descending: boolean;
  readonly offset: number;
  readonly limit: number;
}

/** How the overview judges a namespace. */
export interface HealthSettings {
  readonly flapWindowSeconds: number;
  readonly flapTerms: number;
}

/** A namespace as the overview shows it; instants are epoch ms by the database clock. */
export interface NamespaceSummary {
  ns: string;
  /** The holder of the unexpired lease; null when vacant or expired. */
  leaderId: string | null;
  /** The leader row's term; null when the namespace has only candidates. */
  term: number | null;
  live: boolean;
  /** The end of the latest lease, also after it ran out (vacated leases have none). */
  leaseExpiresAt: number | null;
  /** Lease left by the database clock; null without a live lease. */
  leaseLeftMs: number | null;
  /** The leader's lease length (its candidate row's expiry period); null when unknown. */
  leaseMs: number | null;
  /** Active candidates. */
  candidates: number;
  /** Terms that ended within the flap window. */
  recentTerms: number;
  /** No live lease. */
  vacant: boolean;
  /** Less than half of the lease is left: a renewal is overdue. */
  expiring: boolean;
  /** `recentTerms` reached the flap threshold. */
  flapping: boolean;
  leaderMetadata: CandidateMetadata | null;
}

export interface Overview extends HealthSettings {
  dbNow: number;
  /** Namespaces matching the filter (all pages). */
  total: number;
  /** Of those, without a live lease. */
  vacant: number;
  /** Of those, flapping. */
  flapping: number;
  offset: number;
  limit: number;
  rows: NamespaceSummary[];
}

/**
 * The statements of the overview, built once per DataSource and settings. A page is read in two
 * parts. The totals and the order of a filter need every namespace: `snapshot` reads them, the
 * names of the matching namespaces in the page's order with what the totals count, and is shared
 * for an interval by every page of that filter and order (see {@link readOverview}). The page's
 * own rows and counts are read by `rows`, for its names only. Counts are correlated subqueries,
 * each an index lookup of one namespace: a join of grouped counts over every namespace is what
 * made MariaDB's plan quadratic.
 */
export function overviewStatements(context: DbContext, settings: HealthSettings) {
  const { d, leaders, candidates, history } = electionTables(context);
  const live = sql`(l.leader_id IS NOT NULL AND l.lease_expires_at > ${d.now})`;
  const liveRank = sql`CASE WHEN ${live} THEN 1 ELSE 0 END`;
  const candidateCount = sql`(SELECT COUNT(*) FROM ${candidates} cc WHERE cc.ns = n.ns AND cc.expires_at > ${d.now})`;
  const recent = sql`(SELECT COUNT(*) FROM ${history} h WHERE h.ns = n.ns AND h.ended_at > ${d.nowPlus(-settings.flapWindowSeconds)})`;
  // A namespace exists while it has a leader row or an active candidate.
  const names = (only?: SqlFragment) =>
    only === undefined
      ? sql`(SELECT ns FROM ${leaders} UNION SELECT ns FROM ${candidates} WHERE expires_at > ${d.now})`
      : sql`(SELECT ns FROM ${leaders} WHERE ns IN ${only} UNION SELECT ns FROM ${candidates} WHERE ns IN ${only} AND expires_at > ${d.now})`;
  const where = (filter: string) =>
    filter === '' ? raw('') : sql`
WHERE LOWER(n.ns) LIKE ${`%${filter.toLowerCase().replace(/[!%_]/g, '!$&')}%`} ESCAPE '!'`;

  const order = (sort: OverviewSort, descending: boolean): SqlFragment => {
    const dir = raw(descending ? 'DESC' : 'ASC');
    const leaseEnd = sql`CASE WHEN l.lease_expires_at IS NULL THEN 0 ELSE 1 END ${dir}, l.lease_expires_at ${dir}`;
    switch (sort) {
      case 'ns':
        return sql`n.ns ${dir}`;
      case 'term':
        return sql`COALESCE(l.term, 0) ${dir}, n.ns`;
      case 'lease':
        return sql`${liveRank} ${dir}, ${leaseEnd}, n.ns`;
      case 'candidates':
        return sql`${candidateCount} ${dir}, n.ns`;
      case 'changes':
        return sql`${recent} ${dir}, n.ns`;
      case 'health':
        return sql`${liveRank} ${dir}, CASE WHEN ${recent} >= ${settings.flapTerms} THEN 0 ELSE 1 END ${dir}, ${leaseEnd}, n.ns`;
    }
  };

  return {
    /**
     * Every namespace matching `filter`, in the order of `sort`: its name, whether its lease is
     * live and whether it flaps (what the totals count).
     */
    snapshot(filter: string, sort: OverviewSort, descending: boolean): SqlFragment {
      return sql`SELECT n.ns AS ns, ${liveRank} AS live, CASE WHEN ${recent} >= ${settings.flapTerms} THEN 1 ELSE 0 END AS flapping
FROM ${names()} n
LEFT JOIN ${leaders} l ON l.ns = n.ns${where(filter)}
ORDER BY ${order(sort, descending)}`;
    },

    /** The rows of the namespaces `list` (an `inList`), in no particular order. */
    rows(list: SqlFragment): SqlFragment {
      return sql`SELECT n.ns AS ns, l.leader_id AS leader_id, l.term AS term, ${liveRank} AS live,
  ${d.instant('l.lease_expires_at')} AS lease_expires_at, ${d.instant(d.now.text)} AS db_now,
  ${d.instant('lc.last_heartbeat_at')} AS leader_heartbeat_at, ${d.instant('lc.expires_at')} AS leader_expires_at, lc.metadata AS leader_metadata,
  ${candidateCount} AS candidates, ${recent} AS recent_terms
FROM ${names(list)} n
LEFT JOIN ${leaders} l ON l.ns = n.ns
LEFT JOIN ${candidates} lc ON lc.ns = l.ns AND lc.candidate_id = l.leader_id`;
    },

    /** The database clock alone (a page without rows). */
    clock(): SqlFragment {
      return sql`SELECT ${d.instant(d.now.text)} AS db_now`;
    },
  };
}

/** A row of {@link overviewStatements}' page (or a namespace's leader read) as the overview shows it. */
export function toSummary(context: DbContext, row: Record<string, unknown>, settings: HealthSettings): NamespaceSummary {
  const live = sqlBool(row.live);
  const now = epochMs(context, row.db_now);
  const leaseExpiresAt = epochMs(context, row.lease_expires_at);
  const heartbeat = epochMs(context, row.leader_heartbeat_at);
  const candidateExpiry = epochMs(context, row.leader_expires_at);
  // The leader's candidate row is touched with the lease's own length at every renewal.
  const leaseMs = live && heartbeat !== null && candidateExpiry !== null ? candidateExpiry - heartbeat : null;
  const leaseLeftMs = live && leaseExpiresAt !== null && now !== null ? Math.max(0, leaseExpiresAt - now) : null;
  const recentTerms = count(row.recent_terms);
  return {
    ns: String(row.ns),
    leaderId: live ? String(row.leader_id) : null,
    term: row.term === null || row.term === undefined ? null : Number(row.term),
    live,
    leaseExpiresAt,
    leaseLeftMs,
    leaseMs,
    candidates: count(row.candidates),
    recentTerms,
    vacant: !live,
    expiring: leaseLeftMs !== null && leaseMs !== null && leaseLeftMs < leaseMs / 2,
    flapping: recentTerms >= settings.flapTerms,
    leaderMetadata: live ? parseMetadata(row.leader_metadata) : null,
  };
}

/**
 * The totals and the order of one filter and order: every matching namespace's name, in order,
 * read once per interval for all pages (see {@link OverviewSnapshots}).
 */
export interface OverviewSnapshot {
  readonly names: readonly string[];
  readonly total: number;
  readonly vacant: number;
  readonly flapping: number;
}

/** The snapshots of one DataSource's overview, each shared for one interval. */
export type OverviewSnapshots = IntervalReads<OverviewSnapshot>;

/** Snapshots good for `intervalMs` (the dashboard's `pollMs`), at most {@link MAX_OVERVIEW_SNAPSHOTS}. */
export function overviewSnapshots(intervalMs: number): OverviewSnapshots {
  return new IntervalReads<OverviewSnapshot>(intervalMs, MAX_OVERVIEW_SNAPSHOTS);
}

function readSnapshot(dataSource: DataSource, statements: ReturnType<typeof overviewStatements>, query: OverviewQuery, bounds: ReadBounds): Promise<OverviewSnapshot> {
  return boundedRead(dataSource, bounds, async (run) => {
    const names: string[] = [];
    let vacant = 0;
    let flapping = 0;
    for (const row of await run(statements.snapshot(query.filter, query.sort, query.descending))) {
      names.push(String(row.ns));
      if (!sqlBool(row.live)) vacant++;
      if (sqlBool(row.flapping)) flapping++;
    }
    return { names, total: names.length, vacant, flapping };
  });
}

/**
 * One page of the overview. The totals and the order come from the snapshot of the page's filter
 * and order (read when there is none younger than one interval, shared with every page of them);
 * the page's rows are read now, for its names only. So a page costs its rows' read, and every
 * namespace is read at most once per interval per filter and order. Namespaces that appeared
 * since the snapshot show from the next one; one that went away since is left out of the page.
 * The reads are stopped at the database as `bounds` says; a snapshot's, which other pages,
 * requests and streams share, once every one waiting for it has gone (see {@link IntervalReads}).
 */
export async function readOverview(
  dataSource: DataSource,
  statements: ReturnType<typeof overviewStatements>,
  snapshots: OverviewSnapshots,
  query: OverviewQuery,
  settings: HealthSettings,
  bounds: ReadBounds,
): Promise<Overview> {
  const key = JSON.stringify([query.filter, query.sort, query.descending]);
  const snapshot = await snapshots.get(key, (signal) => readSnapshot(dataSource, statements, query, { ...bounds, signal }), bounds.signal ?? new AbortController().signal);
  const names = snapshot.names.slice(query.offset, query.offset + query.limit);
  return boundedRead(dataSource, bounds, async (run, context) => {
    const byName = new Map<string, Record<string, unknown>>();
    if (names.length > 0) for (const row of await run(statements.rows(inList(names)))) byName.set(String(row.ns), row);
    const rows = names.map((ns) => byName.get(ns)).filter((row): row is Record<string, unknown> => row !== undefined);
    const [clock] = rows.length > 0 ? rows : await run(statements.clock());
    return {
      dbNow: epochMs(context, clock?.db_now) ?? 0,
      total: snapshot.total,
      vacant: snapshot.vacant,
      flapping: snapshot.flapping,
      offset: query.offset,
      limit: query.limit,
      rows: rows.map((row) => toSummary(context, row, settings)),
      flapWindowSeconds: settings.flapWindowSeconds,
      flapTerms: settings.flapTerms,
    };
  });
}
