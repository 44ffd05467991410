import Table from 'cli-table3';
import pc from 'picocolors';
import { duration, roundMs, tableStyle } from '../format';
import type { CandidateStatus, NamespaceStatus } from './query';

/** Longest metadata text shown in a table cell; `--json` has all of it. */
export const METADATA_CELL_CHARS = 40;

/** Metadata keys beyond host and pid, as compact JSON, cut to {@link METADATA_CELL_CHARS}. */
function otherMetadata(candidate: CandidateStatus): string {
  if (!candidate.metadata) return '-';
  const rest = Object.fromEntries(Object.entries(candidate.metadata).filter(([key]) => key !== 'host' && key !== 'pid'));
  if (Object.keys(rest).length === 0) return '-';
  const text = JSON.stringify(rest);
  return text.length > METADATA_CELL_CHARS ? `${text.slice(0, METADATA_CELL_CHARS - 1)}…` : text;
}

function field(candidate: CandidateStatus, key: 'host' | 'pid'): string {
  const value = candidate.metadata?.[key];
  return value === undefined || value === null ? '-' : typeof value === 'string' ? value : JSON.stringify(value);
}

/** One row per active candidate of every namespace: role, priority, eligibility and identity. */
export function candidatesTable(rows: readonly NamespaceStatus[]): string {
  const table = new Table({
    head: ['namespace', 'candidate', 'role', 'priority', 'eligible', 'host', 'pid', 'metadata'],
    style: { ...tableStyle(), compact: true },
  });
  for (const row of rows) {
    for (const candidate of row.candidateDetails) {
      const role = candidate.leader ? pc.green('leader') : candidate.eligible ? 'follower' : pc.dim('observer');
      table.push([
        row.ns,
        candidate.candidateId,
        role,
        String(candidate.priority),
        candidate.eligible ? 'yes' : 'no',
        field(candidate, 'host'),
        field(candidate, 'pid'),
        otherMetadata(candidate),
      ]);
    }
  }
  return table.toString();
}

/** The status as terminal tables: one row per namespace, then one per active candidate. */
export function statusTable(rows: readonly NamespaceStatus[]): string {
  if (rows.length === 0) return pc.dim('no namespaces: no leader row and no active candidate yet');
  const table = new Table({ head: ['namespace', 'leader', 'term', 'lease left', 'candidates'], style: { ...tableStyle(), compact: true } });
  for (const row of rows) {
    table.push([
      row.ns,
      row.leaderId ? pc.green(row.leaderId) : pc.yellow('none'),
      row.term === null ? '-' : String(row.term),
      duration(row.leaseLeftMs),
      String(row.candidates.length),
    ]);
  }
  const withCandidates = rows.some((row) => row.candidateDetails.length > 0);
  return withCandidates ? `${table.toString()}\n${candidatesTable(rows)}` : table.toString();
}

/** The status as JSON: the documented machine-readable form. */
export function statusJson(rows: readonly NamespaceStatus[]): string {
  return JSON.stringify(
    rows.map((row) => ({
      ...row,
      leaseLeftMs: roundMs(row.leaseLeftMs),
      candidateDetails: row.candidateDetails.map((candidate) => ({ ...candidate, expiresInMs: roundMs(candidate.expiresInMs) })),
    })),
  );
}
