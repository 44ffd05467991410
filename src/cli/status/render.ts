import Table from 'cli-table3';
import pc from 'picocolors';
import { duration, tableStyle } from '../format';
import type { NamespaceStatus } from './query';

/** The status as a terminal table: one row per namespace. */
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
  return table.toString();
}

/** The status as JSON: the documented machine-readable form. */
export function statusJson(rows: readonly NamespaceStatus[]): string {
  return JSON.stringify(rows);
}
