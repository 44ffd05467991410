/**
 * The chaos checker on hand-made histories: each kind of violation is reported by its check, and
 * a clean history passes — so a green chaos run is evidence, not silence.
 */
// eslint-disable-next-line @typescript-eslint/no-require-imports
const { check, checkGroup } = require('../../tools/chaos/checker') as { check: (input: unknown) => CheckResult; checkGroup: (input: unknown) => CheckResult };

interface CheckResult {
  ok: boolean;
  checks: Array<{ id: string; ok: boolean; violations: string[] }>;
  gaps: Array<{ start: number; end: number; allowed: number }>;
}

const A = 'aaaaaaaa-0000-4000-8000-000000000000';
const B = 'bbbbbbbb-0000-4000-8000-000000000000';
const LEASE = 2000;
const T0 = 1_000_000;

type Row = {
  kind: string;
  term: number;
  holder: string | null;
  at: number;
  leaseUntil?: number;
  worker?: number;
  seq?: number;
  // A schedule's rows (claim, finish, job): its slot and attempt; a finish's state.
  name?: string;
  slot?: number;
  attempt?: number;
  state?: string;
};

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
      { t: T0 + 2590, ev: 'demoted', slot: 0, incarnation: 1, term: 1, reason: 'lease-expired-locally' },
      { t: T0 + 3001, ev: 'elected', slot: 1, incarnation: 1, term: 2 },
      { t: T0 + 3090, ev: 'action-start', slot: 1, incarnation: 1, term: 2, seq: 1, at: T0 + 3090 },
      { t: T0 + 3110, ev: 'action-commit', slot: 1, incarnation: 1, term: 2, seq: 1 },
    ],
  };
}

function run(rows: Row[], events: Array<Record<string, unknown>>, faults: unknown[] = [], extra: Record<string, unknown> = {}) {
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
    ...extra,
  });
}

const failed = (result: CheckResult) => result.checks.filter((c) => !c.ok).map((c) => c.id);

type History = { term: number; leaderId: string; acquiredAt: number; endedAt: number | null; endReason: string | null };
type Change = { t: number; leaderId: string | null; term: number | null; at: number };

/**
 * The clean history with what a run also reads: the history table (term 1 expired at its lease's
 * end, term 2 current), two watchers that saw every state, the slots' priorities (worker 1 is the
 * top, worker 2 is ineligible and never ran) and the leader at the end of the quiet tail.
 */
function full() {
  const { rows, events } = clean();
  const history: History[] = [
    { term: 1, leaderId: A, acquiredAt: T0, endedAt: T0 + 2600, endReason: 'expired' },
    { term: 2, leaderId: B, acquiredAt: T0 + 3000, endedAt: null, endReason: null },
  ];
  const changes = (): Change[] => [
    { t: T0 - 900, leaderId: null, term: null, at: T0 - 900 },
    { t: T0 + 5, leaderId: A, term: 1, at: T0 },
    { t: T0 + 2605, leaderId: null, term: 1, at: T0 + 2600 },
    { t: T0 + 3005, leaderId: B, term: 2, at: T0 + 3000 },
  ];
  return {
    rows,
    events,
    faults: [] as Array<Record<string, unknown>>,
    history,
    watches: [
      { name: 'fast', pollMs: undefined, changes: changes(), errors: 0 },
      { name: 'slow', pollMs: 6000, changes: changes(), errors: 0 },
    ],
    watchFailures: [] as string[],
    settings: [
      { slot: 0, priority: 0, eligible: true },
      { slot: 1, priority: 1, eligible: true },
      { slot: 2, priority: 5, eligible: false },
    ],
    final: { leaderId: B as string | null, term: 2, live: true, current: [A, B] },
  };
}

function runFull(input: ReturnType<typeof full>, extra: Record<string, unknown> = {}) {
  return check({
    ledger: ledger(input.rows),
    events: input.events,
    faults: input.faults,
    ns: 'chaos',
    leaseMs: LEASE,
    tickMaxMs: 733,
    slackMs: 0,
    clockToleranceMs: 5,
    runStart: T0 - 1000,
    stopAt: T0 + 4000,
    history: input.history,
    watches: input.watches,
    watchFailures: input.watchFailures,
    settings: input.settings,
    final: input.final,
    lastFaultEnd: T0 + 2000,
    settleMs: 1500,
    ...extra,
  });
}

/** Term 2 handed over to a third worker C (slot 2 made eligible with the top priority), then C stopped: vacated twice. */
const C = 'cccccccc-0000-4000-8000-000000000000';
function handOver() {
  const input = full();
  input.settings[2] = { slot: 2, priority: 5, eligible: true };
  input.rows.push(
    { kind: 'vacate', term: 2, holder: null, at: T0 + 3300 },
    { kind: 'grant', term: 3, holder: C, at: T0 + 3310, leaseUntil: T0 + 5310 },
    { kind: 'vacate', term: 3, holder: null, at: T0 + 3900 },
  );
  input.events.push(
    { t: T0 - 400, ev: 'start', slot: 2, incarnation: 1, candidateId: C },
    { t: T0 + 3290, ev: 'demoted', slot: 1, incarnation: 1, term: 2, reason: 'handed-over' },
    { t: T0 + 3311, ev: 'elected', slot: 2, incarnation: 1, term: 3 },
    { t: T0 + 3890, ev: 'demoted', slot: 2, incarnation: 1, term: 3, reason: 'stopped' },
  );
  input.history[1] = { ...input.history[1]!, endedAt: T0 + 3300, endReason: 'handed-over' };
  input.history.push({ term: 3, leaderId: C, acquiredAt: T0 + 3310, endedAt: T0 + 3900, endReason: 'unregistered' });
  for (const w of input.watches) {
    w.changes.push({ t: T0 + 3301, leaderId: null, term: 2, at: T0 + 3300 }, { t: T0 + 3311, leaderId: C, term: 3, at: T0 + 3310 }, { t: T0 + 3901, leaderId: null, term: 3, at: T0 + 3900 });
  }
  input.final = { leaderId: C, term: 3, live: true, current: [A, B, C] };
  return input;
}

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

  test('(c) a run in which no action of a term was followed by a later term has nothing to check, and fails', () => {
    const single = clean();
    single.rows = single.rows.slice(0, 4); // term 1 only
    single.events = single.events.filter((e) => e['slot'] === 0);
    const endsWithTerm1 = { stopAt: T0 + 2500 };
    const result = run(single.rows, single.events, [], endsWithTerm1);
    expect(failed(result)).toEqual(['c']);
    expect(result.checks.find((c) => c.id === 'c')!.violations[0]).toMatch(/nothing to check/);
    // Told that a namespace may have one term (group mode decides over all of them): no failure.
    expect(failed(run(single.rows, single.events, [], { ...endsWithTerm1, requireSecondTerm: false }))).toEqual([]);
    // A second term, but no action of the first: still nothing judged.
    const idleFirst = clean();
    idleFirst.rows = idleFirst.rows.filter((r) => !(r.kind === 'write' && r.term === 1));
    idleFirst.events = idleFirst.events.filter((e) => !(String(e['ev']).startsWith('action') && e['term'] === 1));
    expect(failed(run(idleFirst.rows, idleFirst.events))).toEqual(['c']);
  });

  test('(d) a leaderless gap longer than a tick needs a fault to explain it', () => {
    const { rows, events } = clean();
    for (const r of rows.slice(4)) r.at += 2000; // term 2 starts 2.4 s after term 1's lease ended
    (rows[4] as Row).leaseUntil = T0 + 7000;
    expect(failed(run(rows, events))).toEqual(['d']);
    const fault = { type: 'pause', slot: 0, start: T0 + 2000, end: T0 + 4500 };
    expect(failed(run(rows, events, [fault]))).toEqual([]);
  });

  test('(d) without a fault a gap gets one tick and the margin; with faults, their durations + lease + tick + margin, no more', () => {
    // Term 1's lease ends at T0 + 2600; term 2 is granted `gap` ms later.
    const withGap = (gap: number) => {
      const input = clean();
      for (const r of input.rows.slice(4)) r.at = T0 + 2600 + gap + (r.at - (T0 + 3000));
      input.rows[4]!.leaseUntil = input.rows[4]!.at + LEASE;
      for (const e of input.events.filter((x) => x['slot'] === 1 && x['ev'] !== 'start')) {
        for (const k of ['t', 'at']) if (typeof e[k] === 'number') e[k] = (e[k] as number) + gap - 400;
      }
      return input;
    };
    const margin = { slackMs: 300 };
    // No fault: tick 733 + margin 300.
    expect(failed(run(withGap(1033).rows, withGap(1033).events, [], margin))).toEqual([]);
    expect(failed(run(withGap(1040).rows, withGap(1040).events, [], margin))).toEqual(['d']);
    // A 500 ms fault that ended just before the lease ran out: 500 + lease 2000 + tick 733 + margin 300.
    const fault = { type: 'conn-kill', slot: 1, start: T0 + 2000, end: T0 + 2500 };
    expect(failed(run(withGap(3533).rows, withGap(3533).events, [fault], margin))).toEqual([]);
    expect(failed(run(withGap(3540).rows, withGap(3540).events, [fault], margin))).toEqual(['d']);
    // A fault that ended more than a lease and a tick before the gap explains nothing.
    const old = { type: 'kill', slot: 0, start: T0 - 300, end: T0 - 200 };
    expect(failed(run(withGap(1040).rows, withGap(1040).events, [old], margin))).toEqual(['d']);
  });

  test('(d) the workers\' measured ticks widen the bound: twice the longest tick near the gap + the most a tick started late, no more', () => {
    // Term 1's lease ends at T0 + 2600; term 2 is granted 1,500 ms later, beyond tick 733 + margin 300.
    const input = () => {
      const x = clean();
      for (const r of x.rows.slice(4)) r.at += 1100;
      x.rows[4]!.leaseUntil = x.rows[4]!.at + LEASE;
      for (const e of x.events.filter((y) => y['slot'] === 1 && y['ev'] !== 'start')) {
        for (const k of ['t', 'at']) if (typeof e[k] === 'number') e[k] = (e[k] as number) + 1100;
      }
      return x;
    };
    const margin = { slackMs: 300 };
    const tick = (slot: number, end: number, ms: number) => ({ t: end, ev: 'tick', slot, incarnation: 1, ms, failed: false });
    const gapOf = (events: Array<Record<string, unknown>>) => {
      const { rows } = input();
      return run(rows, events, [], margin);
    };
    // Quick ticks (20 ms, on time) explain nothing.
    const quick = [...input().events, tick(1, T0 + 2000, 20), tick(1, T0 + 2720, 20), tick(1, T0 + 3440, 20), tick(1, T0 + 4100, 20)];
    expect(failed(gapOf(quick))).toEqual(['d']);
    // The follower's tick in flight at the lease's end took 200 ms and the taking one 200 ms:
    // 1,033 + 2 × 200 = 1,433 < 1,500 still fails; 250 ms ticks (1,533) explain it.
    const slowBy = (ms: number) => [...input().events, tick(1, T0 + 2700, ms), tick(1, T0 + 2700 + 700 + ms, ms)];
    expect(failed(gapOf(slowBy(200)))).toEqual(['d']);
    const explained = gapOf(slowBy(250));
    expect(failed(explained)).toEqual([]);
    expect(explained.gaps.find((g) => g.end - g.start > 1400)!.allowed).toBe(733 + 300 + 500);
    // A timer that fired 500 ms late: its tick started 733 + 500 ms after the previous one ended.
    const late = [...input().events, tick(1, T0 + 2500, 10), tick(1, T0 + 2500 + 733 + 500 + 10, 10)];
    expect(failed(gapOf(late))).toEqual([]);
    // Ticks far from the gap explain nothing.
    const far = [...input().events, tick(1, T0 - 2000, 900), tick(1, T0 + 9000, 900)];
    expect(failed(gapOf(far))).toEqual(['d']);
  });

  test('(d) the first term must be granted within start-up + a tick of the first worker\'s start', () => {
    const startedAt = (ms: number) => {
      const input = clean(); // first grant at T0
      for (const e of input.events.filter((x) => x['ev'] === 'start')) e['t'] = T0 - ms;
      return input;
    };
    // The default allowance: 5 s of start-up + a tick (733 ms).
    expect(failed(run(startedAt(5700).rows, startedAt(5700).events))).toEqual([]);
    const late = run(startedAt(5800).rows, startedAt(5800).events);
    expect(failed(late)).toEqual(['d']);
    expect(late.checks.find((c) => c.id === 'd')!.violations[0]).toMatch(/first term was granted 5800 ms after the first worker started \(allowed 5733 ms/);
    expect(failed(run(startedAt(1000).rows, startedAt(1000).events, [], { startupMs: 200 }))).toEqual(['d']);
  });

  test('(e) single mode: a crash, an unhandled rejection, a run without writes, or commits the ledger lacks fail the run', () => {
    const crashed = clean();
    crashed.events.push({ t: T0 + 50, ev: 'unhandled-rejection', slot: 1, incarnation: 1, message: 'boom' });
    expect(failed(run(crashed.rows, crashed.events))).toEqual(['e']);

    const fatal = clean();
    fatal.events.push({ t: T0 + 50, ev: 'fatal', slot: 1, incarnation: 1, message: 'boom' });
    expect(failed(run(fatal.rows, fatal.events))).toEqual(['e']);

    const idle = clean(); // actions started, nothing committed
    idle.rows = idle.rows.filter((r) => r.kind !== 'write');
    idle.events = idle.events.filter((e) => e['ev'] !== 'action-commit');
    const nothing = run(idle.rows, idle.events);
    expect(failed(nothing)).toEqual(['e']);
    expect(nothing.checks.find((c) => c.id === 'e')!.violations).toEqual(['no fenced write committed: the run proves nothing']);

    const unledgered = clean();
    unledgered.rows = unledgered.rows.filter((r) => !(r.kind === 'write' && r.seq === 2));
    expect(failed(run(unledgered.rows, unledgered.events))).toEqual(['e']);
  });

  test('(f) a stalled leader that was not fenced off, an in-fence stall that was fenced off, or a stalled action that never ended fails the run', () => {
    const unfenced = clean();
    unfenced.events.push({ t: T0 + 689, ev: 'stall', slot: 0, incarnation: 1, where: 'before-fence', seq: 2, ms: 3000 });
    expect(failed(run(unfenced.rows, unfenced.events))).toEqual(['f']);

    // Seq 2 stalled inside the fence, yet NotLeaderError: the fence did not hold its lock.
    const fencedInFence = clean();
    fencedInFence.rows = fencedInFence.rows.filter((r) => !(r.kind === 'write' && r.seq === 2 && r.term === 1));
    const commit = fencedInFence.events.findIndex((e) => e['ev'] === 'action-commit' && e['seq'] === 2 && e['slot'] === 0);
    fencedInFence.events.splice(commit, 1, { t: T0 + 710, ev: 'action-fenced', slot: 0, incarnation: 1, term: 1, seq: 2, current: 1, leaderId: A });
    fencedInFence.events.push({ t: T0 + 695, ev: 'stall', slot: 0, incarnation: 1, where: 'in-fence', seq: 2, ms: 3000 });
    fencedInFence.events.sort((a, b) => Number(a['t']) - Number(b['t']));
    const result = run(fencedInFence.rows, fencedInFence.events);
    expect(failed(result)).toEqual(['f']);
    expect(result.checks.find((c) => c.id === 'f')!.violations[0]).toMatch(/stalled in-fence \(seq 2\): action-fenced, expected action-commit/);

    // A stalled action with no outcome: a failure, unless its process was killed or stopped, or the run ended first.
    const hung = () => {
      const input = clean();
      input.events.push(
        { t: T0 + 3095, ev: 'action-start', slot: 1, incarnation: 1, term: 2, seq: 2, at: T0 + 3095 },
        { t: T0 + 3096, ev: 'stall', slot: 1, incarnation: 1, where: 'in-fence', seq: 2, ms: 500 },
      );
      return input;
    };
    const never = run(hung().rows, hung().events);
    expect(failed(never)).toEqual(['f']);
    expect(never.checks.find((c) => c.id === 'f')!.violations[0]).toMatch(/never ended/);
    const killed = { type: 'kill', slot: 1, start: T0 + 3400, end: T0 + 3900 };
    expect(failed(run(hung().rows, hung().events, [killed]))).toEqual([]);
    const stopped = hung();
    stopped.events.push({ t: T0 + 3500, ev: 'stopping', slot: 1, incarnation: 1 });
    expect(failed(run(stopped.rows, stopped.events))).toEqual([]);
    expect(failed(run(hung().rows, hung().events, [], { stopAt: T0 + 3300 }))).toEqual([]);
  });

  test('(f) the stalls the schedule guaranteed must have happened with their outcome; (i) then needs a fenced-off write', () => {
    const expectBoth = { expectStalls: ['in-fence', 'before-fence'] };
    // None happened.
    const none = runFull(full(), expectBoth);
    expect(failed(none)).toEqual(['f', 'i']);
    expect(none.checks.find((c) => c.id === 'f')!.violations).toEqual([
      'no stall in-fence ended as expected (committed): nothing to check',
      'no stall before-fence ended as expected (fenced off): nothing to check',
    ]);
    // Both: A stalled inside the fence (seq 2 committed); B's later action stalled before it and was fenced off.
    const both = full();
    both.events.push(
      { t: T0 + 695, ev: 'stall', slot: 0, incarnation: 1, where: 'in-fence', seq: 2, ms: 3000 },
      { t: T0 + 3500, ev: 'action-start', slot: 1, incarnation: 1, term: 2, seq: 2, at: T0 + 3500 },
      { t: T0 + 3501, ev: 'stall', slot: 1, incarnation: 1, where: 'before-fence', seq: 2, ms: 300 },
      { t: T0 + 3810, ev: 'action-fenced', slot: 1, incarnation: 1, term: 2, seq: 2, current: 2, leaderId: B },
    );
    both.events.sort((a, b) => Number(a['t']) - Number(b['t']));
    expect(failed(runFull(both, expectBoth))).toEqual([]);
    // Only the in-fence one: (f) misses the other, and (i) has no fenced-off write to check.
    const inFenceOnly = full();
    inFenceOnly.events.push({ t: T0 + 695, ev: 'stall', slot: 0, incarnation: 1, where: 'in-fence', seq: 2, ms: 3000 });
    inFenceOnly.events.sort((a, b) => Number(a['t']) - Number(b['t']));
    const partial = runFull(inFenceOnly, expectBoth);
    expect(failed(partial)).toEqual(['f', 'i']);
    expect(partial.checks.find((c) => c.id === 'i')!.violations[0]).toMatch(/no write was fenced off/);
  });

  test('with its history, watchers and priorities, a clean run passes (h)–(l); so does one with a hand-over and a stop', () => {
    const clean = runFull(full());
    expect(failed(clean)).toEqual([]);
    expect(clean.checks.map((c) => c.id)).toEqual(expect.arrayContaining(['h', 'i', 'j', 'k', 'l']));
    const handed = runFull(handOver()) as CheckResult & { stats: { handOvers: number; historyRows: number } };
    expect(failed(handed)).toEqual([]);
    expect(handed.stats).toMatchObject({ handOvers: 1, historyRows: 3 });
  });

  test('(h) the history must hold exactly the ledger\'s terms 1..n, with the ledger\'s leaders', () => {
    const missing = full();
    missing.history.pop();
    for (const w of missing.watches) w.changes.pop();
    expect(failed(runFull(missing))).toEqual(['h']);

    const renumbered = full();
    renumbered.history[1]!.term = 3;
    expect(failed(runFull(renumbered))).toContain('h');

    const otherLeader = full();
    otherLeader.history[1]!.leaderId = A;
    expect(failed(runFull(otherLeader))).toContain('h');

    const invented = full();
    invented.history.push({ term: 3, leaderId: A, acquiredAt: T0 + 3900, endedAt: null, endReason: null });
    invented.history[1] = { ...invented.history[1]!, endedAt: T0 + 3900, endReason: 'unregistered' };
    expect(failed(runFull(invented))).toContain('h');
  });

  test('(h) terms never overlap: an end after the next acquisition, or a term left open before the next one, is reported', () => {
    const overlap = full();
    overlap.history[0]!.endedAt = T0 + 3001;
    expect(failed(runFull(overlap))).toContain('h');

    const open = full();
    open.history[0] = { ...open.history[0]!, endedAt: null, endReason: null };
    expect(failed(runFull(open))).toContain('h');
  });

  test('(h) end reasons: a lapsed lease is expired at its own end; a vacate is the hand-over or stop its holder reported; nobody resigns', () => {
    const notExpired = full();
    notExpired.history[0]!.endReason = 'handed-over';
    expect(failed(runFull(notExpired))).toEqual(['h']);

    const lateEnd = full();
    lateEnd.history[0]!.endedAt = T0 + 2700; // noticed later, but an expired term ends at its lease's end
    for (const w of lateEnd.watches) w.changes[2]!.at = T0 + 2700;
    expect(failed(runFull(lateEnd))).toEqual(['h']);

    const vacatedButExpired = handOver();
    vacatedButExpired.history[1]!.endReason = 'expired';
    expect(failed(runFull(vacatedButExpired))).toEqual(['h']);

    const stoppedButHandedOver = handOver();
    stoppedButHandedOver.history[2]!.endReason = 'handed-over';
    expect(failed(runFull(stoppedButHandedOver))).toEqual(['h']);

    const resigned = handOver();
    resigned.history[1]!.endReason = 'resigned';
    expect(failed(runFull(resigned))).toEqual(['h']);

    const nobodyOutranks = handOver();
    nobodyOutranks.settings[2] = { slot: 2, priority: 1, eligible: true }; // B (priority 1) was already the top
    expect(failed(runFull(nobodyOutranks))).toEqual(['h']);
  });

  test('(i) a fenced-off write under a (term, candidate) the history lacks is reported', () => {
    const attributable = full();
    attributable.events.push({ t: T0 + 3050, ev: 'action-fenced', slot: 0, incarnation: 1, term: 1, seq: 3, current: 2, leaderId: B });
    expect(failed(runFull(attributable))).toEqual([]);

    const foreign = full();
    foreign.events.push({ t: T0 + 3050, ev: 'action-fenced', slot: 0, incarnation: 1, term: 2, seq: 3, current: 2, leaderId: B });
    expect(failed(runFull(foreign))).toEqual(['i']);
  });

  test('(j) a watcher that missed a term or a vacancy, repeated a state, went back, or dated a state wrongly is reported', () => {
    const cases: Array<(changes: Change[]) => void> = [
      (c) => c.splice(1, 1), // never saw term 1
      (c) => c.splice(2, 1), // never saw the vacancy after term 1
      (c) => c.splice(2, 0, { ...c[1]! }), // term 1 twice
      (c) => c.push({ t: T0 + 3900, leaderId: null, term: 1, at: T0 + 2600 }), // back to an older state
      (c) => (c[3]!.at = T0 + 2990), // term 2 dated 10 ms off the history
      (c) => c.push({ t: T0 + 3900, leaderId: A, term: 3, at: T0 + 3900 }), // a term the history lacks
    ];
    for (const spoil of cases) {
      const input = full();
      spoil(input.watches[1]!.changes);
      expect(failed(runFull(input))).toEqual(['j']);
    }
    const broken = full();
    broken.watchFailures.push('slow ended with NotInitializedError');
    expect(failed(runFull(broken))).toEqual(['j']);
  });

  test('(j) a watcher may end a term early only where its lease lapsed and its holder renewed it under the same term', () => {
    // Term 2's lease lapses at T0 + 3000 while B's renewal waits with the row locked; the renewal
    // then commits under term 2 and the term ends with the hand-over at T0 + 3300.
    const lapse = () => {
      const input = handOver();
      input.watches[1]!.changes.find((c) => c.term === 2 && c.leaderId === null)!.at = T0 + 3000;
      return input;
    };
    // Without the holder's own account of it, an early end is a watcher's error.
    expect(failed(runFull(lapse()))).toEqual(['j']);
    const renewed = lapse();
    renewed.events.push(
      { t: T0 + 2999, ev: 'demoted', slot: 1, incarnation: 1, term: 2, reason: 'lease-expired-locally' },
      { t: T0 + 3100, ev: 'elected', slot: 1, incarnation: 1, term: 2 },
    );
    renewed.events.sort((a, b) => Number(a.t) - Number(b.t));
    expect(failed(runFull(renewed))).toEqual([]);
  });

  test('(j) …or at its lease\'s end where a vacate decided before that end committed after it', () => {
    // C's stop unregisters it at T0 + 3900 (the history's end of term 3), 15 ms before its lease
    // ends; the transaction commits after that end, so the slow watcher saw the lease lapse first.
    const vacate = (watcherAt: number) => {
      const input = handOver();
      input.rows.find((r) => r.kind === 'grant' && r.term === 3)!.leaseUntil = T0 + 3915;
      input.watches[1]!.changes.find((c) => c.term === 3 && c.leaderId === null)!.at = watcherAt;
      return input;
    };
    expect(failed(runFull(vacate(T0 + 3915)))).toEqual([]);
    // Dated neither at the vacate nor at the lease's end: the watcher's error.
    expect(failed(runFull(vacate(T0 + 3930)))).toEqual(['j']);
    // Before the vacate: never.
    expect(failed(runFull(vacate(T0 + 3880)))).toEqual(['j']);
  });

  test('(j) …or where the renewal committed after the lapse and its lease ran out, its holder frozen and demoted late', () => {
    // Term 1's first lease ends at T0 + 2000; the renewal to T0 + 2600 committed only after that
    // (its client froze between the UPDATE and the COMMIT, the row locked): a watcher dated the
    // vacancy at T0 + 2000, and the history ends the term, expired, at T0 + 2600. The holder's
    // local deadline demoted it, reported late (its process was frozen), and it never led again.
    const late = (reason: string) => {
      const input = full();
      input.watches[1]!.changes.find((c) => c.term === 1 && c.leaderId === null)!.at = T0 + 2000;
      const demotion = input.events.find((e) => e.ev === 'demoted' && e.term === 1)!;
      Object.assign(demotion, { t: T0 + 2000 + LEASE + 800, reason });
      input.events.sort((a, b) => Number(a.t) - Number(b.t));
      return input;
    };
    expect(failed(runFull(late('lease-expired-locally')))).toEqual([]);
    // Demoted for another reason, the early end is a watcher's error.
    expect(failed(runFull(late('stopped')))).toEqual(['j']);
    // A term that did not end expired needs the holder's re-election under it.
    const handedOver = late('lease-expired-locally');
    handedOver.history[0]!.endReason = 'handed-over';
    expect(failed(runFull(handedOver))).toContain('j');
  });

  test('(j) …or where the renewal answered after the lapse told its holder to hand over, and it did', () => {
    // Term 1's first lease ends at T0 + 2000 while A's renewal waits with the row locked and
    // commits after that end (a watcher saw the lease lapse); A's local deadline demoted it; the
    // renewal's answer (a preferred candidate is live: hand over) came after, and A's hand-over
    // ended the term later (chaos ci3 at 333a184, MariaDB: a 1.4 s tick, then 'handed-over').
    const across = (tick?: { t: number; ms: number; failed?: boolean }) => {
      const input = full();
      input.watches[1]!.changes.find((c) => c.term === 1 && c.leaderId === null)!.at = T0 + 2000;
      input.history[0]!.endReason = 'handed-over';
      if (tick) input.events.push({ ev: 'tick', slot: 0, incarnation: 1, failed: false, ...tick });
      input.events.sort((a, b) => Number(a.t) - Number(b.t));
      return input;
    };
    // Without a renewal in flight across the lapse, the early end is a watcher's error.
    expect(failed(runFull(across()))).toContain('j');
    expect(failed(runFull(across({ t: T0 + 2700, ms: 800 })))).not.toContain('j');
    // Sent after the lease's end, answered before the demotion, or failed: it renewed nothing across it.
    expect(failed(runFull(across({ t: T0 + 2700, ms: 600 })))).toContain('j');
    expect(failed(runFull(across({ t: T0 + 2500, ms: 800 })))).toContain('j');
    expect(failed(runFull(across({ t: T0 + 2700, ms: 800, failed: true })))).toContain('j');
  });

  test('(k) an ineligible worker must never lead, and the quiet tail must end with a live top-priority leader', () => {
    const ineligibleLed = full();
    ineligibleLed.settings[1] = { slot: 1, priority: 1, eligible: false };
    ineligibleLed.settings[0] = { slot: 0, priority: 2, eligible: true };
    ineligibleLed.final.leaderId = A;
    ineligibleLed.final.current = [A, B];
    const result = runFull(ineligibleLed);
    expect(failed(result)).toEqual(['k']);
    expect(result.checks.find((c) => c.id === 'k')!.violations.join('\n')).toMatch(/ineligible worker 1 .* was granted term 2/);

    const lowLeader = full();
    lowLeader.final.leaderId = A; // worker 0, priority 0, while worker 1 has priority 1
    expect(failed(runFull(lowLeader))).toEqual(['k']);

    const vacant = full();
    vacant.final.live = false;
    expect(failed(runFull(vacant))).toEqual(['k']);

    const gone = full();
    gone.final.current = [A]; // B's process was replaced: a leftover candidate leads
    expect(failed(runFull(gone))).toEqual(['k']);
  });

  test('(l) a worker reporting leadership while another one leads is reported; a late demotion report is bounded by its lease', () => {
    const early = full();
    // B reports being elected 1 s before its grant, while A's lease ran.
    Object.assign(early.events.find((e) => e['ev'] === 'elected' && e['slot'] === 1)!, { t: T0 + 2000 });
    expect(failed(runFull(early))).toEqual(['l']);

    const lateReport = full();
    // A's process was frozen: it reports its demotion 1 s after its lease ended (and B took over).
    Object.assign(lateReport.events.find((e) => e['ev'] === 'demoted')!, { t: T0 + 3600 });
    expect(failed(runFull(lateReport))).toEqual([]);
  });
});

// The ledger rows of the workers' schedule: a slot's claim, its final state, the job's own row.
const NAME = 'chaos-ledger';
const claim = (term: number, holder: string, slot: number, attempt: number, at: number): Row => ({ kind: 'claim', term, holder, at, name: NAME, slot, attempt, state: 'running' });
const finish = (term: number, holder: string, slot: number, attempt: number, at: number, state = 'done'): Row => ({ kind: 'finish', term, holder, at, name: NAME, slot, attempt, state });
const job = (term: number, holder: string, slot: number, attempt: number, at: number): Row => ({ kind: 'job', term, holder, at, name: NAME, slot, attempt, worker: holder === A ? 0 : 1 });

describe('chaos checker (r): the runs of the workers\' schedule', () => {
  const S1 = T0;
  const S2 = T0 + 1000;
  const S3 = T0 + 3000;
  type RunRow = { ns: string; name: string; slot: number; state: string; attempt: number; term: number; candidateId: string };

  /**
   * The clean history with a schedule: A claims and completes S1 under term 1, claims S2 and loses
   * its lease before its job commits; B, under term 2, claims S2 again (attempt 2) and completes
   * it, then claims S3, whose job still runs at the end. The runs table says the same.
   */
  function scheduled() {
    const { rows, events } = clean();
    const at = (i: number) => rows.findIndex((r, j) => j >= i && r.kind === 'grant' && r.term === 2);
    rows.splice(1, 0, claim(1, A, S1, 1, T0 + 50), job(1, A, S1, 1, T0 + 55), finish(1, A, S1, 1, T0 + 56));
    rows.splice(at(0), 0, claim(1, A, S2, 1, T0 + 1001));
    rows.push(claim(2, B, S2, 2, T0 + 3050), job(2, B, S2, 2, T0 + 3051), finish(2, B, S2, 2, T0 + 3052), claim(2, B, S3, 1, T0 + 3101));
    const runs: RunRow[] = [
      { ns: 'chaos', name: NAME, slot: S1, state: 'done', attempt: 1, term: 1, candidateId: A },
      { ns: 'chaos', name: NAME, slot: S2, state: 'done', attempt: 2, term: 2, candidateId: B },
      { ns: 'chaos', name: NAME, slot: S3, state: 'running', attempt: 1, term: 2, candidateId: B },
    ];
    return { rows, events, runs };
  }

  const runScheduled = (input: ReturnType<typeof scheduled>) => run(input.rows, input.events, [], { scheduled: true, runs: input.runs });
  const violationsOf = (result: CheckResult) => result.checks.find((c) => c.id === 'r')?.violations ?? [];

  test('a clean run of its schedule passes (r), and the stats count its claims, re-claims, done slots and job rows', () => {
    const result = runScheduled(scheduled()) as CheckResult & { stats: Record<string, number> };
    expect(failed(result)).toEqual([]);
    expect(result.checks.map((c) => c.id)).toContain('r');
    expect(result.stats).toMatchObject({ claims: 4, reclaims: 1, slots: 3, doneSlots: 2, runningSlots: 1, jobRows: 2, runRows: 3 });
    // Without `scheduled` there is no (r).
    expect(run(scheduled().rows, scheduled().events).checks.map((c) => c.id)).not.toContain('r');
  });

  test('a slot claimed under term n after term n+1 was granted fails (r); so does a claim by a holder that vacated, or under a term never granted', () => {
    const late = scheduled();
    late.rows.push(claim(1, A, T0 + 4000, 1, T0 + 3200));
    late.runs.push({ ns: 'chaos', name: NAME, slot: T0 + 4000, state: 'running', attempt: 1, term: 1, candidateId: A });
    expect(failed(runScheduled(late))).toEqual(['r']);
    expect(violationsOf(runScheduled(late))).toEqual([expect.stringMatching(/^ledger #\d+: attempt 1 claimed for slot 1970-01-01T00:16:44\.000Z of "chaos-ledger" by a\S+ under term 1 after term 2 was granted$/)]);

    const vacated = scheduled();
    vacated.rows.push({ kind: 'vacate', term: 2, holder: null, at: T0 + 3300 }, claim(2, B, T0 + 4000, 1, T0 + 3400));
    vacated.runs.push({ ns: 'chaos', name: NAME, slot: T0 + 4000, state: 'running', attempt: 1, term: 2, candidateId: B });
    expect(violationsOf(runScheduled(vacated))).toEqual([expect.stringMatching(/under term 2 after that term was vacated$/)]);

    const ungranted = scheduled();
    ungranted.rows.push(finish(3, B, S3, 1, T0 + 3500));
    expect(violationsOf(runScheduled(ungranted)).join('\n')).toMatch(/done recorded for slot .* under term 3, which was never granted/);
  });

  test('a slot abandoned by a later term\'s claim keeps the term of the run it ends, and passes (r); one abandoned under no later term fails', () => {
    const input = scheduled();
    // B hands term 2 over to A, whose claim of S3 finds its runs used up: S3 abandoned, recorded under B's term 2.
    input.rows.push({ kind: 'vacate', term: 2, holder: null, at: T0 + 3400 }, { kind: 'grant', term: 3, holder: A, at: T0 + 3410, leaseUntil: T0 + 5410 }, finish(2, B, S3, 1, T0 + 3420, 'abandoned'));
    input.runs[2] = { ...input.runs[2]!, state: 'abandoned' };
    const result = runScheduled(input) as CheckResult & { stats: Record<string, number> };
    expect(failed(result)).toEqual([]);
    expect(result.stats).toMatchObject({ abandonedSlots: 1, doneSlots: 2 });

    // The same term abandons it too (a retake whose runs are used up); a term not granted yet cannot.
    const retaken = scheduled();
    retaken.rows.push(finish(2, B, S3, 1, T0 + 3420, 'abandoned'));
    retaken.runs[2] = { ...retaken.runs[2]!, state: 'abandoned' };
    expect(failed(runScheduled(retaken))).toEqual([]);
    const early = scheduled();
    early.rows.push(finish(3, B, S3, 1, T0 + 3420, 'abandoned'));
    early.runs[2] = { ...early.runs[2]!, state: 'abandoned', term: 3 };
    expect(violationsOf(runScheduled(early))).toEqual([expect.stringMatching(/abandoned recorded for slot .* under term 3: abandoned under a term never granted \(the leader row is at term 2\)$/)]);
  });

  test('two done completions of one slot fail (r)', () => {
    const input = scheduled();
    input.rows.push(finish(2, B, S2, 2, T0 + 3200));
    expect(failed(runScheduled(input))).toEqual(['r']);
    expect(violationsOf(runScheduled(input)).join('\n')).toMatch(/slot 1970-01-01T00:16:41\.000Z of "chaos-ledger": completed done 2 times/);
  });

  test('a job row whose slot is not done, or a done slot without exactly one job row, fails (r)', () => {
    const orphan = scheduled();
    orphan.rows.push(job(2, B, S3, 1, T0 + 3150));
    expect(failed(runScheduled(orphan))).toEqual(['r']);
    expect(violationsOf(runScheduled(orphan))).toEqual([expect.stringMatching(/slot 1970-01-01T00:16:43\.000Z .*: a job row \(ledger #\d+, term 2, attempt 1\) whose slot is not done \(no final state\)$/)]);

    const none = scheduled();
    none.rows.splice(none.rows.findIndex((r) => r.kind === 'job'), 1);
    expect(violationsOf(runScheduled(none))).toEqual([expect.stringMatching(/slot 1970-01-01T00:16:40\.000Z .*: done with 0 job rows/)]);

    const twice = scheduled();
    twice.rows.push(job(2, B, S2, 2, T0 + 3200));
    expect(violationsOf(runScheduled(twice))).toEqual([expect.stringMatching(/slot 1970-01-01T00:16:41\.000Z .*: done with 2 job rows/)]);
  });

  test('attempts that do not go 1, 2, 3, … (or a re-claim under an older term, or after the slot was done) fail (r); a retake under the same term passes', () => {
    const sameTerm = scheduled();
    sameTerm.rows.push(claim(2, B, S3, 2, T0 + 3200));
    sameTerm.runs[2]!.attempt = 2;
    expect(failed(runScheduled(sameTerm))).toEqual([]);

    const skipped = scheduled();
    const reclaim = skipped.rows.findIndex((r) => r.kind === 'claim' && r.attempt === 2);
    for (const r of skipped.rows.slice(reclaim, reclaim + 3)) r.attempt = 3;
    skipped.runs[1]!.attempt = 3;
    expect(failed(runScheduled(skipped))).toEqual(['r']);
    expect(violationsOf(runScheduled(skipped))).toEqual([expect.stringMatching(/attempt 3 claimed \(ledger #\d+\) after attempt 1, expected attempt 2$/)]);

    const first = scheduled();
    first.rows[1]!.attempt = 2;
    expect(violationsOf(runScheduled(first)).join('\n')).toMatch(/attempt 2 claimed \(ledger #2\) as its first claim, expected attempt 1/);

    const again = scheduled();
    again.rows.push(claim(2, B, S1, 2, T0 + 3200));
    expect(violationsOf(runScheduled(again)).join('\n')).toMatch(/slot 1970-01-01T00:16:40\.000Z .*: claimed again \(ledger #\d+\) after it was recorded done/);
  });

  test('the runs table must hold each slot\'s last claim and final state as the ledger logged them, and no other slot', () => {
    const stale = scheduled();
    stale.runs[2] = { ...stale.runs[2]!, state: 'done' };
    expect(failed(runScheduled(stale))).toEqual(['r']);
    expect(violationsOf(runScheduled(stale))).toEqual([expect.stringMatching(/runs table's slot 1970-01-01T00:16:43\.000Z .* is done, attempt 1, term 2 .*; the ledger's last record of it is running, attempt 1, term 2/)]);

    const missing = scheduled();
    missing.runs.pop();
    expect(violationsOf(runScheduled(missing))).toEqual([expect.stringMatching(/in the ledger \(ledger #\d+\) but not in the runs table$/)]);

    const unseen = scheduled();
    unseen.runs.push({ ns: 'chaos', name: NAME, slot: T0 + 9000, state: 'missed', attempt: 0, term: 2, candidateId: B });
    expect(violationsOf(runScheduled(unseen))).toEqual([expect.stringMatching(/never appeared in the ledger$/)]);
  });

  test('a scheduled run without any claim has nothing to check, and fails (r)', () => {
    const { rows, events } = clean();
    expect(violationsOf(run(rows, events, [], { scheduled: true, runs: [] }))).toEqual(['no slot was claimed: nothing to check']);
  });
});

describe('chaos checker, group mode (one LeaderElectorGroup per worker, fenced writes per namespace)', () => {
  const NS = ['chaos-0', 'chaos-1'];
  type GroupRow = Row & { ns: string };

  /** A leads chaos-0 and B leads chaos-1, both terms 1, each renewed past the end of the run, two writes each. */
  function group() {
    const rows: GroupRow[] = [
      { ns: NS[0]!, kind: 'grant', term: 1, holder: A, at: T0, leaseUntil: T0 + LEASE },
      { ns: NS[1]!, kind: 'grant', term: 1, holder: B, at: T0 + 10, leaseUntil: T0 + 10 + LEASE },
      { ns: NS[0]!, kind: 'write', term: 1, holder: A, at: T0 + 100, worker: 0, seq: 1 },
      { ns: NS[1]!, kind: 'write', term: 1, holder: B, at: T0 + 110, worker: 1, seq: 1 },
      { ns: NS[0]!, kind: 'renew', term: 1, holder: A, at: T0 + 1500, leaseUntil: T0 + 5000 },
      { ns: NS[1]!, kind: 'renew', term: 1, holder: B, at: T0 + 1510, leaseUntil: T0 + 5010 },
      { ns: NS[0]!, kind: 'write', term: 1, holder: A, at: T0 + 1600, worker: 0, seq: 2 },
      { ns: NS[1]!, kind: 'write', term: 1, holder: B, at: T0 + 1610, worker: 1, seq: 2 },
    ];
    const events: Array<Record<string, unknown>> = [
      { t: T0 - 500, ev: 'start', slot: 0, incarnation: 1, candidateId: A },
      { t: T0 - 500, ev: 'start', slot: 1, incarnation: 1, candidateId: B },
      { t: T0 + 1, ev: 'elected', slot: 0, incarnation: 1, ns: NS[0], term: 1 },
      { t: T0 + 11, ev: 'elected', slot: 1, incarnation: 1, ns: NS[1], term: 1 },
    ];
    for (const [slot, ns, seq, at] of [[0, NS[0], 1, T0 + 90], [1, NS[1], 1, T0 + 100], [0, NS[0], 2, T0 + 1590], [1, NS[1], 2, T0 + 1600]] as const) {
      events.push({ t: at, ev: 'action-start', slot, incarnation: 1, ns, term: 1, seq, at, decidedAt: at });
      events.push({ t: at + 15, ev: 'action-commit', slot, incarnation: 1, ns, term: 1, seq });
    }
    const histories: Record<string, History[]> = {
      [NS[0]!]: [{ term: 1, leaderId: A, acquiredAt: T0, endedAt: null, endReason: null }],
      [NS[1]!]: [{ term: 1, leaderId: B, acquiredAt: T0 + 10, endedAt: null, endReason: null }],
    };
    return { rows, events, histories };
  }

  function runGroup(input: ReturnType<typeof group>, extra: Record<string, unknown> = { requireSecondTerm: false }) {
    return checkGroup({
      ledger: input.rows.map((r, i) => ({ id: i + 1, worker: null, seq: null, leaseUntil: null, ...r })),
      events: input.events,
      faults: [],
      namespaces: NS,
      leaseMs: LEASE,
      tickMaxMs: 733,
      slackMs: 0,
      clockToleranceMs: 5,
      runStart: T0 - 1000,
      stopAt: T0 + 4000,
      histories: input.histories,
      ...extra,
    }) as CheckResult & { stats: { staleWritesByNamespace: Record<string, number>; writes: number; grants: number } };
  }

  test('a clean run of two namespaces passes every check, (m) included, and counts zero stale writes per namespace', () => {
    const result = runGroup(group());
    expect(failed(result)).toEqual([]);
    expect(result.checks.map((c) => c.id)).toEqual(expect.arrayContaining(['a', 'b', 'h', 'l', 'm']));
    expect(result.stats).toMatchObject({ writes: 4, grants: 2, staleWritesByNamespace: { [NS[0]!]: 0, [NS[1]!]: 0 } });
  });

  test('(a) a stale write in one namespace fails the run, naming that namespace only', () => {
    const input = group();
    // A writes to chaos-1 under term 1 of chaos-1 — a term B holds there (A leads term 1 of chaos-0 only).
    input.rows.push({ ns: NS[1]!, kind: 'write', term: 1, holder: A, at: T0 + 1700, worker: 0, seq: 3 });
    const result = runGroup(input);
    expect(failed(result)).toEqual(['a']);
    const a = result.checks.find((c) => c.id === 'a')!;
    expect(a.violations).toHaveLength(1);
    expect(a.violations[0]).toMatch(/^chaos-1: ledger #9: worker 0 wrote seq 3 under term 1 while the leader row held term 1 \(holder b/);
    expect(result.stats.staleWritesByNamespace).toEqual({ [NS[0]!]: 0, [NS[1]!]: 1 });
  });

  test('(r) per namespace: a claim under a term another worker holds there fails, naming that namespace; no claim in any namespace has nothing to check', () => {
    const input = group();
    // A claims in chaos-1 under term 1 of chaos-1, which B holds; B's claim and completion there are clean.
    input.rows.push({ ns: NS[1]!, ...claim(1, B, T0 + 1000, 1, T0 + 1650) }, { ns: NS[1]!, ...job(1, B, T0 + 1000, 1, T0 + 1651) }, { ns: NS[1]!, ...finish(1, B, T0 + 1000, 1, T0 + 1652) });
    input.rows.push({ ns: NS[1]!, ...claim(1, A, T0 + 2000, 1, T0 + 2050) });
    const result = runGroup(input, { requireSecondTerm: false, scheduled: true });
    expect(failed(result)).toEqual(['r']);
    expect(result.checks.find((c) => c.id === 'r')!.violations).toEqual([expect.stringMatching(/^chaos-1: ledger #12: attempt 1 claimed for slot .* by a\S+ under term 1, which b\S+ holds$/)]);
    expect(failed(runGroup(group(), { requireSecondTerm: false, scheduled: true }))).toEqual(['r']);
  });

  test('(m) one term of a namespace held by two workers — by the ledger, their reports or the history — fails the run', () => {
    const granted = group();
    granted.rows.push({ ns: NS[0]!, kind: 'grant', term: 1, holder: B, at: T0 + 5, leaseUntil: T0 + 2005 });
    const byLedger = runGroup(granted);
    expect(failed(byLedger)).toContain('m');
    expect(byLedger.checks.find((c) => c.id === 'm')!.violations.join('\n')).toMatch(/chaos-0 term 1: ledger grant #9 names bbbbbbbb/);

    const reported = group();
    reported.events.push({ t: T0 + 20, ev: 'elected', slot: 1, incarnation: 1, ns: NS[0], term: 1 });
    const byReport = runGroup(reported);
    expect(failed(byReport)).toContain('m');
    expect(byReport.checks.find((c) => c.id === 'm')!.violations.join('\n')).toMatch(/chaos-0 term 1: worker 1\/1's 'elected' names bbbbbbbb/);

    const recorded = group();
    recorded.histories[NS[1]!]![0]!.leaderId = A;
    expect(failed(runGroup(recorded))).toEqual(expect.arrayContaining(['h', 'm']));
  });

  test('(m) a write to a namespace outside the group fails the run', () => {
    const input = group();
    input.rows.push({ ns: 'chaos-9', kind: 'write', term: 1, holder: A, at: T0 + 1700, worker: 0, seq: 3 });
    const result = runGroup(input);
    expect(failed(result)).toEqual(['m']);
    expect(result.checks.find((c) => c.id === 'm')!.violations[0]).toMatch(/write in namespace chaos-9, which is not one of the group's/);
  });

  test('(c), (f), (i) over all namespaces: a run with no second term anywhere, or without the guaranteed stalls, has nothing to check', () => {
    // One term per namespace: (c) judged nothing.
    const result = runGroup(group(), {});
    expect(failed(result)).toEqual(['c']);
    expect(result.checks.find((c) => c.id === 'c')!.violations).toEqual(['no namespace had an action of a term that a later term followed: nothing to check']);
    // A second term in one namespace after an action of its first: judged there, so the run passes.
    const second = group();
    second.rows.push(
      { ns: NS[0]!, kind: 'vacate', term: 1, holder: null, at: T0 + 3000 },
      { ns: NS[0]!, kind: 'grant', term: 2, holder: B, at: T0 + 3010, leaseUntil: T0 + 5010 },
    );
    second.events.push(
      { t: T0 + 2990, ev: 'demoted', slot: 0, incarnation: 1, ns: NS[0], term: 1, reason: 'handed-over' },
      { t: T0 + 3011, ev: 'elected', slot: 1, incarnation: 1, ns: NS[0], term: 2 },
    );
    second.histories[NS[0]!] = [
      { term: 1, leaderId: A, acquiredAt: T0, endedAt: T0 + 3000, endReason: 'handed-over' },
      { term: 2, leaderId: B, acquiredAt: T0 + 3010, endedAt: null, endReason: null },
    ];
    expect(failed(runGroup(second, { balance: true }))).toEqual([]);
    // The guaranteed stalls, missing in every namespace.
    const stalls = runGroup(second, { balance: true, expectStalls: ['in-fence', 'before-fence'] });
    expect(failed(stalls)).toEqual(['f', 'i']);
    expect(stalls.checks.find((c) => c.id === 'f')!.violations).toEqual([
      'no stall in-fence ended as expected (committed) in any namespace: nothing to check',
      'no stall before-fence ended as expected (fenced off) in any namespace: nothing to check',
    ]);
  });

  test('(e) over all namespaces: a run without any write proves nothing; one namespace without writes is no failure', () => {
    const idle = group();
    idle.rows = idle.rows.filter((r) => !(r.kind === 'write' && r.ns === NS[1]));
    idle.events = idle.events.filter((e) => !(String(e['ev']).startsWith('action') && e['ns'] === NS[1]));
    expect(failed(runGroup(idle))).toEqual([]);

    const none = group();
    none.rows = none.rows.filter((r) => r.kind !== 'write');
    none.events = none.events.filter((e) => !String(e['ev']).startsWith('action'));
    expect(failed(runGroup(none))).toEqual(['e']);
  });
});

describe('chaos checker (n), (o): the loops\' callbacks, events and leader work per leadership', () => {
  type Event = Record<string, unknown>;
  const W0 = { slot: 0, incarnation: 1 };
  const W1 = { slot: 1, incarnation: 1 };

  /**
   * The clean history as the workers record their loop: worker 0's leadership of term 1 (two
   * writes, its local deadline ends it), worker 1's of term 2 (a write and a job; the stop at the
   * end of the run ends it); both processes stop cleanly.
   */
  function loops(): { rows: Row[]; events: Event[] } {
    const { rows, events } = clean();
    const kept = events.filter((e) => e['ev'] !== 'elected' && e['ev'] !== 'demoted');
    const steps: Event[] = [
      { t: T0 + 1, ev: 'cb-started', ...W0, term: 1, lid: 1, aborted: false },
      { t: T0 + 1, ev: 'elected', ...W0, term: 1, lid: 1, aborted: false },
      { t: T0 + 90, ev: 'work', ...W0, term: 1, lid: 1, aborted: false, what: 'write', tickAt: T0 },
      { t: T0 + 690, ev: 'work', ...W0, term: 1, lid: 1, aborted: false, what: 'write', tickAt: T0 + 600 },
      { t: T0 + 2590, ev: 'cb-stopped', ...W0, term: 1, lid: 1, aborted: true },
      { t: T0 + 2590, ev: 'demoted', ...W0, term: 1, lid: 1, aborted: true, reason: 'lease-expired-locally' },
      { t: T0 + 3001, ev: 'cb-started', ...W1, term: 2, lid: 1, aborted: false },
      { t: T0 + 3001, ev: 'elected', ...W1, term: 2, lid: 1, aborted: false },
      { t: T0 + 3090, ev: 'work', ...W1, term: 2, lid: 1, aborted: false, what: 'write', tickAt: T0 + 3000 },
      { t: T0 + 3500, ev: 'work', ...W1, term: 2, lid: 1, aborted: false, what: 'job', tickAt: T0 + 3400 },
      { t: T0 + 3980, ev: 'cb-stopped', ...W1, term: 2, lid: 1, aborted: true },
      { t: T0 + 3980, ev: 'demoted', ...W1, term: 2, lid: 1, aborted: true, reason: 'stopped' },
      { t: T0 + 3990, ev: 'stopped', ...W0 },
      { t: T0 + 3990, ev: 'stopped', ...W1 },
    ];
    return { rows, events: sorted([...kept, ...steps]) };
  }
  const sorted = (events: Event[]) => [...events].sort((x, y) => Number(x['t']) - Number(y['t']));
  const checkLoops = (input: { rows: Row[]; events: Event[] }, extra: Record<string, unknown> = {}) => run(input.rows, sorted(input.events), [], { loopCallbacks: true, ...extra });
  const violationsOf = (result: CheckResult, id: string) => result.checks.find((c) => c.id === id)?.violations ?? [];
  /** Worker `w`'s records of leadership `lid`, for a test to rewrite. */
  const stepsOf = (input: { events: Event[] }, w: typeof W0, lid: number) => input.events.filter((e) => e['slot'] === w.slot && e['lid'] === lid);

  test('a clean record passes (n) and (o), and only with loopCallbacks are they checked', () => {
    const result = checkLoops(loops()) as CheckResult & { stats: Record<string, unknown> };
    expect(failed(result)).toEqual([]);
    expect(result.checks.map((c) => c.id)).toEqual(expect.arrayContaining(['n', 'o']));
    expect(result.stats).toMatchObject({ loopLeaderships: 2, loopLeadershipsComplete: 2, loopLeadershipsKilled: 0, workItems: 4 });
    expect(run(loops().rows, loops().events).checks.map((c) => c.id)).not.toContain('n');
  });

  test('(n) onStoppedLeading and \'demoted\' before onStartedLeading (the group\'s demotion of a leadership not yet started) fail', () => {
    const input = loops();
    for (const e of stepsOf(input, W1, 1)) if (e['ev'] === 'cb-stopped' || e['ev'] === 'demoted') e['t'] = T0 + 3000;
    const result = checkLoops(input);
    expect(failed(result)).toEqual(['n', 'o']);
    expect(violationsOf(result, 'n')).toEqual([
      'worker 1/1 term 2 (leadership 1): onStoppedLeading before onStartedLeading',
      "worker 1/1 term 2 (leadership 1): onStoppedLeading, 'demoted', onStartedLeading, 'elected' (its process stopped cleanly)",
    ]);
  });

  test('(n) a leadership demoted before it started (onStartedLeading with its signal aborted, no onStoppedLeading) fails', () => {
    const input = loops();
    input.events = input.events.filter((e) => !(e['slot'] === 1 && e['lid'] === 1 && ['elected', 'cb-stopped', 'work'].includes(String(e['ev']))));
    for (const e of stepsOf(input, W1, 1)) e['aborted'] = true;
    const result = checkLoops(input);
    expect(violationsOf(result, 'n')).toEqual([
      'worker 1/1 term 2 (leadership 1): signal aborted at onStartedLeading',
      "worker 1/1 term 2 (leadership 1): onStartedLeading, 'demoted' (its process stopped cleanly)",
    ]);
  });

  test('(n) a leadership ended twice, or never ended though its process stopped cleanly, fails; one cut short by a kill passes', () => {
    const twice = loops();
    const stopped = stepsOf(twice, W0, 1).find((e) => e['ev'] === 'cb-stopped')!;
    twice.events.push({ ...stopped, t: T0 + 2700 }, { ...stopped, ev: 'demoted', t: T0 + 2700, reason: 'lost' });
    expect(violationsOf(checkLoops(twice), 'n')).toEqual([
      "worker 0/1 term 1 (leadership 1): onStartedLeading, 'elected', onStoppedLeading, 'demoted', onStoppedLeading, 'demoted' (its process stopped cleanly)",
    ]);

    const open = loops();
    open.events = open.events.filter((e) => !(e['slot'] === 1 && ['cb-stopped', 'demoted'].includes(String(e['ev']))));
    expect(violationsOf(checkLoops(open), 'n')).toEqual(["worker 1/1 term 2 (leadership 1): onStartedLeading, 'elected' (its process stopped cleanly)"]);

    // Killed: no 'stopped' of its own. Its last leadership may end anywhere in its steps, never out of order.
    for (const keep of [1, 2, 3]) {
      const killed = loops();
      const steps = stepsOf(killed, W1, 1).filter((e) => e['ev'] !== 'work');
      const cut = new Set([...steps.slice(keep), killed.events.find((e) => e['slot'] === 1 && e['ev'] === 'stopped')]);
      killed.events = killed.events.filter((e) => !cut.has(e));
      const result = checkLoops(killed) as CheckResult & { stats: Record<string, unknown> };
      expect(violationsOf(result, 'n')).toEqual([]);
      expect(result.stats).toMatchObject({ loopLeadershipsKilled: 1 });
    }
    const skipped = loops();
    skipped.events = skipped.events.filter((e) => !(e['slot'] === 1 && ['elected', 'stopped'].includes(String(e['ev']))));
    expect(violationsOf(checkLoops(skipped), 'n')).toEqual(["worker 1/1 term 2 (leadership 1): onStartedLeading, onStoppedLeading, 'demoted'"]);
  });

  test('(n) a start after the demotion — of the same leadership, or of the next one before the previous was demoted (a term granted twice) — fails', () => {
    const again = loops();
    const started = stepsOf(again, W0, 1).find((e) => e['ev'] === 'cb-started')!;
    again.events.push({ ...started, t: T0 + 2600 });
    expect(violationsOf(checkLoops(again), 'n')).toEqual([
      "worker 0/1 term 1 (leadership 1): onStartedLeading, 'elected', onStoppedLeading, 'demoted', onStartedLeading (its process stopped cleanly)",
    ]);

    // Term 1 granted twice to worker 0: two leaderships under one number, the second started while the first ran on.
    const overlapping = loops();
    overlapping.events.push(
      { t: T0 + 2000, ev: 'cb-started', ...W0, term: 1, lid: 2, aborted: false },
      { t: T0 + 2000, ev: 'elected', ...W0, term: 1, lid: 2, aborted: false },
      { t: T0 + 2650, ev: 'cb-stopped', ...W0, term: 1, lid: 2, aborted: true },
      { t: T0 + 2650, ev: 'demoted', ...W0, term: 1, lid: 2, aborted: true, reason: 'lease-expired-locally' },
    );
    expect(violationsOf(checkLoops(overlapping), 'n')).toEqual(['worker 0/1 term 1 (leadership 2): onStartedLeading before leadership 1 of its namespace was demoted']);
    // The same two leaderships one after the other pass.
    const sequential = loops();
    sequential.events.push(
      { t: T0 + 2595, ev: 'cb-started', ...W0, term: 1, lid: 2, aborted: false },
      { t: T0 + 2595, ev: 'elected', ...W0, term: 1, lid: 2, aborted: false },
      { t: T0 + 2650, ev: 'cb-stopped', ...W0, term: 1, lid: 2, aborted: true },
      { t: T0 + 2650, ev: 'demoted', ...W0, term: 1, lid: 2, aborted: true, reason: 'lease-expired-locally' },
    );
    expect(violationsOf(checkLoops(sequential), 'n')).toEqual([]);
  });

  test('(n) a signal aborted while the leadership runs, or not aborted once it ended, fails', () => {
    const input = loops();
    stepsOf(input, W0, 1).find((e) => e['ev'] === 'elected')!['aborted'] = true;
    stepsOf(input, W1, 1).find((e) => e['ev'] === 'cb-stopped')!['aborted'] = false;
    stepsOf(input, W1, 1).find((e) => e['ev'] === 'demoted')!['aborted'] = false;
    expect(violationsOf(checkLoops(input), 'n')).toEqual([
      "worker 0/1 term 1 (leadership 1): signal aborted at 'elected'",
      'worker 1/1 term 2 (leadership 1): signal not aborted at onStoppedLeading',
      "worker 1/1 term 2 (leadership 1): signal not aborted at 'demoted'",
    ]);
  });

  test('(o) leader work started with its signal aborted, after its onStoppedLeading, past its local deadline, or with a lease never started fails', () => {
    const input = loops();
    input.events.push(
      // Its signal aborted, before anything else said the leadership ended.
      { t: T0 + 800, ev: 'work', ...W0, term: 1, lid: 1, aborted: true, what: 'write', tickAt: T0 + 600 },
      // After onStoppedLeading (its signal recorded not aborted: the check does not rely on it).
      { t: T0 + 2595, ev: 'work', ...W0, term: 1, lid: 1, aborted: false, what: 'job', tickAt: T0 + 1200 },
      // Past the latest end of the deadline of its last successful tick: T0 + 1900 + lease.
      { t: T0 + 3950, ev: 'work', ...W1, term: 2, lid: 1, aborted: false, what: 'write', tickAt: T0 + 1900 },
      // A lease no onStartedLeading was given.
      { t: T0 + 3600, ev: 'work', ...W1, term: 2, lid: 7, aborted: false, what: 'write', tickAt: T0 + 3400 },
    );
    const result = checkLoops(input);
    expect(failed(result)).toEqual(['o']);
    expect(violationsOf(result, 'o')).toEqual([
      `worker 0/1 write term 1 (leadership 1) at ${T0 + 800}: started with its lease's signal aborted`,
      `worker 0/1 job term 1 (leadership 1) at ${T0 + 2595}: started 5 ms after its onStoppedLeading`,
      `worker 1/1 write term 2 (leadership 7) at ${T0 + 3600}: its lease was never started (no onStartedLeading before it)`,
      `worker 1/1 write term 2 (leadership 1) at ${T0 + 3950}: started 50 ms after its local deadline could last (last successful tick at ${T0 + 1900} + lease ${LEASE} ms)`,
    ]);
    // Up to the bound (and the 2 ms the instants are read to) passes.
    const atBound = loops();
    atBound.events.push({ t: T0 + 3902, ev: 'work', ...W1, term: 2, lid: 1, aborted: false, what: 'write', tickAt: T0 + 1900 });
    expect(failed(checkLoops(atBound))).toEqual([]);
  });

  test('group mode: (n) and (o) per namespace, each violation naming it; no leadership in any namespace has nothing to check', () => {
    const NS = ['chaos-0', 'chaos-1'];
    const { rows, events } = loops();
    const input = {
      ledger: ledger(rows).map((r) => ({ ...r, ns: NS[0] })),
      events: events.map((e) => (e['lid'] === undefined && e['ev'] !== 'action-start' && e['ev'] !== 'action-commit' ? e : { ...e, ns: NS[0] })),
      faults: [],
      namespaces: NS,
      leaseMs: LEASE,
      tickMaxMs: 733,
      slackMs: 0,
      clockToleranceMs: 5,
      runStart: T0 - 1000,
      stopAt: T0 + 4000,
      requireSecondTerm: false,
      loopCallbacks: true,
    };
    // (chaos-1 has no leader at all: (d) fails there; these records are of chaos-0.)
    expect(failed(checkGroup(input))).toEqual(['d']);
    // Worker 1 starts a leadership of chaos-1 and never ends it, though its process stopped cleanly.
    const bad = { ...input, events: sorted([...input.events, { t: T0 + 3100, ev: 'cb-started', ...W1, ns: NS[1], term: 1, lid: 2, aborted: false }]) };
    expect(violationsOf(checkGroup(bad), 'n')).toEqual(['chaos-1: worker 1/1 chaos-1 term 1 (leadership 2): onStartedLeading (its process stopped cleanly)']);
    const none = { ...input, events: input.events.filter((e) => e['lid'] === undefined) };
    expect(violationsOf(checkGroup(none), 'n')).toEqual(['no leadership was recorded in any namespace: nothing to check']);
    expect(violationsOf(checkGroup(none), 'o')).toEqual(['no leader work item was recorded in any namespace: nothing to check']);
  });

  test('(n), (o): a run that recorded no leadership or no leader work has nothing to check, and fails', () => {
    const none = loops();
    none.events = none.events.filter((e) => e['lid'] === undefined);
    const result = checkLoops(none);
    expect(violationsOf(result, 'n')).toEqual(['no leadership was recorded: nothing to check']);
    expect(violationsOf(result, 'o')).toEqual(['no leader work item was recorded: nothing to check']);
  });
});

describe('chaos checker (u): the guarded ledger', () => {
  const { checkGuarded } = require('../../tools/chaos/guarded-check') as {
    checkGuarded: (input: unknown) => { check: { ok: boolean; violations: string[] }; stats: Record<string, number> };
  };
  const ns = 'chaos';
  const write = (holder: string, seq: number, term = 1) => ({ id: seq, kind: 'write', ns, term, holder, worker: 0, seq, leaseUntil: null, at: 0 });
  const row = (holder: string, seq: number, term = 1, worker = 0) => ({ ns, term, holder, worker, seq });
  const rogue = ['no fence', 'ignored NotLeaderError', "the leader's identity"].map((way) => ({ ev: 'rogue-refused', way }));
  const skippedAndRefused = [
    { t: 1, ev: 'fence-skipped', slot: 0, incarnation: 1, seq: 2, term: 1 },
    { t: 2, ev: 'action-guard-refused', slot: 0, incarnation: 1, seq: 2, term: 1 },
  ];
  const clean = () => ({ ns, guardedRows: [row('a', 1)], ledger: [write('a', 1)], events: [...skippedAndRefused], rogueEvents: [...rogue] });

  test('a clean run passes and counts what it checked', () => {
    const result = checkGuarded(clean());
    expect(result.check.violations).toEqual([]);
    expect(result.stats).toEqual({ guardedRows: 1, fenceSkipped: 1, skippedRefused: 1, skippedUnfinished: 0, rogueAttempts: 3, rogueRefused: 3, rogueErrors: 0 });
  });

  test('a skipped fence that ended without the table\'s answer (its process killed, or a connection error) passes without a row in the table, and fails with one', () => {
    const killed = clean();
    killed.events = [{ t: 0, ev: 'start', slot: 0, incarnation: 1, candidateId: 'a' } as never, skippedAndRefused[0]!];
    expect(checkGuarded(killed).check.violations).toEqual([]);
    expect(checkGuarded(killed).stats).toMatchObject({ skippedRefused: 0, skippedUnfinished: 1 });
    const errored = clean();
    errored.events = [skippedAndRefused[0]!, { ...skippedAndRefused[1]!, ev: 'action-error', message: 'Connection terminated' } as never];
    expect(checkGuarded(errored).check.violations).toEqual([]);
    killed.guardedRows.push(row('a', 2));
    killed.ledger.push(write('a', 2));
    expect(checkGuarded(killed).check.violations).toEqual([expect.stringMatching(/skipped assertLeader \(seq 2, term 1\): its row is in the table/)]);
  });

  test('a skipped fence that committed, a rogue row, rows without their twin, a rogue that did not try every way: each a violation', () => {
    const committedSkip = clean();
    committedSkip.events = [skippedAndRefused[0]!, { ...skippedAndRefused[1]!, ev: 'action-commit' }];
    expect(checkGuarded(committedSkip).check.violations).toEqual([expect.stringMatching(/skipped assertLeader .* and committed/)]);

    const rogueRow = clean();
    rogueRow.guardedRows.push(row('a', 0, 1, -1));
    rogueRow.rogueEvents.push({ ev: 'rogue-committed', way: 'no fence' });
    expect(checkGuarded(rogueRow).check.violations).toEqual([expect.stringMatching(/rogue committed a row/), expect.stringMatching(/the rogue: rogue-committed/)]);

    const unpaired = clean();
    unpaired.guardedRows.push(row('b', 7));
    unpaired.ledger.push(write('c', 8));
    expect(checkGuarded(unpaired).check.violations).toEqual([expect.stringMatching(/b seq 7 .* has no ledger write/), expect.stringMatching(/c seq 8 .* has no guarded row/)]);

    const vacuous = clean();
    vacuous.events = [];
    vacuous.rogueEvents = rogue.slice(0, 1);
    expect(checkGuarded(vacuous).check.violations).toEqual(['no action skipped assertLeader: nothing to check', 'the rogue tried 1 of its 3 ways: nothing to check']);
  });
});
