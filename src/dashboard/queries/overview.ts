import type { DataSource } from 'typeorm';
import type { DbContext } from '../../db/context';
import { sqlBool } from '../../databases/dialect';
import { raw, sql, SqlFragment } from '../../db/sql';
import { CANDIDATE_TABLE, HISTORY_TABLE, LEADER_TABLE } from '../../election/schema';
import { parseMetadata, type CandidateMetadata } from '../../election/validate';
import { count, epochMs, inList, readWith } from './read';

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
 * steps: the names of its namespaces (`order`: LIMIT/OFFSET over the names, with a leader row's
 * columns or per-namespace counts where the order needs them), then those namespaces' rows and
 * counts (`rows`). Counts are correlated subqueries, each an index lookup of one namespace: a
 * join of grouped counts over every namespace is what made MariaDB's plan quadratic.
 */
export function overviewStatements(context: DbContext, settings: HealthSettings) {
  const d = context.dialect;
  const leaders = context.table(LEADER_TABLE);
  const candidates = context.table(CANDIDATE_TABLE);
  const history = context.table(HISTORY_TABLE);
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
    /** The names of one page's namespaces, in the page's order. */
    order(query: OverviewQuery): SqlFragment {
      return sql`SELECT n.ns AS ns FROM ${names()} n
LEFT JOIN ${leaders} l ON l.ns = n.ns${where(query.filter)}
ORDER BY ${order(query.sort, query.descending)}
${d.limit(query.limit, query.offset)}`;
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

    totals(filter: string): SqlFragment {
      return sql`SELECT COUNT(*) AS total, SUM(CASE WHEN ${live} THEN 0 ELSE 1 END) AS vacant,
  SUM(CASE WHEN ${recent} >= ${settings.flapTerms} THEN 1 ELSE 0 END) AS flapping, ${d.instant(d.now.text)} AS db_now
FROM ${names()} n
LEFT JOIN ${leaders} l ON l.ns = n.ns${where(filter)}`;
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

/** One page of the overview and the totals of the filter, by the database clock. */
export async function readOverview(dataSource: DataSource, statements: ReturnType<typeof overviewStatements>, query: OverviewQuery, settings: HealthSettings): Promise<Overview> {
  return readWith(dataSource, async (run, context) => {
    const [totals] = await run(statements.totals(query.filter));
    const names = (await run(statements.order(query))).map((row) => String(row.ns));
    const byName = new Map<string, Record<string, unknown>>();
    if (names.length > 0) for (const row of await run(statements.rows(inList(names)))) byName.set(String(row.ns), row);
    // A namespace that went away between the two reads is left out of the page.
    const rows = names.map((ns) => byName.get(ns)).filter((row): row is Record<string, unknown> => row !== undefined);
    return {
      dbNow: epochMs(context, totals?.db_now) ?? 0,
      total: count(totals?.total),
      vacant: count(totals?.vacant),
      flapping: count(totals?.flapping),
      offset: query.offset,
      limit: query.limit,
      rows: rows.map((row) => toSummary(context, row, settings)),
      flapWindowSeconds: settings.flapWindowSeconds,
      flapTerms: settings.flapTerms,
    };
  });
}
