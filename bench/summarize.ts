/**
 * `npm run bench:summary -- <dir> <dir> …`: the targets of several stored full runs (each a
 * directory holding the `latest.json` of an `npm run bench --out <dir>`), one row per target with
 * its min / median / max over the runs and in how many runs it was met. The table
 * docs/benchmarks.md quotes, from the stored results only. The targets are evaluated again from
 * each run's stored results by the current rules (`report/targets.ts`), so a target added after a
 * run is judged on it too; the correctness failures are the run's own.
 */
import * as fs from 'fs';
import * as path from 'path';
import { evaluateTargets } from './report/targets';
import type { BenchReport, Target } from './report/types';

const NAMES: Record<string, string> = { postgres: 'PostgreSQL', mariadb: 'MariaDB', sqlite: 'SQLite file' };

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
}

/** Ratios with two decimals, milliseconds and counts whole. */
function shown(value: number, target: string, limit: string): string {
  const whole = /ms\b/.test(target) || /ms/.test(limit) || limit === '0' || limit === '= 0' || Math.abs(value) >= 100;
  return whole ? Math.round(value).toLocaleString('en-US') : value.toFixed(2);
}

export function summarize(reports: BenchReport[]): string {
  const rows = new Map<string, { target: string; database: string; limit: string; values: number[]; met: number; judged: number; missing: number }>();
  for (const report of reports) {
    for (const t of report.targets as Target[]) {
      const key = `${t.database}\u0000${t.target}`;
      let row = rows.get(key);
      if (!row) rows.set(key, (row = { target: t.target, database: t.database, limit: t.limit, values: [], met: 0, judged: 0, missing: 0 }));
      if (t.value === null) row.missing++;
      else row.values.push(t.value);
      if (t.met !== null) {
        row.judged++;
        if (t.met) row.met++;
      }
    }
  }
  const lines = [
    `| target | database | min | median | max | limit | met in |`,
    `|---|---|---|---|---|---|---|`,
  ];
  for (const r of rows.values()) {
    const [min, mid, max] = r.values.length
      ? [Math.min(...r.values), median(r.values), Math.max(...r.values)].map((v) => shown(v, r.target, r.limit))
      : ['–', '–', '–'];
    const missing = r.missing ? ` (${r.missing} not measured)` : '';
    const verdict = r.judged === 0 ? '–' : r.met === r.judged ? `${r.met} of ${r.judged}` : `**${r.met} of ${r.judged}**`;
    lines.push(`| ${r.target} | ${NAMES[r.database] ?? r.database} | ${min} | ${mid} | ${max} | ${r.limit} | ${verdict}${missing} |`);
  }
  return lines.join('\n') + '\n';
}

if (require.main === module) {
  const dirs = process.argv.slice(2);
  if (dirs.length === 0) {
    console.error('usage: npm run bench:summary -- <results dir> [<results dir> …]');
    process.exit(2);
  }
  const reports = dirs
    .map((dir) => JSON.parse(fs.readFileSync(path.join(dir, 'latest.json'), 'utf8')) as BenchReport)
    .map((report) => ({ ...report, targets: evaluateTargets(report.results) }));
  const runs = reports.map((r, i) => `${dirs[i]}: ${r.meta.date}, ${Math.round(r.meta.durationSeconds)} s, ${r.failures.length} correctness failure(s)`).join('; ');
  process.stdout.write(`${reports.length} run(s) — ${runs}\n\n${summarize(reports)}`);
}
