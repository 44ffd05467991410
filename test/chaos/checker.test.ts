/**
 * The chaos checker on hand-made histories: each kind of violation is reported by its check, and
 * a clean history passes — so a green chaos run is evidence, not silence.
 */
// eslint-disable-next-line @typescript-eslint/no-require-imports
const { check } = require('../../tools/chaos/checker') as { check: (input: unknown) => CheckResult };

interface CheckResult {
  ok: boolean;
  checks: Array<{ id: string; ok: boolean; violations: string[] }>;
  gaps: Array<{ start: number; end: number; allowed: number }>;
}

const A = 'aaaaaaaa-0000-4000-8000-000000000000';
const B = 'bbbbbbbb-0000-4000-8000-000000000000';
const LEASE = 2000;
const T0 = 1_000_000;

type Row = { kind: string; term: number; holder: string | null; at: number; leaseUntil?: number; worker?: number; seq?: number };

function ledger(rows: Row[]) {
  return rows.map((r, i) => ({ id: i + 1, ns: 'chaos', worker: null, seq: null, leaseUntil: null, ...r }));
}

/** A clean history: A leads term 1, its lease runs out, B takes term 2 within a tick. */
function clean(): { rows: Row[]; events: Array<Record<string, unknown>> } {
  return {
    rows: [
      { kind: 'grant', term: 1, holder: A, at: T0, leaseUntil: T0 + LEASE },
      { kind: 'write', term: 1, holder: A, at: T0 + 100, worker: 0, seq: 1 },
      { kind: 'renew', term: 1, holder: A, at: T0 + 600, leaseUntil: T0 + 2600 },
      { kind: 'write', term: 1, holder: A, at: T0 + 700, worker: 0, seq: 2 },
      { kind: 'grant', term: 2, holder: B, at: T0 + 3000, leaseUntil: T0 + 5000 },
      { kind: 'write', term: 2, holder: B, at: T0 + 3100, worker: 1, seq: 1 },
    ],
    events: [
      { t: T0 - 500, ev: 'start', slot: 0, incarnation: 1, candidateId: A },
      { t: T0 - 500, ev: 'start', slot: 1, incarnation: 1, candidateId: B },
      { t: T0 + 1, ev: 'elected', slot: 0, incarnation: 1, term: 1 },
      { t: T0 + 90, ev: 'action-start', slot: 0, incarnation: 1, term: 1, seq: 1, at: T0 + 90 },
      { t: T0 + 110, ev: 'action-commit', slot: 0, incarnation: 1, term: 1, seq: 1 },
      { t: T0 + 690, ev: 'action-start', slot: 0, incarnation: 1, term: 1, seq: 2, at: T0 + 690 },
      { t: T0 + 710, ev: 'action-commit', slot: 0, incarnation: 1, term: 1, seq: 2 },
      { t: T0 + 3001, ev: 'elected', slot: 1, incarnation: 1, term: 2 },
      { t: T0 + 3090, ev: 'action-start', slot: 1, incarnation: 1, term: 2, seq: 1, at: T0 + 3090 },
      { t: T0 + 3110, ev: 'action-commit', slot: 1, incarnation: 1, term: 2, seq: 1 },
    ],
  };
}

function run(rows: Row[], events: Array<Record<string, unknown>>, faults: unknown[] = []) {
  return check({
    ledger: ledger(rows),
    events,
    faults,
    ns: 'chaos',
    leaseMs: LEASE,
    tickMaxMs: 733,
    slackMs: 0,
    clockToleranceMs: 5,
    runStart: T0 - 1000,
    stopAt: T0 + 4000,
  });
}

const failed = (result: CheckResult) => result.checks.filter((c) => !c.ok).map((c) => c.id);

describe('chaos checker', () => {
  test('a clean history passes every check', () => {
    const { rows, events } = clean();
    const result = run(rows, events);
    expect(failed(result)).toEqual([]);
    expect(result.gaps).toHaveLength(1); // 2600 → 3000: 400 ms without a leader, within a tick
  });

  test('(a) a write under the old term after the next grant is stale', () => {
    const { rows, events } = clean();
    rows.push({ kind: 'write', term: 1, holder: A, at: T0 + 3200, worker: 0, seq: 3 });
    expect(failed(run(rows, events))).toEqual(['a']);
  });

  test('(a) a write after its lease was vacated is stale', () => {
    const { rows, events } = clean();
    rows.splice(4, 0, { kind: 'vacate', term: 1, holder: null, at: T0 + 2000 }, { kind: 'write', term: 1, holder: A, at: T0 + 2100, worker: 0, seq: 3 });
    expect(failed(run(rows, events))).toContain('a');
  });

  test('(b) a skipped term, a reused term and a preempted lease are reported', () => {
    const skipped = clean();
    skipped.rows[4]!.term = 3;
    skipped.rows[5]!.term = 3;
    expect(failed(run(skipped.rows, skipped.events))).toContain('b');

    const preempted = clean();
    preempted.rows[4]!.at = T0 + 1000; // term 1's lease runs until T0 + 2600
    expect(failed(run(preempted.rows, preempted.events))).toContain('b');

    const twice = clean();
    twice.events.push({ t: T0 + 3002, ev: 'elected', slot: 0, incarnation: 1, term: 2 });
    expect(failed(run(twice.rows, twice.events))).toContain('b');
  });

  test('(c) an action of term 1 that starts after term 2 began is late', () => {
    const { rows, events } = clean();
    events.push({ t: T0 + 3050, ev: 'action-start', slot: 0, incarnation: 1, term: 1, seq: 3, at: T0 + 3050 });
    expect(failed(run(rows, events))).toEqual(['c']);
  });

  test('(c) an action decided in time but started late (its process paused after the check) is counted, not failed', () => {
    const { rows, events } = clean();
    events.push({ t: T0 + 3050, ev: 'action-start', slot: 0, incarnation: 1, term: 1, seq: 3, decidedAt: T0 + 2500, at: T0 + 3050 });
    const result = run(rows, events) as CheckResult & { stats: { pausedStarts: number } };
    expect(failed(result)).toEqual([]);
    expect(result.stats.pausedStarts).toBe(1);
  });

  test('(d) a leaderless gap longer than a tick needs a fault to explain it', () => {
    const { rows, events } = clean();
    for (const r of rows.slice(4)) r.at += 2000; // term 2 starts 2.4 s after term 1's lease ended
    (rows[4] as Row).leaseUntil = T0 + 7000;
    expect(failed(run(rows, events))).toEqual(['d']);
    const fault = { type: 'pause', slot: 0, start: T0 + 2000, end: T0 + 4500 };
    expect(failed(run(rows, events, [fault]))).toEqual([]);
  });

  test('(e) an unhandled rejection fails the run; (f) a stalled leader that was not fenced off fails it', () => {
    const crashed = clean();
    crashed.events.push({ t: T0 + 50, ev: 'unhandled-rejection', slot: 1, incarnation: 1, message: 'boom' });
    expect(failed(run(crashed.rows, crashed.events))).toEqual(['e']);

    const unfenced = clean();
    unfenced.events.push({ t: T0 + 689, ev: 'stall', slot: 0, incarnation: 1, where: 'before-fence', seq: 2 });
    expect(failed(run(unfenced.rows, unfenced.events))).toEqual(['f']);
  });
});
