/** Small text helpers shared by the commands. */

/** `1.8s`, `250ms`, `-` for null. */
export function duration(ms: number | null | undefined): string {
  if (ms === null || ms === undefined) return '-';
  return ms >= 1000 ? `${(ms / 1000).toFixed(1)}s` : `${Math.round(ms)}ms`;
}

/** The first block of a UUID: enough to tell candidates apart on screen. */
export function shortId(id: string | null | undefined): string {
  return id ? id.slice(0, 8) : '-';
}

/** `HH:MM:SS.mmm` of the host clock: for log lines only, never for lease decisions. */
export function clock(date = new Date()): string {
  return date.toISOString().slice(11, 23);
}

/** Colors only on a terminal (cli-table3 would color pipes too). */
export const colorful = (): boolean => Boolean(process.stdout.isTTY) && !('NO_COLOR' in process.env);

/** cli-table3 options: cyan headers and grey borders on a terminal, plain text elsewhere. */
export function tableStyle(): { head: string[]; border: string[] } {
  return colorful() ? { head: ['cyan'], border: ['grey'] } : { head: [], border: [] };
}
