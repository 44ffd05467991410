import type { DataSource } from 'typeorm';
import type { DbContext } from '../../db/context';
import { sqlBool } from '../../databases/dialect';
import { sql, SqlFragment } from '../../db/sql';
import { electionTables } from '../../election/tables';
import { parseMetadata, type CandidateMetadata } from '../../election/validate';
import { MAX_CANDIDATES_SHOWN } from '../options';
import { HealthSettings, NamespaceSummary, toSummary } from './overview';
import { epochMs, ReadBounds, boundedRead } from './read';

/** An active candidate as a namespace's page shows it; instants are epoch ms by the database clock. */
export interface CandidateView {
  candidateId: string;
  /** Holds the live lease. */
  leader: boolean;
  lastHeartbeatAt: number | null;
  heartbeatAgeMs: number | null;
  expiresAt: number | null;
  expiresInMs: number | null;
  priority: number;
  eligible: boolean;
  metadata: CandidateMetadata | null;
}

export interface NamespaceDetail extends HealthSettings {
  ns: string;
  dbNow: number;
  /** The leader row and health; null when the namespace has no leader row (only candidates, or nothing). */
  summary: NamespaceSummary | null;
  /** Active candidates, sorted by id; at most {@link MAX_CANDIDATES_SHOWN}. */
  candidates: CandidateView[];
  /** More active candidates exist than listed. */
  candidatesTruncated: boolean;
}

export function namespaceStatements(context: DbContext, settings: HealthSettings) {
  const { d, leaders, candidates, history } = electionTables(context);
  const live = sql`(l.leader_id IS NOT NULL AND l.lease_expires_at > ${d.now})`;
  return {
    leader(ns: string): SqlFragment {
      return sql`SELECT l.ns AS ns, l.leader_id AS leader_id, l.term AS term, CASE WHEN ${live} THEN 1 ELSE 0 END AS live,
  ${d.instant('l.lease_expires_at')} AS lease_expires_at, ${d.instant(d.now.text)} AS db_now,
  ${d.instant('lc.last_heartbeat_at')} AS leader_heartbeat_at, ${d.instant('lc.expires_at')} AS leader_expires_at, lc.metadata AS leader_metadata,
  (SELECT COUNT(*) FROM ${candidates} c WHERE c.ns = l.ns AND c.expires_at > ${d.now}) AS candidates,
  (SELECT COUNT(*) FROM ${history} h WHERE h.ns = l.ns AND h.ended_at > ${d.nowPlus(-settings.flapWindowSeconds)}) AS recent_terms
FROM ${leaders} l LEFT JOIN ${candidates} lc ON lc.ns = l.ns AND lc.candidate_id = l.leader_id
WHERE l.ns = ${ns}`;
    },

    candidates(ns: string): SqlFragment {
      return sql`SELECT candidate_id, ${d.instant('last_heartbeat_at')} AS last_heartbeat_at, ${d.instant('expires_at')} AS expires_at,
  priority, eligible, metadata, ${d.instant(d.now.text)} AS db_now
FROM ${candidates} WHERE ns = ${ns} AND expires_at > ${d.now}
ORDER BY candidate_id ${d.limit(MAX_CANDIDATES_SHOWN + 1)}`;
    },

    clock(): SqlFragment {
      return sql`SELECT ${d.instant(d.now.text)} AS db_now`;
    },
  };
}

/** A namespace's leader row, health and active candidates; stopped at the database as `bounds` says. */
export async function readNamespace(
  dataSource: DataSource,
  statements: ReturnType<typeof namespaceStatements>,
  ns: string,
  settings: HealthSettings,
  bounds: ReadBounds,
): Promise<NamespaceDetail> {
  return boundedRead(dataSource, bounds, async (run, context) => {
    const [leader] = await run(statements.leader(ns));
    const rows = await run(statements.candidates(ns));
    const dbNow = epochMs(context, (leader ?? rows[0] ?? (await run(statements.clock()))[0])?.db_now) ?? 0;
    const summary = leader ? toSummary(context, leader, settings) : null;
    const candidates = rows.slice(0, MAX_CANDIDATES_SHOWN).map((row): CandidateView => {
      const candidateId = String(row.candidate_id);
      const lastHeartbeatAt = epochMs(context, row.last_heartbeat_at);
      const expiresAt = epochMs(context, row.expires_at);
      return {
        candidateId,
        leader: summary?.leaderId === candidateId,
        lastHeartbeatAt,
        heartbeatAgeMs: lastHeartbeatAt === null ? null : Math.max(0, dbNow - lastHeartbeatAt),
        expiresAt,
        expiresInMs: expiresAt === null ? null : Math.max(0, expiresAt - dbNow),
        priority: Number(row.priority),
        eligible: sqlBool(row.eligible),
        metadata: parseMetadata(row.metadata),
      };
    });
    // Sorted here as well: collations differ between databases.
    candidates.sort((a, b) => (a.candidateId < b.candidateId ? -1 : a.candidateId > b.candidateId ? 1 : 0));
    return { ns, dbNow, summary, candidates, candidatesTruncated: rows.length > MAX_CANDIDATES_SHOWN, flapWindowSeconds: settings.flapWindowSeconds, flapTerms: settings.flapTerms };
  });
}
