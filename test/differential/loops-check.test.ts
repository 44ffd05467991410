/**
 * The checks of the differential runs' real loops (loops-check.ts) on hand-made records: each
 * rule reports what breaks it, and a clean record passes — so a green round is evidence.
 */
import type { LeaderChange } from 'gemstone-utils';
import { callbackRule, leadershipsOf, loopsAgainstHistory, unledOf, watchAgainstHistory, type HistoryRow, type LoopSpec, type Regrant, type WorkerLine } from './loops-check';

const [A, B] = ['aaaaaaaa-0000-4000-8000-000000000000', 'bbbbbbbb-0000-4000-8000-000000000000'];
const NS = 'loops-0';
const T0 = Date.UTC(2026, 0, 1);
const loops: LoopSpec[] = [
  { kind: 'elector', candidateId: A, intervalMs: 150, namespaces: [NS] },
  { kind: 'group', candidateId: B, intervalMs: 200, namespaces: [NS] },
];

/** One leadership's four steps, `at` ms after T0. */
function leadership(loop: number, term: number, lid: number, at: number, reason = 'lost'): WorkerLine[] {
  const step = (name: string, t: number, aborted: boolean, extra: Record<string, unknown> = {}) => ({ event: 'step', t: T0 + t, loop, step: name, ns: NS, term, lid, aborted, ...extra });
  return [step('cb-started', at, false), step('elected', at, false), step('cb-stopped', at + 100, true), step('demoted', at + 100, true, { reason })];
}

/**
 * A holds term 1, which is taken back and granted again to B; A then holds term 2 until its lease
 * ends locally, and the database renews it without a gap: A leads term 2 twice; B holds term 3.
 */
function clean() {
  const lines: WorkerLine[] = [
    ...leadership(0, 1, 1, 0),
    ...leadership(1, 1, 1, 200),
    ...leadership(0, 2, 2, 400, 'lease-expired-locally'),
    ...leadership(0, 2, 3, 510, 'stopped'),
    ...leadership(1, 3, 2, 700, 'stopped'),
    { event: 'stopped', t: T0 + 900 },
  ];
  const history: HistoryRow[] = [
    { term: 1, leaderId: B, acquiredAt: new Date(T0 + 200), endedAt: new Date(T0 + 300) },
    { term: 2, leaderId: A, acquiredAt: new Date(T0 + 400), endedAt: new Date(T0 + 610) },
    { term: 3, leaderId: B, acquiredAt: new Date(T0 + 700), endedAt: new Date(T0 + 800) },
  ];
  const regrants: Regrant[] = [{ ns: NS, term: 1, from: A }];
  return { lines, history, regrants };
}

function against(input: ReturnType<typeof clean>) {
  const steps = input.lines.filter((l) => l.event === 'step');
  return loopsAgainstHistory(loops, leadershipsOf(loops, steps), new Map([[NS, input.history]]), input.regrants, unledOf(loops, input.lines));
}

const change = (leaderId: string | null, term: number): LeaderChange => ({ ns: NS, leaderId, term, metadata: null, at: new Date(T0) });
const watched = [change(A, 1), change(B, 1), change(null, 1), change(A, 2), change(null, 2), change(B, 3), change(null, 3)];

describe('differential real loops: the checks of a round', () => {
  test('a clean record passes every check', () => {
    const input = clean();
    expect(callbackRule(loops, input.lines.filter((l) => l.event === 'step'), true).order).toEqual([]);
    expect(against(input)).toEqual({ violations: [], unled: 0, unledOfLed: 0 });
    expect(watchAgainstHistory(NS, watched, input.history, input.regrants)).toEqual([]);
  });

  test('the callback rule: a leadership ended before it started, or never ended though the loops stopped, fails', () => {
    const input = clean();
    const steps = input.lines.filter((l) => l.event === 'step');
    const swapped = steps.map((l) => (l['loop'] === 1 && l['lid'] === 2 && l['step'] === 'cb-stopped' ? { ...l, t: T0 + 650 } : l)).sort((x, y) => x.t - y.t);
    expect(callbackRule(loops, swapped, true).order).toEqual([
      'worker group 1 loops-0 term 3 (leadership 2): onStoppedLeading before onStartedLeading',
      "worker group 1 loops-0 term 3 (leadership 2): onStoppedLeading, onStartedLeading, 'elected', 'demoted' (its process stopped cleanly)",
    ]);
    const open = steps.filter((l) => !(l['loop'] === 1 && l['lid'] === 2 && ['cb-stopped', 'demoted'].includes(String(l['step']))));
    expect(callbackRule(loops, open, true).order).toEqual(["worker group 1 loops-0 term 3 (leadership 2): onStartedLeading, 'elected' (its process stopped cleanly)"]);
  });

  test('a term the history gives a loop that it never led, a leadership the history lacks, or a term led twice without a local demotion fails', () => {
    const missing = clean();
    missing.lines = missing.lines.filter((l) => !(l['loop'] === 1 && l['lid'] === 2));
    expect(against(missing).violations).toEqual(['group 1 in loops-0: its leaderships were of terms [1 (lost)], the history gives it terms [1, 3]']);

    const extra = clean();
    extra.history = extra.history.filter((h) => h.term !== 3);
    expect(against(extra).violations).toEqual(['group 1 in loops-0: its leaderships were of terms [1 (lost), 3 (stopped)], the history gives it terms [1]']);

    // The first grant of term 1 lost: A's leadership of it is unexplained.
    const notTwice = clean();
    notTwice.regrants = [];
    expect(against(notTwice).violations).toEqual(['elector 0 in loops-0: its leaderships were of terms [1 (lost), 2 (lease-expired-locally), 2 (stopped)], the history gives it terms [2]']);

    // Term 2 led twice, the first not ended by the local deadline: two grants the history lacks.
    const twice = clean();
    for (const l of twice.lines) if (l['loop'] === 0 && l['lid'] === 2 && l['step'] === 'demoted') l['reason'] = 'lost';
    expect(against(twice).violations).toEqual(["elector 0 in loops-0: its leaderships were of terms [1 (lost), 2 (lost), 2 (stopped)]; term 2 was granted to it 1 time(s) (granted at 2026-01-01T00:00:00.400Z)"]);
  });

  test('a term never led is excused only by a tick answered a lease late after it was granted, or a stop of that loop within a lease after it', () => {
    const unledTerm = (evidence: WorkerLine[]) => {
      const input = clean();
      input.lines = [...input.lines.filter((l) => !(l['loop'] === 1 && l['lid'] === 2)), ...evidence].sort((x, y) => x.t - y.t);
      return against(input);
    };
    expect(unledTerm([]).violations).toHaveLength(1);
    // A slow tick before the grant explains nothing.
    expect(unledTerm([{ event: 'slow-tick', t: T0 + 600, loop: 1, ms: 1200 }]).violations).toHaveLength(1);
    expect(unledTerm([{ event: 'slow-tick', t: T0 + 720, loop: 1, ms: 1200 }])).toEqual({ violations: [], unled: 1, unledOfLed: 0 });
    expect(unledTerm([{ event: 'stopping', t: T0 + 690, loop: 1 }, { event: 'loop-stopped', t: T0 + 750, loop: 1 }])).toEqual({ violations: [], unled: 1, unledOfLed: 0 });
    // A stop that began within a lease after the grant: the tick that made it may have been in flight.
    expect(unledTerm([{ event: 'stopping', t: T0 + 1600, loop: 1 }, { event: 'loop-stopped', t: T0 + 1700, loop: 1 }])).toEqual({ violations: [], unled: 1, unledOfLed: 0 });
    // One that began more than a lease after it: that tick had answered (or was a slow tick).
    expect(unledTerm([{ event: 'stopping', t: T0 + 1800, loop: 1 }, { event: 'loop-stopped', t: T0 + 1900, loop: 1 }]).violations).toHaveLength(1);
    // Another loop's stop explains nothing.
    expect(unledTerm([{ event: 'stopping', t: T0 + 690, loop: 0 }, { event: 'loop-stopped', t: T0 + 750, loop: 0 }]).violations).toHaveLength(1);
  });

  test('a term taken back and granted again to the loop that led it: the second grant unled is excused only by the same evidence, for that grant', () => {
    const again = (evidence: WorkerLine[]) => {
      const input = clean();
      // B never held term 1: the database granted it to A again, and A led it once.
      input.lines = [...input.lines.filter((l) => !(l['loop'] === 1 && l['lid'] === 1)), ...evidence].sort((x, y) => x.t - y.t);
      input.history = input.history.map((h) => (h.term === 1 ? { ...h, leaderId: A } : h));
      return against(input);
    };
    expect(again([]).violations).toEqual([
      'elector 0 in loops-0: its leaderships were of terms [1 (lost), 2 (lease-expired-locally), 2 (stopped)]; term 1 was granted to it 2 time(s) (granted at 2026-01-01T00:00:00.200Z; granted before the round took it back)',
    ]);
    expect(again([{ event: 'slow-tick', t: T0 + 250, loop: 0, ms: 1100 }])).toEqual({ violations: [], unled: 1, unledOfLed: 1 });
    expect(again([{ event: 'stopping', t: T0 + 150, loop: 0 }, { event: 'loop-stopped', t: T0 + 260, loop: 0 }])).toEqual({ violations: [], unled: 1, unledOfLed: 1 });
    // The worker's clocks disagreeing within a lease of the grant: its deadline may have passed early.
    expect(again([{ event: 'clock-step', t: T0 + 900, ms: 280 }])).toEqual({ violations: [], unled: 1, unledOfLed: 1 });
    expect(again([{ event: 'clock-step', t: T0 + 1300, ms: 280 }]).violations).toHaveLength(1);
    // Evidence of another loop, or from before the grant, explains nothing.
    expect(again([{ event: 'slow-tick', t: T0 + 250, loop: 1, ms: 1100 }]).violations).toHaveLength(1);
    expect(again([{ event: 'slow-tick', t: T0 + 100, loop: 0, ms: 1100 }]).violations).toHaveLength(1);
  });

  test('watch(): a missing holder of a term granted twice, a missing vacancy, an extra or reordered state fails', () => {
    const { history, regrants } = clean();
    const without = (i: number) => watched.filter((_, j) => j !== i);
    expect(watchAgainstHistory(NS, without(1), history, regrants)).toHaveLength(1);
    expect(watchAgainstHistory(NS, without(2), history, regrants)).toHaveLength(1);
    expect(watchAgainstHistory(NS, [...watched, change(A, 3)], history, regrants)).toHaveLength(1);
    expect(watchAgainstHistory(NS, [watched[1]!, watched[0]!, ...watched.slice(2)], history, regrants)).toHaveLength(1);
    // The empty namespace first is no state of a term.
    expect(watchAgainstHistory(NS, [{ ...change(null, 0), term: null }, ...watched], history, regrants)).toEqual([]);
  });
});
