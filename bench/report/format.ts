/** The formatting the report's tables share. */
import type { BenchKind } from '../lib/databases';
import type { BenchReport, DatabaseResults } from './types';

export const LABEL: Record<BenchKind, string> = { postgres: 'PostgreSQL', mariadb: 'MariaDB', sqlite: 'SQLite file' };
export const ms = (v: number | null | undefined) => (v === null || v === undefined || !Number.isFinite(v) ? '–' : v < 10 ? v.toFixed(2) : v.toFixed(1));
export const x = (v: number | null | undefined) => (v === null || v === undefined || !Number.isFinite(v) ? '–' : `${v.toFixed(2)}×`);
export const n = (v: number) => (Number.isFinite(v) ? Math.round(v).toLocaleString('en-US') : '–');

export function table(head: string[], rows: string[][]): string {
  return [`| ${head.join(' | ')} |`, `|${head.map(() => '---').join('|')}|`, ...rows.map((r) => `| ${r.join(' | ')} |`)].join('\n');
}

export function each(report: BenchReport): Array<[BenchKind, DatabaseResults]> {
  return Object.entries(report.results) as Array<[BenchKind, DatabaseResults]>;
}
