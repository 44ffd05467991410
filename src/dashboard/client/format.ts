/** How values read on the page. */

/** `3f1c2a4b` of a UUID. */
export function shortId(id: string): string {
  return id.slice(0, 8);
}

/** `850 ms`, `12.4 s`, `3 m 05 s`, `2 h 04 m`, `3 d 02 h`. */
export function duration(ms: number): string {
  if (!Number.isFinite(ms)) return '–';
  const abs = Math.max(0, ms);
  if (abs < 1_000) return `${Math.round(abs)} ms`;
  if (abs < 60_000) return `${(abs / 1000).toFixed(abs < 10_000 ? 1 : 0)} s`;
  const s = Math.floor(abs / 1000);
  if (s < 3600) return `${Math.floor(s / 60)} m ${String(s % 60).padStart(2, '0')} s`;
  if (s < 86_400) return `${Math.floor(s / 3600)} h ${String(Math.floor((s % 3600) / 60)).padStart(2, '0')} m`;
  return `${Math.floor(s / 86_400)} d ${String(Math.floor((s % 86_400) / 3600)).padStart(2, '0')} h`;
}

const two = (n: number) => String(n).padStart(2, '0');

/** Local wall-clock time `14:03:07`. */
export function clock(epochMs: number): string {
  const d = new Date(epochMs);
  return `${two(d.getHours())}:${two(d.getMinutes())}:${two(d.getSeconds())}`;
}

/** Local date and time `2025-11-25 14:03:07`. */
export function dateTime(epochMs: number): string {
  const d = new Date(epochMs);
  return `${d.getFullYear()}-${two(d.getMonth() + 1)}-${two(d.getDate())} ${clock(epochMs)}`;
}

/** A metadata value as one line of text. */
export function valueText(value: unknown): string {
  return typeof value === 'string' ? value : JSON.stringify(value) ?? String(value);
}

/** `host:pid` (what a LeaderElector says by default), else the first entries; '' without metadata. */
export function whereabouts(metadata: Readonly<Record<string, unknown>> | null | undefined): string {
  if (!metadata) return '';
  const { host, pid } = metadata;
  if (host !== undefined) return pid !== undefined ? `${valueText(host)}:${valueText(pid)}` : valueText(host);
  return Object.entries(metadata)
    .slice(0, 2)
    .map(([key, value]) => `${key}=${valueText(value)}`)
    .join(' ');
}

/** `1 namespace`, `3 namespaces`. */
export function plural(n: number, word: string): string {
  return `${n} ${word}${n === 1 ? '' : 's'}`;
}
