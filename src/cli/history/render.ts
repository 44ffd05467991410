import Table from 'cli-table3';
import pc from 'picocolors';
import type { HistoryEntry } from '../../election/observe/history';
import { duration, tableStyle } from '../format';

/** The terms as a terminal table, newest first. Instants are the database clock's, in UTC. */
export function historyTable(ns: string, entries: readonly HistoryEntry[]): string {
  if (entries.length === 0) return pc.dim(`no terms in namespace ${JSON.stringify(ns)}`);
  const table = new Table({ head: ['term', 'leader', 'acquired (UTC)', 'ended (UTC)', 'held', 'end reason'], style: { ...tableStyle(), compact: true } });
  for (const entry of entries) {
    table.push([
      String(entry.term),
      entry.leaderId,
      instant(entry.acquiredAt),
      entry.endedAt ? instant(entry.endedAt) : pc.green('current'),
      entry.endedAt ? duration(entry.endedAt.getTime() - entry.acquiredAt.getTime()) : '-',
      entry.endReason ?? '-',
    ]);
  }
  return table.toString();
}

/** `2026-11-23 10:27:59.570` */
function instant(date: Date): string {
  return date.toISOString().replace('T', ' ').replace('Z', '');
}

/** The terms as JSON: the documented machine-readable form. */
export function historyJson(entries: readonly HistoryEntry[]): string {
  return JSON.stringify(
    entries.map((entry) => ({
      ns: entry.ns,
      term: entry.term,
      leaderId: entry.leaderId,
      acquiredAt: entry.acquiredAt.toISOString(),
      endedAt: entry.endedAt ? entry.endedAt.toISOString() : null,
      endReason: entry.endReason,
    })),
  );
}
