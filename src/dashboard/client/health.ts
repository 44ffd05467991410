import { h } from './dom.js';
import { duration, plural } from './format.js';
import type { HealthSettings, NamespaceSummary } from './types.js';

/** The badges of a namespace's health: vacant, expiring, flapping, or ok. */
export function badges(summary: NamespaceSummary | null, settings: HealthSettings): HTMLElement {
  const box = h('span', { class: 'badges', data: { field: 'health' } });
  if (!summary || summary.vacant) box.appendChild(h('span', { class: 'badge bad', title: 'no live lease: nobody leads' }, 'vacant'));
  if (summary?.expiring) box.appendChild(h('span', { class: 'badge warn', title: 'less than half of the lease is left: a renewal is overdue' }, 'expiring'));
  if (summary?.flapping) {
    const title = `${plural(summary.recentTerms, 'term')} ended in the last ${duration(settings.flapWindowSeconds * 1000)} (flapping from ${settings.flapTerms})`;
    box.appendChild(h('span', { class: 'badge flap', title }, 'flapping'));
  }
  if (box.childElementCount === 0) box.appendChild(h('span', { class: 'badge ok' }, 'ok'));
  return box;
}

/** Lease left as text and a meter of the lease's length (counting down between updates). */
export function leaseMeter(leftMs: number | null, leaseMs: number | null, expiring: boolean): HTMLElement {
  if (leftMs === null) return h('span', { class: 'muted' }, '–');
  const meter = h('span', { class: 'meter' }, h('span', { class: `fill${expiring ? ' warn' : ''}` }));
  const fill = meter.firstElementChild as HTMLElement;
  fill.style.width = `${leaseMs ? Math.max(0, Math.min(100, (leftMs / leaseMs) * 100)) : 100}%`;
  return h('span', { class: 'lease' }, meter, h('span', { data: { field: 'lease-left' } }, duration(leftMs)));
}
