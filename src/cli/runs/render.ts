import Table from 'cli-table3';
import pc from 'picocolors';
import type { ScheduledRunInfo } from '../../schedules/runs-store';
import { tableStyle } from '../format';

/** Longest error message shown in a table cell; `--json` has all of it. */
export const ERROR_CELL_CHARS = 60;

/**
 * Text from the database as one inert line: control characters (a newline, an ANSI escape that
 * would restyle or move the terminal's cursor) and the Unicode format characters that reorder or
 * hide text are shown as `\u…` escapes, so a stored value can neither break the table nor forge
 * what the terminal shows.
 */
export function inert(text: string): string {
  return text.replace(/[\p{Cc}\p{Cf}\u2028\u2029]/gu, (c) => `\\u${c.codePointAt(0)!.toString(16).padStart(4, '0')}`);
}

/** `text` made {@link inert}, cut to `max` characters with an ellipsis. */
function cell(text: string, max: number): string {
  const shown = inert(text);
  const chars = [...shown];
  return chars.length > max ? `${chars.slice(0, max - 1).join('')}…` : shown;
}

/** `2026-11-23 10:27:59.570` (UTC) */
function instant(date: Date | null): string {
  return date ? date.toISOString().replace('T', ' ').replace('Z', '') : '-';
}

const STATE_COLOR: Readonly<Record<string, (text: string) => string>> = {
  done: pc.green,
  running: pc.cyan,
  failed: pc.red,
  abandoned: pc.red,
  missed: pc.yellow,
  skipped: pc.dim,
};

/** The runs as a terminal table, newest slot first. Instants are the database clock's, in UTC. */
export function runsTable(runs: readonly ScheduledRunInfo[]): string {
  if (runs.length === 0) return pc.dim('no runs');
  const table = new Table({
    head: ['ns', 'name', 'slot (UTC)', 'state', 'attempt', 'term', 'candidate', 'started (UTC)', 'finished (UTC)', 'error'],
    style: { ...tableStyle(), compact: true },
  });
  for (const run of runs) {
    table.push([
      cell(run.ns, 40),
      cell(run.name, 40),
      instant(run.slot),
      (STATE_COLOR[run.state] ?? String)(run.state),
      String(run.attempt),
      String(run.term),
      cell(run.candidateId, 40),
      instant(run.startedAt),
      instant(run.finishedAt),
      run.error === null ? '-' : cell(run.error, ERROR_CELL_CHARS),
    ]);
  }
  return table.toString();
}

/** The runs as JSON, whole: the documented machine-readable form. */
export function runsJson(runs: readonly ScheduledRunInfo[]): string {
  return JSON.stringify(
    runs.map((run) => ({
      ns: run.ns,
      name: run.name,
      slot: run.slot.toISOString(),
      state: run.state,
      attempt: run.attempt,
      term: run.term,
      candidateId: run.candidateId,
      startedAt: run.startedAt ? run.startedAt.toISOString() : null,
      finishedAt: run.finishedAt ? run.finishedAt.toISOString() : null,
      error: run.error,
    })),
  );
}
