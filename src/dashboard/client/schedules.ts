import { getJson } from './api.js';
import { fill, h } from './dom.js';
import { dateTime, duration, shortId } from './format.js';
import type { NamespaceSchedules, RunView } from './types.js';

/** How often a namespace's schedules are read again. */
const SCHEDULES_REFRESH_MS = 10_000;

/** The badge of each state: the ones that need a look stand out. */
const STATE_CLASS: Readonly<Record<string, string>> = { done: 'ok', running: 'flap', failed: 'bad', abandoned: 'bad', missed: 'warn', skipped: 'warn' };

function runRow(run: RunView): HTMLElement {
  const took = run.startedAt !== null && run.finishedAt !== null ? duration(run.finishedAt - run.startedAt) : '–';
  return h(
    'tr',
    { data: { state: run.state } },
    h('td', null, run.slot === null ? '–' : dateTime(run.slot)),
    h('td', null, h('span', { class: `badge ${STATE_CLASS[run.state] ?? ''}`, data: { field: 'state' } }, run.state)),
    h('td', { class: 'num' }, String(run.attempt)),
    h('td', { class: 'num' }, String(run.term)),
    h('td', { title: run.candidateId }, h('code', null, shortId(run.candidateId))),
    h('td', { class: 'num' }, took),
    // The job's own message, whatever it contains: text only.
    h('td', { data: { field: 'error' } }, run.error ?? ''),
  );
}

/** A schedule's newest runs, newest slot first. */
function runsTable(runs: readonly RunView[]): HTMLElement {
  return h(
    'table',
    { class: 'grid runs' },
    h('thead', null, h('tr', null, ...['Slot', 'State', 'Attempt', 'Term', 'Candidate', 'Took', 'Error'].map((t) => h('th', { attrs: { scope: 'col' } }, t)))),
    h('tbody', null, ...runs.map(runRow)),
  );
}

/**
 * The next slot as the server knows it: only a schedule hosted in the dashboard's own process has
 * one (the database records runs, not patterns); the others say so rather than guess.
 */
function nextSlotText(schedule: NamespaceSchedules['schedules'][number]): string {
  if (!schedule.hosted) return 'next slot: unknown (not hosted here)';
  return schedule.nextSlot === null ? 'next slot: none (its pattern has no further slot)' : `next slot: ${dateTime(schedule.nextSlot)}`;
}

/**
 * The card of a namespace's schedules: the names the runs table knows and those hosted in the
 * dashboard's process, each with its next slot (when hosted here) and its newest runs (a
 * `running` run is the slot under way).
 */
export class SchedulesCard {
  readonly element = h('section', { class: 'card', data: { view: 'schedules' } }, h('h2', null, 'Schedules'), h('p', { class: 'muted' }, 'loading…'));
  readonly #ns: string;
  readonly #timer: number;
  #reads = 0;

  constructor(ns: string) {
    this.#ns = ns;
    this.#timer = window.setInterval(() => void this.read(), SCHEDULES_REFRESH_MS);
    void this.read();
  }

  async read(): Promise<void> {
    const ticket = ++this.#reads;
    try {
      const answer = await getJson<NamespaceSchedules>('api/namespace/schedules', { ns: this.#ns });
      if (ticket === this.#reads) this.#render(answer);
    } catch (error) {
      if (ticket === this.#reads) fill(this.element, h('h2', null, 'Schedules'), h('p', { class: 'note' }, `schedules: ${(error as Error).message}`));
    }
  }

  #render(answer: NamespaceSchedules): void {
    // An application that did not adopt schedules: what to do, not an error. (A server before
    // `enabled` sends none: it had the table.)
    if (answer.enabled === false) {
      fill(this.element, h('h2', null, 'Schedules'), h('p', { class: 'muted', data: { field: 'reason' } }, answer.reason ?? 'Schedules are not set up.'));
      return;
    }
    fill(
      this.element,
      h('h2', null, `Schedules (${answer.schedules.length}${answer.truncated ? '+' : ''})`),
      answer.schedules.length === 0 ? h('p', { class: 'muted' }, 'No run recorded, and none hosted here.') : null,
      ...answer.schedules.map((s) =>
        h(
          'div',
          { class: 'schedule', data: { schedule: s.name } },
          h('h3', { data: { field: 'schedule' } }, s.name),
          h('p', { class: 'muted', data: { field: 'next-slot' } }, nextSlotText(s)),
          s.runs.length === 0 ? h('p', { class: 'muted' }, 'No run recorded yet.') : runsTable(s.runs),
        ),
      ),
      answer.truncated ? h('p', { class: 'note' }, 'Only the first schedules by name are listed.') : null,
    );
  }

  dispose(): void {
    window.clearInterval(this.#timer);
    this.#reads++;
  }
}
