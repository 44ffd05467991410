/**
 * The SVG charts. `renderChart`: `elect` latency (p50 and p99, log scale) against the number of concurrent
 * candidates, one panel per database, the library next to the baseline (bench/lib/baseline.ts).
 */
import type { BenchKind } from '../lib/databases';
import type { GroupPoint } from '../suites/group';
import type { BenchReport } from './types';

const LABEL: Record<BenchKind, string> = { postgres: 'PostgreSQL', mariadb: 'MariaDB', sqlite: 'SQLite file' };
const SERIES = [
  { name: 'library p99', color: '#c0392b', dash: '', pick: (s: { p99: number }) => s.p99, side: 'library' as const },
  { name: 'library p50', color: '#c0392b', dash: '5,4', pick: (s: { p50: number }) => s.p50, side: 'library' as const },
  { name: 'baseline p99', color: '#2471a3', dash: '', pick: (s: { p99: number }) => s.p99, side: 'baseline' as const },
  { name: 'baseline p50', color: '#2471a3', dash: '5,4', pick: (s: { p50: number }) => s.p50, side: 'baseline' as const },
];

const esc = (text: string) => text.replace(/&/g, '&amp;').replace(/</g, '&lt;');

export function renderChart(report: BenchReport): string {
  const panels = (Object.entries(report.results) as Array<[BenchKind, NonNullable<BenchReport['results'][BenchKind]>]>).filter(
    ([, r]) => r.contention?.length,
  );
  const W = 320;
  const H = 260;
  const m = { left: 56, right: 12, top: 34, bottom: 44 };
  const width = W * panels.length;
  const height = H + 40;
  const parts: string[] = [];
  const values = panels.flatMap(([, r]) => r.contention!.flatMap((p) => SERIES.map((s) => s.pick(p[s.side])))).filter((v) => v > 0);
  const lo = Math.pow(10, Math.floor(Math.log10(Math.min(...values))));
  const hi = Math.pow(10, Math.ceil(Math.log10(Math.max(...values))));
  panels.forEach(([kind, r], i) => {
    const x0 = i * W;
    const points = r.contention!;
    const xs = points.map((p) => p.concurrency);
    const xmin = Math.log2(Math.min(...xs));
    const xmax = Math.log2(Math.max(...xs));
    const px = (c: number) => x0 + m.left + ((Math.log2(c) - xmin) / Math.max(1e-9, xmax - xmin)) * (W - m.left - m.right);
    const py = (v: number) => m.top + (1 - (Math.log10(v) - Math.log10(lo)) / (Math.log10(hi) - Math.log10(lo))) * (H - m.top - m.bottom);
    parts.push(`<text x="${x0 + W / 2}" y="18" text-anchor="middle" font-weight="bold">${esc(LABEL[kind])}</text>`);
    for (let d = Math.log10(lo); d <= Math.log10(hi) + 1e-9; d++) {
      const v = Math.pow(10, d);
      parts.push(`<line x1="${x0 + m.left}" x2="${x0 + W - m.right}" y1="${py(v)}" y2="${py(v)}" stroke="#ddd"/>`);
      parts.push(`<text x="${x0 + m.left - 4}" y="${py(v) + 4}" text-anchor="end" font-size="10">${v >= 1 ? v : v.toString()}</text>`);
    }
    for (const c of xs) {
      parts.push(`<line x1="${px(c)}" x2="${px(c)}" y1="${m.top}" y2="${H - m.bottom}" stroke="#eee"/>`);
      parts.push(`<text x="${px(c)}" y="${H - m.bottom + 14}" text-anchor="middle" font-size="10">${c}</text>`);
    }
    parts.push(`<text x="${x0 + W / 2}" y="${H - m.bottom + 30}" text-anchor="middle" font-size="11">concurrent candidates</text>`);
    parts.push(
      `<text transform="translate(${x0 + 14},${(H - m.bottom + m.top) / 2}) rotate(-90)" text-anchor="middle" font-size="11">elect latency, ms (log)</text>`,
    );
    for (const s of SERIES) {
      const path = points.map((p) => `${px(p.concurrency).toFixed(1)},${py(s.pick(p[s.side])).toFixed(1)}`).join(' ');
      parts.push(`<polyline fill="none" stroke="${s.color}" stroke-width="2" stroke-dasharray="${s.dash}" points="${path}"/>`);
      for (const p of points) parts.push(`<circle cx="${px(p.concurrency)}" cy="${py(s.pick(p[s.side]))}" r="2.5" fill="${s.color}"/>`);
    }
  });
  SERIES.forEach((s, i) => {
    const x = 20 + i * 150;
    parts.push(`<line x1="${x}" x2="${x + 28}" y1="${height - 14}" y2="${height - 14}" stroke="${s.color}" stroke-width="2" stroke-dasharray="${s.dash}"/>`);
    parts.push(`<text x="${x + 34}" y="${height - 10}" font-size="11">${s.name}</text>`);
  });
  return [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}" viewBox="0 0 ${width} ${height}" font-family="sans-serif" font-size="12">`,
    `<rect width="100%" height="100%" fill="white"/>`,
    `<title>elect latency against concurrency (${esc(report.meta.date)})</title>`,
    ...parts,
    '</svg>',
    '',
  ].join('\n');
}

const GROUP_SERIES = [
  { name: 'leader tick p99', color: '#c0392b', dash: '', pick: (p: GroupPoint) => p.leader.p99 },
  { name: 'leader tick p50', color: '#c0392b', dash: '5,4', pick: (p: GroupPoint) => p.leader.p50 },
  { name: 'follower tick p99', color: '#2471a3', dash: '', pick: (p: GroupPoint) => p.follower.p99 },
  { name: 'follower tick p50', color: '#2471a3', dash: '5,4', pick: (p: GroupPoint) => p.follower.p50 },
];

/**
 * The LeaderElectorGroup's tick latency (p50 and p99, log scale) against the number of its
 * namespaces (log scale), one panel per database: the leader renewing all N leases, a follower
 * observing them.
 */
export function renderGroupChart(report: BenchReport): string {
  const panels = (Object.entries(report.results) as Array<[BenchKind, NonNullable<BenchReport['results'][BenchKind]>]>).filter(
    ([, r]) => r.group?.points.length,
  );
  const W = 320;
  const H = 260;
  const m = { left: 56, right: 16, top: 34, bottom: 44 };
  const width = Math.max(620, W * panels.length); // room for the legend
  const height = H + 40;
  const parts: string[] = [];
  const values = panels.flatMap(([, r]) => r.group!.points.flatMap((p) => GROUP_SERIES.map((s) => s.pick(p)))).filter((v) => v > 0 && Number.isFinite(v));
  const lo = Math.pow(10, Math.floor(Math.log10(Math.min(...values, 1))));
  const hi = Math.pow(10, Math.ceil(Math.log10(Math.max(...values, 1))));
  panels.forEach(([kind, r], i) => {
    const x0 = i * W;
    const points = r.group!.points;
    const xs = points.map((p) => p.namespaces);
    const xmin = Math.log10(Math.min(...xs));
    const xmax = Math.log10(Math.max(...xs));
    const px = (c: number) => x0 + m.left + ((Math.log10(c) - xmin) / Math.max(1e-9, xmax - xmin)) * (W - m.left - m.right);
    const py = (v: number) => m.top + (1 - (Math.log10(v) - Math.log10(lo)) / (Math.log10(hi) - Math.log10(lo))) * (H - m.top - m.bottom);
    parts.push(`<text x="${x0 + W / 2}" y="18" text-anchor="middle" font-weight="bold">${esc(LABEL[kind])}</text>`);
    for (let d = Math.log10(lo); d <= Math.log10(hi) + 1e-9; d++) {
      const v = Math.pow(10, d);
      parts.push(`<line x1="${x0 + m.left}" x2="${x0 + W - m.right}" y1="${py(v)}" y2="${py(v)}" stroke="#ddd"/>`);
      parts.push(`<text x="${x0 + m.left - 4}" y="${py(v) + 4}" text-anchor="end" font-size="10">${v}</text>`);
    }
    for (const c of xs) {
      parts.push(`<line x1="${px(c)}" x2="${px(c)}" y1="${m.top}" y2="${H - m.bottom}" stroke="#eee"/>`);
      parts.push(`<text x="${px(c)}" y="${H - m.bottom + 14}" text-anchor="middle" font-size="10">${c.toLocaleString('en-US')}</text>`);
    }
    parts.push(`<text x="${x0 + W / 2}" y="${H - m.bottom + 30}" text-anchor="middle" font-size="11">namespaces in the group (log)</text>`);
    parts.push(
      `<text transform="translate(${x0 + 14},${(H - m.bottom + m.top) / 2}) rotate(-90)" text-anchor="middle" font-size="11">tick latency, ms (log)</text>`,
    );
    for (const s of GROUP_SERIES) {
      const shown = points.filter((p) => s.pick(p) > 0 && Number.isFinite(s.pick(p)));
      const path = shown.map((p) => `${px(p.namespaces).toFixed(1)},${py(s.pick(p)).toFixed(1)}`).join(' ');
      parts.push(`<polyline fill="none" stroke="${s.color}" stroke-width="2" stroke-dasharray="${s.dash}" points="${path}"/>`);
      for (const p of shown) parts.push(`<circle cx="${px(p.namespaces)}" cy="${py(s.pick(p))}" r="2.5" fill="${s.color}"/>`);
    }
  });
  GROUP_SERIES.forEach((s, i) => {
    const x = 20 + i * 150;
    parts.push(`<line x1="${x}" x2="${x + 28}" y1="${height - 14}" y2="${height - 14}" stroke="${s.color}" stroke-width="2" stroke-dasharray="${s.dash}"/>`);
    parts.push(`<text x="${x + 34}" y="${height - 10}" font-size="11">${s.name}</text>`);
  });
  return [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}" viewBox="0 0 ${width} ${height}" font-family="sans-serif" font-size="12">`,
    `<rect width="100%" height="100%" fill="white"/>`,
    `<title>LeaderElectorGroup tick latency against namespaces (${esc(report.meta.date)})</title>`,
    ...parts,
    '</svg>',
    '',
  ].join('\n');
}
