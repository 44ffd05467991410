import { h, type Child } from './dom.js';
import { dateTime, clock, duration, shortId, whereabouts } from './format.js';
import type { TermView } from './types.js';

/** What a lane needs of its namespace's leader row to end its open term. */
export interface LaneState {
  readonly live: boolean;
  readonly term: number | null;
  readonly leaseExpiresAt: number | null;
}

/** The colours of the bars (see the stylesheet): why a term ended, or that it runs. */
export const REASONS: readonly (readonly [string, string])[] = [
  ['current', 'leading now'],
  ['handed-over', 'handed over'],
  ['resigned', 'resigned'],
  ['unregistered', 'unregistered'],
  ['expired', 'expired'],
  ['operator', 'an operator\'s'],
  ['vacant', 'vacant'],
];

interface Segment {
  readonly kind: string;
  readonly from: number;
  readonly to: number;
  readonly label: string;
  readonly term: number | null;
}

/**
 * A namespace's terms and the vacancies between them, oldest first, up to `now`. An open term is
 * the current one while the leader row's lease is live, and while the row as last read is of an
 * older term; when that lease ran out and no taker has closed the term yet, it ends at the lease's
 * end, as `expired`.
 */
export function segments(terms: readonly TermView[], state: LaneState | null, now: number): Segment[] {
  const ordered = [...terms].filter((t) => t.acquiredAt !== null).sort((a, b) => a.term - b.term);
  const out: Segment[] = [];
  ordered.forEach((t, i) => {
    const next = ordered[i + 1];
    const from = t.acquiredAt!;
    let to: number;
    let kind: string;
    if (t.endedAt !== null) {
      to = t.endedAt;
      kind = t.endReason ?? 'expired';
    } else if (state && state.term === t.term && state.live) {
      to = now;
      kind = 'current';
    } else if (state && state.term === t.term && state.leaseExpiresAt !== null) {
      to = Math.min(now, state.leaseExpiresAt);
      kind = 'expired';
    } else if (!next && state && state.term !== null && t.term > state.term) {
      // The newest open term is newer than the leader row as last read: the history and the row
      // are two reads, and the row's is older (a hand-over between them). Nothing says this term
      // ended: it is the current one until a read of the row says otherwise.
      to = now;
      kind = 'current';
    } else {
      to = next?.acquiredAt ?? now;
      kind = 'expired';
    }
    const who = whereabouts(t.metadata);
    const label = `term ${t.term} · ${shortId(t.leaderId)}${who ? ` (${who})` : ''} · ${dateTime(from)} → ${kind === 'current' ? 'now' : clock(to)} (${duration(to - from)}) · ${kind === 'current' ? 'leading' : kind}`;
    out.push({ kind, from, to, label, term: t.term });
    const gapEnd = next ? next.acquiredAt! : kind === 'current' ? to : now;
    if (gapEnd > to) out.push({ kind: 'vacant', from: to, to: gapEnd, label: `vacant ${clock(to)} → ${next ? clock(gapEnd) : 'now'} (${duration(gapEnd - to)})`, term: null });
  });
  return out;
}

/** One lane: the segments placed on the window `since`..`now`. */
export function lane(terms: readonly TermView[], state: LaneState | null, since: number, now: number): HTMLElement {
  const span = Math.max(1, now - since);
  const track = h('div', { class: 'track' });
  for (const s of segments(terms, state, now)) {
    if (s.to <= since) continue;
    const from = Math.max(s.from, since);
    const bar = h('div', {
      class: `seg seg-${s.kind}`,
      title: s.label,
      data: { kind: s.kind, ...(s.term === null ? {} : { term: String(s.term) }) },
    });
    bar.style.left = `${((from - since) / span) * 100}%`;
    bar.style.width = `${((Math.min(s.to, now) - from) / span) * 100}%`;
    track.appendChild(bar);
  }
  return track;
}

/** Tick marks of the window, in local time. */
export function axis(since: number, now: number): HTMLElement {
  const track = h('div', { class: 'axis' });
  const span = Math.max(1, now - since);
  const steps = [10e3, 15e3, 30e3, 60e3, 5 * 60e3, 15 * 60e3, 30 * 60e3, 3600e3, 3 * 3600e3, 6 * 3600e3, 12 * 3600e3, 86_400e3, 7 * 86_400e3];
  const step = steps.find((s) => span / s <= 8) ?? steps[steps.length - 1]!;
  const offset = new Date().getTimezoneOffset() * 60e3;
  const label = (t: number) => (step >= 86_400e3 ? dateTime(t).slice(5, 10) : step < 60e3 ? clock(t) : clock(t).slice(0, 5));
  for (let t = Math.ceil((since - offset) / step) * step + offset; t <= now; t += step) {
    const at = ((t - since) / span) * 100;
    // A label centred on the very edge would stick out of the track.
    if (at < 3 || at > 96) continue;
    const tick = h('span', { class: 'tick' }, label(t));
    tick.style.left = `${at}%`;
    track.appendChild(tick);
  }
  return track;
}

export function legend(extra: Child = null): HTMLElement {
  return h(
    'div',
    { class: 'legend' },
    ...REASONS.map(([kind, text]) => h('span', { class: 'key' }, h('span', { class: `swatch seg-${kind}` }), text)),
    extra,
  );
}
