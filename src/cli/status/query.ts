import type { DataSource } from 'typeorm';
import { sqlBool } from '../../databases/dialect';
import { execute, withManager } from '../../db/session';
import { raw, sql } from '../../db/sql';
import { CANDIDATE_TABLE, LEADER_TABLE } from '../../election/schema';
import { parseMetadata, type CandidateMetadata } from '../../election/validate';
import { MissingTablesError } from '../errors';
import { naturalCompare } from '../format';
import { isMissingTable } from '../target';

/** One active candidate as `status` shows it. */
export interface CandidateStatus {
  candidateId: string;
  /** Holds the live lease. */
  leader: boolean;
  priority: number;
  /** False: it observes, never leads. */
  eligible: boolean;
  /** What it said about itself (`{ host, pid }` for a `LeaderElector` by default); null if nothing. */
  metadata: CandidateMetadata | null;
  /** Milliseconds until its candidate row expires, by the database clock. */
  expiresInMs: number | null;
}

/** One namespace as `status` shows it. Every instant and duration comes from the database clock. */
export interface NamespaceStatus {
  ns: string;
  /** The holder of the unexpired lease; null when vacant or expired. */
  leaderId: string | null;
  /** The leader row's term (the fencing token of the latest leadership); null without a leader row. */
  term: number | null;
  /** Milliseconds until the lease expires, by the database clock; null without a live lease. */
  leaseLeftMs: number | null;
  /** Candidates with `expires_at > now`, sorted. */
  candidates: string[];
  /** The same candidates with priority, eligibility and metadata, sorted by id. */
  candidateDetails: CandidateStatus[];
}

/** The namespaces, with the database clock at the time of reading (epoch ms). */
export interface StatusSnapshot {
  dbNowMs: number;
  namespaces: NamespaceStatus[];
}

/**
 * Reads every namespace (or one) from the election tables. A namespace appears when it has a
 * leader row or an active candidate.
 */
export async function readStatus(dataSource: DataSource, ns?: string): Promise<NamespaceStatus[]> {
  return (await readSnapshot(dataSource, ns)).namespaces;
}

/** {@link readStatus} plus the database clock. */
export async function readSnapshot(dataSource: DataSource, ns?: string): Promise<StatusSnapshot> {
  try {
    return await withManager(dataSource, undefined, async (m, context) => {
      const d = context.dialect;
      const [clockRow] = await execute(context, m, sql`SELECT ${d.instant(d.now.text)} AS db_now`);
      const dbNowMs = d.parseInstant(clockRow?.db_now)?.getTime() ?? Number.NaN;
      const leaders = context.table(LEADER_TABLE);
      const candidates = context.table(CANDIDATE_TABLE);
      const onlyNs = ns === undefined ? raw('') : sql` WHERE ns = ${ns}`;
      const andNs = ns === undefined ? raw('') : sql` AND ns = ${ns}`;
      const leaderRows = await execute(
        context,
        m,
        sql`SELECT ns, leader_id, term,
  CASE WHEN leader_id IS NOT NULL AND lease_expires_at > ${d.now} THEN 1 ELSE 0 END AS live,
  ${d.instant('lease_expires_at')} AS lease_expires_at, ${d.instant(d.now.text)} AS db_now
FROM ${leaders}${onlyNs}`,
      );
      const candidateRows = await execute<Record<string, unknown>>(
        context,
        m,
        sql`SELECT ns, candidate_id, priority, eligible, metadata, ${d.instant('expires_at')} AS expires_at
FROM ${candidates} WHERE expires_at > ${d.now}${andNs}`,
      );

      const byNs = new Map<string, NamespaceStatus>();
      const entry = (name: string) => {
        let status = byNs.get(name);
        if (!status) byNs.set(name, (status = { ns: name, leaderId: null, term: null, leaseLeftMs: null, candidates: [], candidateDetails: [] }));
        return status;
      };
      for (const row of leaderRows) {
        const status = entry(String(row.ns));
        status.term = Number(row.term);
        if (sqlBool(row.live)) {
          status.leaderId = String(row.leader_id);
          const expires = d.parseInstant(row.lease_expires_at);
          const now = d.parseInstant(row.db_now);
          status.leaseLeftMs = expires && now ? Math.max(0, expires.getTime() - now.getTime()) : null;
        }
      }
      for (const row of candidateRows) {
        const status = entry(String(row.ns));
        const candidateId = String(row.candidate_id);
        status.candidates.push(candidateId);
        const expires = d.parseInstant(row.expires_at);
        status.candidateDetails.push({
          candidateId,
          leader: false,
          priority: Number(row.priority),
          eligible: sqlBool(row.eligible),
          metadata: parseMetadata(row.metadata),
          expiresInMs: expires && Number.isFinite(dbNowMs) ? Math.max(0, expires.getTime() - dbNowMs) : null,
        });
      }
      for (const status of byNs.values()) {
        status.candidates.sort();
        status.candidateDetails.sort((a, b) => (a.candidateId < b.candidateId ? -1 : a.candidateId > b.candidateId ? 1 : 0));
        for (const detail of status.candidateDetails) detail.leader = detail.candidateId === status.leaderId;
      }
      // Sorted here: collations differ between databases. Naturally: shard-2 before shard-10.
      const namespaces = [...byNs.values()].sort((a, b) => naturalCompare(a.ns, b.ns));
      return { dbNowMs, namespaces };
    });
  } catch (error) {
    if (isMissingTable(error)) {
      throw new MissingTablesError({ cause: error });
    }
    throw error;
  }
}
