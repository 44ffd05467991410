/**
 * The checks of the real loops' round (loops.ts) on what it recorded: pure, so that
 * loops-check.test.ts can feed them hand-made records that break each rule.
 */
import type { LeaderChange } from 'gemstone-utils';

// eslint-disable-next-line @typescript-eslint/no-require-imports
const { checkLoopCallbacks } = require('../../tools/chaos/checker') as {
  checkLoopCallbacks: (byIncarnation: Map<string, Array<Record<string, unknown>>>, leaseMs: number, requireSome: boolean) => { order: string[]; orderDetail: string };
};

/** The loops' lease: short, so that terms change hands within the round. */
export const LOOP_EXPIRE_SECONDS = 1;

/** A line the loops' worker reported (see test/support/workers/loops-worker.js). */
export interface WorkerLine {
  event: string;
  t: number;
  [field: string]: unknown;
}

export interface LoopSpec {
  readonly kind: 'elector' | 'group';
  readonly candidateId: string;
  readonly intervalMs: number;
  /** The namespaces it campaigns for. */
  readonly namespaces: readonly string[];
}

/** One leadership of one loop, as the worker reported it. */
export interface Leadership {
  readonly ns: string;
  readonly term: number;
  /** How it was demoted (undefined: never). */
  readonly reason: string | undefined;
}

export interface HistoryRow {
  term: number;
  leaderId: string;
  acquiredAt: Date;
  endedAt: Date | null;
}

/**
 * Why a loop may hold a term at the database and never lead it, by what it reported: a tick of
 * its that answered a lease's length or more after it was sent (the grant came after the local
 * deadline it armed, and grants nothing), a moment its clocks disagreed within a lease of the
 * grant (the deadline passed early), or a stop of it (a grant answered while it stopped is never
 * started, the stop vacates it; the tick that asked may have been sent up to a lease before the
 * stop began).
 */
export interface Unled {
  /** Wall time of the end of each such tick, per loop. */
  slowTicks: number[][];
  /** [from, to]: each stop of each loop, from the call to its end. */
  stops: Array<Array<[number, number]>>;
  /**
   * Wall time of each moment the worker's wall and monotonic clocks disagreed (all its loops
   * share them): a local deadline, counted by both, may pass early then, so a grant answered
   * within a lease of such a moment may be one its loop never started.
   */
  clockSteps: number[];
}

/** Leeway between the worker's clock and the database's (the same host) and the history's instants. */
const CLOCK_LEEWAY_MS = 50;

/** A term granted twice: `from` held it first, then the round took it back; the history names its second holder. */
export interface Regrant {
  ns: string;
  term: number;
  from: string;
}

/** The chaos checker's (n) on the worker's report: each loop as one incarnation, stopped cleanly when the worker said so. */
export function callbackRule(loops: readonly LoopSpec[], steps: readonly WorkerLine[], stopped: boolean): { order: string[]; orderDetail: string } {
  const byLoop = new Map<string, Array<Record<string, unknown>>>();
  loops.forEach((l, i) => {
    const events: Array<Record<string, unknown>> = steps.filter((s) => s['loop'] === i).map((s) => ({ ...s, ev: s['step'], slot: i, incarnation: 1 }));
    if (stopped) events.push({ t: Date.now(), ev: 'stopped', slot: i, incarnation: 1 });
    byLoop.set(`${l.kind} ${i}`, events);
  });
  return checkLoopCallbacks(byLoop, LOOP_EXPIRE_SECONDS * 1000, true);
}

/** The evidence of {@link Unled} in the worker's report. */
export function unledOf(loops: readonly LoopSpec[], lines: readonly WorkerLine[]): Unled {
  const end = lines.find((l) => l.event === 'stopped')?.t ?? Infinity;
  return {
    slowTicks: loops.map((_, i) => lines.filter((l) => l.event === 'slow-tick' && l['loop'] === i).map((l) => l.t)),
    clockSteps: lines.filter((l) => l.event === 'clock-step').map((l) => l.t),
    stops: loops.map((_, i) => {
      const spans: Array<[number, number]> = [];
      lines.forEach((l, j) => {
        if (l.event !== 'stopping' || l['loop'] !== i) return;
        const done = lines.slice(j).find((x) => (x.event === 'loop-stopped' && x['loop'] === i) || x.event === 'stopped');
        spans.push([l.t, done?.t ?? end]);
      });
      return spans;
    }),
  };
}

/** Each loop's leaderships in the order they began (by the first report of each `lid`). */
export function leadershipsOf(loops: readonly LoopSpec[], steps: readonly WorkerLine[]): Leadership[][] {
  return loops.map((_, i) => {
    const byLid = new Map<unknown, { ns: string; term: number; reason: string | undefined }>();
    for (const s of steps) {
      if (s['loop'] !== i) continue;
      const l = byLid.get(s['lid']) ?? { ns: String(s['ns']), term: Number(s['term']), reason: undefined };
      if (s['step'] === 'demoted') l.reason = String(s['reason']);
      byLid.set(s['lid'], l);
    }
    return [...byLid.values()];
  });
}

/**
 * Per loop and namespace: the terms of its leaderships, in order, are the terms granted to it
 * (the history's, and the first grant of a term granted twice), and each term has as many
 * leaderships as grants — more only where a leadership ended by its local deadline and the same
 * lease, renewed without a gap at the database, began another; fewer only by grants the loop
 * shows it never started (see {@link Unled}), and that per grant: when the round took a term
 * back and the same loop was granted it again, the second grant may be one it never started
 * although it led the first.
 */
export function loopsAgainstHistory(
  loops: readonly LoopSpec[],
  leaderships: readonly Leadership[][],
  histories: ReadonlyMap<string, HistoryRow[]>,
  regrants: readonly Regrant[],
  unled: Unled,
): { violations: string[]; unled: number; unledOfLed: number } {
  const out: string[] = [];
  let excused = 0;
  let excusedOfLed = 0;
  loops.forEach((l, i) => {
    for (const ns of l.namespaces) {
      const own = leaderships[i]!.filter((x) => x.ns === ns);
      /** Per term: its grants to this loop, and how many of them the loop shows it may never have started. */
      const grants = new Map<number, { granted: number; excusable: number; evidence: string[] }>();
      const grant = (term: number) => grants.get(term) ?? grants.set(term, { granted: 0, excusable: 0, evidence: [] }).get(term)!;
      for (const h of histories.get(ns) ?? []) {
        if (h.leaderId !== l.candidateId) continue;
        const at = h.acquiredAt.getTime();
        const late = unled.slowTicks[i]!.filter((t) => t >= at - CLOCK_LEEWAY_MS && (h.endedAt === null || t <= h.endedAt.getTime() + LOOP_EXPIRE_SECONDS * 1000));
        // A tick in flight when the stop began was sent at most a lease before it (a longer one is
        // a slow tick): its grant, made by a statement before the stop and answered after it, is
        // ignored, and the stop vacates the lease. The holder is what the round restarts, so the
        // round's read of the holder often comes between that statement and its answer.
        const stopping = unled.stops[i]!.filter(([from, to]) => at >= from - LOOP_EXPIRE_SECONDS * 1000 - CLOCK_LEEWAY_MS && at <= to + CLOCK_LEEWAY_MS);
        const stepped = unled.clockSteps.filter((t) => Math.abs(t - at) <= LOOP_EXPIRE_SECONDS * 1000 + CLOCK_LEEWAY_MS);
        const g = grant(h.term);
        g.granted++;
        g.evidence.push(`granted at ${h.acquiredAt.toISOString()}${late.length ? `, a tick answered a lease late at ${late.map(iso).join(', ')}` : ''}${stopping.length ? `, a stop from ${stopping.map(([from, to]) => `${iso(from)} to ${iso(to)}`).join(', ')}` : ''}${stepped.length ? `, the clocks disagreed at ${stepped.map(iso).join(', ')}` : ''}`);
        if (late.length > 0 || stopping.length > 0 || stepped.length > 0) g.excusable++;
      }
      for (const r of regrants) {
        if (r.ns !== ns || r.from !== l.candidateId) continue;
        const g = grant(r.term);
        g.granted++;
        g.evidence.push('granted before the round took it back');
      }
      const runOf = (term: number) => own.filter((x) => x.term === term);
      // A term all of whose grants the loop may never have started, and did not: not expected.
      const expected = [...grants]
        .filter(([term, g]) => g.granted > g.excusable || runOf(term).length > 0)
        .map(([term]) => term)
        .sort((x, y) => x - y);
      const terms = own.map((x) => x.term).filter((t, j, all) => j === 0 || all[j - 1] !== t);
      const show = () => `${l.kind} ${i} in ${ns}: its leaderships were of terms [${own.map((x) => `${x.term} (${x.reason ?? 'not demoted'})`).join(', ')}]`;
      if (terms.join() !== expected.join()) {
        out.push(`${show()}, the history gives it terms [${expected.join(', ')}]`);
        continue;
      }
      for (const [term, g] of grants) {
        const run = runOf(term);
        const renewed = run.slice(0, -1).filter((x) => x.reason === 'lease-expired-locally').length;
        if (run.length < g.granted - g.excusable || run.length > g.granted + renewed) {
          out.push(`${show()}; term ${term} was granted to it ${g.granted} time(s) (${g.evidence.join('; ')})`);
        } else {
          // At most `excusable`, by the bound just checked.
          const unstarted = Math.max(0, g.granted - run.length);
          excused += unstarted;
          if (run.length > 0) excusedOfLed += unstarted;
        }
      }
    }
  });
  return { violations: out, unled: excused, unledOfLed: excusedOfLed };
}

const iso = (t: number) => new Date(t).toISOString();

/**
 * A namespace's watch: every holder of every history term (and before it, the holder a term was
 * taken from), the vacancy after every ended term, in that order, and nothing else.
 */
export function watchAgainstHistory(ns: string, changes: readonly LeaderChange[], history: readonly HistoryRow[], regrants: readonly Regrant[]): string[] {
  const expected: string[] = [];
  for (const h of history) {
    for (const g of regrants) if (g.ns === ns && g.term === h.term && g.from !== h.leaderId) expected.push(`${g.from}@${h.term}`);
    expected.push(`${h.leaderId}@${h.term}`);
    if (h.endedAt !== null) expected.push(`vacant@${h.term}`);
  }
  // Before the first term, a watch may begin with the empty namespace.
  const seen = changes.map((c) => `${c.leaderId ?? 'vacant'}@${c.term ?? '-'}`).filter((s, i) => !(i === 0 && s === 'vacant@-'));
  return seen.join(' ') === expected.join(' ') ? [] : [`watch() of ${ns} yielded ${seen.join(' ')}; the history says ${expected.join(' ')}`];
}
