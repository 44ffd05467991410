/**
 * One SVG chart: `elect` latency (p50 and p99, log scale) against the number of concurrent
 * candidates, one panel per database, the library next to the one-statement baseline.
 */
import type { BenchKind } from '../lib/databases';
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
