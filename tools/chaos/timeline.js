// @ts-check
'use strict';
/**
 * The timeline picture: one lane per worker slot; bars where that slot held the lease (database
 * clock, labelled with the term), ticks for committed writes, fenced actions as red marks, faults
 * as shaded spans on the lane they hit, and leaderless gaps shaded across all lanes.
 */

const COLORS = ['#4e79a7', '#59a14f', '#9c755f', '#b07aa1', '#76b7b2', '#edc948', '#af7aa1', '#ff9da7'];
const FAULT_COLORS = {
  kill: '#e15759',
  pause: '#f28e2b',
  'conn-kill': '#bab0ac',
  'partition-cut': '#d37295',
  'partition-hang': '#a0cbe8',
  delay: '#ffbe7d',
  'db-restart': '#000000',
};

/** @param {string} text */
const esc = (text) => text.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;');

/**
 * @param {{ title: string, workers: number, runStart: number, stopAt: number,
 *   leaderships: import('./checker').Leadership[], gaps: import('./checker').Gap[], faults: import('./checker').Fault[],
 *   slotOf: (candidateId: string) => number | undefined, writes: { at: number, worker: number | null }[],
 *   fenced: { t: number, slot: number }[] }} input
 * @returns {string} SVG text
 */
function renderTimeline(input) {
  const { workers, runStart, stopAt } = input;
  const left = 70;
  const laneHeight = 34;
  const top = 40;
  const width = Math.max(900, Math.min(4000, Math.round((stopAt - runStart) / 40)));
  const plotWidth = width - left - 20;
  const height = top + workers * laneHeight + 60;
  const x = (/** @type {number} */ t) => left + ((t - runStart) / Math.max(1, stopAt - runStart)) * plotWidth;
  const laneY = (/** @type {number} */ slot) => top + slot * laneHeight;
  /** @type {string[]} */
  const out = [];
  out.push(`<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}" font-family="sans-serif" font-size="11">`);
  out.push(`<rect width="100%" height="100%" fill="#fff"/>`);
  out.push(`<text x="${left}" y="18" font-size="14" font-weight="bold">${esc(input.title)}</text>`);
  for (let slot = 0; slot < workers; slot++) {
    out.push(`<text x="8" y="${laneY(slot) + 21}">worker ${slot}</text>`);
    out.push(`<line x1="${left}" x2="${left + plotWidth}" y1="${laneY(slot) + laneHeight - 2}" y2="${laneY(slot) + laneHeight - 2}" stroke="#eee"/>`);
  }
  for (const gap of input.gaps) {
    const over = gap.end - gap.start > gap.allowed;
    out.push(
      `<rect x="${x(gap.start)}" y="${top}" width="${Math.max(1, x(gap.end) - x(gap.start))}" height="${workers * laneHeight}" fill="${over ? '#ff0000' : '#ffcccc'}" opacity="0.5"><title>${Math.round(gap.end - gap.start)} ms without a leader (allowed ${Math.round(gap.allowed)} ms)</title></rect>`,
    );
  }
  for (const fault of input.faults) {
    const y = fault.slot === null ? top : laneY(fault.slot);
    const h = fault.slot === null ? workers * laneHeight : laneHeight - 4;
    const color = FAULT_COLORS[/** @type {keyof typeof FAULT_COLORS} */ (fault.type)] ?? '#999';
    out.push(
      `<rect x="${x(fault.start)}" y="${y}" width="${Math.max(3, x(fault.end) - x(fault.start))}" height="${h}" fill="${color}" opacity="0.35" stroke="${color}"><title>${esc(`${fault.type}${fault.detail ? ` (${fault.detail})` : ''}: ${Math.round(fault.end - fault.start)} ms`)}</title></rect>`,
    );
    out.push(`<text x="${x(fault.start) + 2}" y="${y + 10}" font-size="9" fill="#333">${esc(fault.type)}</text>`);
  }
  for (const l of input.leaderships) {
    const slot = input.slotOf(l.holder);
    if (slot === undefined) continue;
    const color = COLORS[slot % COLORS.length];
    const w = Math.max(1, x(l.end) - x(l.start));
    out.push(
      `<rect x="${x(l.start)}" y="${laneY(slot) + 12}" width="${w}" height="14" fill="${color}"><title>term ${l.term}: ${Math.round(l.end - l.start)} ms, ended by ${l.endedBy}</title></rect>`,
    );
    if (w > 18) out.push(`<text x="${x(l.start) + 2}" y="${laneY(slot) + 23}" fill="#fff" font-size="9">${l.term}</text>`);
  }
  for (const w of input.writes) {
    if (w.worker === null) continue;
    out.push(`<line x1="${x(w.at)}" x2="${x(w.at)}" y1="${laneY(w.worker) + 27}" y2="${laneY(w.worker) + 31}" stroke="#333" stroke-width="0.5"/>`);
  }
  for (const f of input.fenced) {
    out.push(`<circle cx="${x(f.t)}" cy="${laneY(f.slot) + 6}" r="2.5" fill="#d00"><title>action fenced (NotLeaderError)</title></circle>`);
  }
  // Time axis, one label per ~10% of the run.
  const axisY = top + workers * laneHeight + 16;
  const span = stopAt - runStart;
  const step = Math.max(1000, Math.round(span / 10 / 1000) * 1000);
  for (let t = 0; t <= span; t += step) {
    out.push(`<line x1="${x(runStart + t)}" x2="${x(runStart + t)}" y1="${top}" y2="${axisY - 10}" stroke="#ddd" stroke-dasharray="2,3"/>`);
    out.push(`<text x="${x(runStart + t)}" y="${axisY}" text-anchor="middle">${Math.round(t / 1000)} s</text>`);
  }
  const legend = ['bars: lease held (term)', 'ticks: fenced writes', 'red dots: fenced actions', 'pink: no leader', 'shaded: faults'];
  out.push(`<text x="${left}" y="${axisY + 20}" fill="#555">${esc(legend.join(' · '))}</text>`);
  out.push('</svg>');
  return out.join('\n');
}

module.exports = { renderTimeline };
