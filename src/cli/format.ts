/** Small text helpers shared by the commands. */

/** `1.8s`, `250ms`, `-` for null. */
export function duration(ms: number | null | undefined): string {
  if (ms === null || ms === undefined) return '-';
  return ms >= 1000 ? `${(ms / 1000).toFixed(1)}s` : `${Math.round(ms)}ms`;
}

/**
 * A duration for JSON output: milliseconds to one decimal (`1522.8`, not `1522.8175790000005`).
 * Host-clock measurements (`performance.now()`) carry sub-millisecond noise nobody should read.
 */
export function roundMs<T extends number | null>(ms: T): T {
  return (ms === null ? null : Math.round(ms * 10) / 10) as T;
}

/**
 * Orders names as a reader expects: runs of digits by their value (`shard-2` before `shard-10`),
 * everything else by code unit, the same on every host (no locale). Names equal but for leading
 * zeros (`a-01`, `a-1`) are ordered by code unit, so the order is total.
 */
export function naturalCompare(a: string, b: string): number {
  const left = a.split(/(\d+)/);
  const right = b.split(/(\d+)/);
  // split() with a capture group alternates: text at even indexes, digit runs at odd ones.
  for (let i = 0; i < Math.min(left.length, right.length); i++) {
    const x = left[i]!;
    const y = right[i]!;
    if (x === y) continue;
    if (i % 2 === 1) {
      const xv = x.replace(/^0+(?=\d)/, '');
      const yv = y.replace(/^0+(?=\d)/, '');
      // Compared as text of equal length: any number of digits, no precision lost.
      if (xv.length !== yv.length) return xv.length - yv.length;
      if (xv !== yv) return xv < yv ? -1 : 1;
      continue;
    }
    return x < y ? -1 : 1;
  }
  if (left.length !== right.length) return left.length - right.length;
  return a < b ? -1 : a > b ? 1 : 0;
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

/** Width of log lines when the output is not a terminal (a pipe, a file, CI). */
export const DEFAULT_LOG_COLUMNS = 80;

/**
 * `text` broken at spaces into lines of at most `width` characters (a word longer than that is
 * split). Wrapping, unlike cutting, keeps every word: event lines carry the term, the worker
 * and what happened, often at their end.
 */
export function wrap(text: string, width: number): string[] {
  const room = Math.max(10, width);
  const lines: string[] = [];
  let line = '';
  for (let word of text.split(' ')) {
    while (word.length > room) {
      if (line !== '') lines.push(line);
      lines.push(word.slice(0, room));
      word = word.slice(room);
      line = '';
    }
    if (line === '') line = word;
    else if (line.length + 1 + word.length <= room) line += ` ${word}`;
    else {
      lines.push(line);
      line = word;
    }
  }
  lines.push(line);
  return lines;
}
