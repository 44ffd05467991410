/**
 * The linearizability checker of the chaos runs (tools/chaos/linearizability.js) on hand-built
 * histories: each kind of violation is rejected, legitimate concurrency is accepted; then on
 * random histories generated from the lease register itself, jittered into overlapping calls
 * (accepted), each with one violation planted (rejected).
 */
export {}; // a module: its names stay out of the other test scripts' scope

// eslint-disable-next-line @typescript-eslint/no-require-imports
const { checkHistory, formatResult } = require('../../tools/chaos/linearizability') as {
  checkHistory: (entries: Entry[], options: Record<string, unknown>) => Result;
  formatResult: (result: Result) => string;
};
// eslint-disable-next-line @typescript-eslint/no-require-imports
const { historyOfRun } = require('../../tools/chaos/run-history') as {
  historyOfRun: (run: { records: Array<Array<Record<string, unknown>>>; ledger: Array<Record<string, unknown>>; watches: unknown[]; watchedNs: string }) => {
    entries: Entry[];
    problems: string[];
  };
};

interface Entry {
  process: string;
  caller?: string;
  ns?: string;
  op: 'elect' | 'write' | 'claim' | 'watch' | 'vacate';
  invokeAt?: number | null;
  returnAt?: number | null;
  args?: { term: number; slot?: string; attempt?: number };
  result?: unknown;
}
interface Result {
  verdict: 'ok' | 'violation' | 'unknown';
  partitions: Array<{ ns: string; verdict: string; ops: number; nodes: number; report?: string }>;
  problems: string[];
  ops: number;
  summary: string;
}
interface Change {
  ns: string;
  kind: 'grant' | 'renew' | 'vacate';
  term: number;
  holder: string | null;
  at: number;
  leaseUntil: number | null;
}

const LEASE = 2000;
const T0 = 1_000_000;

// Builders: `at` is the database's decision (elects) or the write's insert; [from, to] the call.
const acquire = (p: string, term: number, at: number, from = at - 10, to = at + 10): Entry => ({
  process: p,
  op: 'elect',
  invokeAt: T0 + from,
  returnAt: T0 + to,
  result: { isLeader: true, leaderId: p, term, acquired: true, databaseNow: T0 + at },
});
const renew = (p: string, term: number, at: number, from = at - 10, to = at + 10): Entry => ({
  process: p,
  op: 'elect',
  invokeAt: T0 + from,
  returnAt: T0 + to,
  result: { isLeader: true, leaderId: p, term, acquired: false, databaseNow: T0 + at },
});
const follow = (p: string, leaderId: string | null, term: number, at: number, from = at - 10, to = at + 10): Entry => ({
  process: p,
  op: 'elect',
  invokeAt: T0 + from,
  returnAt: T0 + to,
  result: { isLeader: false, leaderId, term, databaseNow: T0 + at },
});
const write = (p: string, term: number, from: number, to: number | null, insertAt?: number): Entry => ({
  process: p,
  op: 'write',
  args: { term },
  invokeAt: T0 + from,
  returnAt: to === null ? null : T0 + to,
  result: { status: 'committed', ...(insertAt === undefined ? {} : { at: T0 + insertAt }) },
});
/** A schedule's slot claimed under `term`, its run row written at `insertAt`; `to` null: its job never started. */
const claim = (p: string, term: number, from: number, to: number | null, insertAt: number, attempt = 1): Entry => ({
  process: p,
  op: 'claim',
  args: { term, slot: 'S', attempt },
  invokeAt: T0 + from,
  returnAt: to === null ? null : T0 + to,
  result: { status: 'committed', at: T0 + insertAt },
});
const refused = (p: string, term: number, from: number, to: number, current: number, leaderId: string | null): Entry => ({
  process: p,
  op: 'write',
  args: { term },
  invokeAt: T0 + from,
  returnAt: T0 + to,
  result: { status: 'refused', term: current, leaderId },
});
const watch = (w: string, leaderId: string | null, term: number | null, by: number): Entry => ({ process: w, op: 'watch', invokeAt: null, returnAt: T0 + by, result: { leaderId, term } });
const vacate = (p: string, from: number, to: number | null, known = true): Entry => ({
  process: p,
  op: 'vacate',
  invokeAt: T0 + from,
  returnAt: to === null ? null : T0 + to,
  result: known ? {} : null,
});
const unknownElect = (p: string, from: number, to: number | null = null): Entry => ({ process: p, op: 'elect', invokeAt: T0 + from, returnAt: to === null ? null : T0 + to, result: null });

const check = (entries: Entry[], options: Record<string, unknown> = {}) => checkHistory(entries, { leaseMs: LEASE, t0: T0, ...options });

function expectAccepted(entries: Entry[], options: Record<string, unknown> = {}) {
  const result = check(entries, options);
  if (result.verdict !== 'ok') throw new Error(`expected a linearizable history:\n${formatResult(result)}`);
  return result;
}

function expectRejected(entries: Entry[], reason: RegExp, options: Record<string, unknown> = {}) {
  const result = check(entries, options);
  if (result.verdict !== 'violation') throw new Error(`expected a violation, got ${result.verdict}:\n${formatResult(result)}`);
  expect(formatResult(result)).toMatch(reason);
  return result;
}

/** A leads term 1 from +0.1 s, renews at +0.7 s (lease to +2.7 s); B follows. */
const aLeads = (): Entry[] => [
  follow('B', null, 0, 50),
  acquire('A', 1, 100),
  write('A', 1, 150, 170, 160),
  renew('A', 1, 700),
  follow('B', 'A', 1, 800),
  write('A', 1, 900, 920, 910),
];

describe('linearizability checker: legitimate histories are accepted', () => {
  test('a lease that runs out, then a takeover; the old leader is fenced off', () => {
    const result = expectAccepted([
      ...aLeads(),
      follow('B', null, 1, 2750), // A's lease ended at +2.7 s: nobody leads, still term 1
      acquire('B', 2, 2800),
      refused('A', 1, 2900, 2920, 2, 'B'),
      write('B', 2, 3000, 3020, 3010),
      watch('W', null, null, 40),
      watch('W', 'A', 1, 1000),
      watch('W', null, 1, 2790),
      watch('W', 'B', 2, 3100),
    ]);
    expect(result.ops).toBe(14);
  });

  test('overlapping calls that admit an order (a follower read inside an acquisition, a write across a renewal)', () => {
    expectAccepted([
      // B's read decided at +0.18 s, before A's acquisition was decided at +0.2 s, though B's call ended later.
      follow('B', null, 0, 180, 150, 400),
      acquire('A', 1, 200, 100, 300),
      // C's read decided after: it sees A.
      follow('C', 'A', 1, 250, 150, 260),
      // A's write was in flight across its own renewal.
      write('A', 1, 600, 900, 650),
      renew('A', 1, 700, 690, 950),
    ]);
  });

  test('vacate then takeover before the lease ran out; also when the vacate\'s answer was lost', () => {
    const takeover = [acquire('B', 2, 1200), write('B', 2, 1300, 1320, 1310)];
    expectAccepted([...aLeads(), vacate('A', 1000, 1100), ...takeover]);
    expectAccepted([...aLeads(), vacate('A', 1000, null, false), ...takeover]);
  });

  test('renewals keep a lease going long past its first end', () => {
    const entries: Entry[] = [acquire('A', 1, 100)];
    for (let t = 700; t < 10_000; t += 650) entries.push(renew('A', 1, t), write('A', 1, t + 50, t + 70, t + 60), follow('B', 'A', 1, t + 100));
    expectAccepted(entries);
  });

  test('a lease that lapsed while its holder\'s renewal waited with the row locked reads as vacant, then renewed under the same term', () => {
    expectAccepted([
      acquire('A', 1, 100),
      // Decided at +2.09 s (lease live until +2.1 s), committed only by +2.6 s.
      renew('A', 1, 2090, 2080, 2600),
      follow('B', null, 1, 2200),
      watch('W', 'A', 1, 500),
      watch('W', null, 1, 2300),
      write('A', 1, 2700, 2720, 2710),
    ]);
  });

  test('an acquisition whose caller died before the answer explains the next term', () => {
    expectAccepted([unknownElect('A', 100), follow('C', 'A', 1, 900), acquire('B', 2, 3000)]);
    // The same settled by the database's log of lease changes.
    const changes: Change[] = [{ ns: 'default', kind: 'grant', term: 1, holder: 'A', at: T0 + 150, leaseUntil: T0 + 2150 }];
    expectAccepted([unknownElect('A', 100), follow('C', 'A', 1, 900), acquire('B', 2, 3000)], { changes });
  });

  test('a group tick that reports a lease taken somewhere inside it', () => {
    expectAccepted([
      { process: 'A', op: 'elect', invokeAt: T0 + 100, returnAt: T0 + 400, result: { isLeader: true, leaderId: 'A', term: 1, databaseNow: T0 + 120, decidedWithin: [T0 + 100, T0 + 400] } },
      follow('B', 'A', 1, 350),
      write('A', 1, 450, 470, 460),
    ]);
  });

  test('claims of a slot under the live term: before a takeover (its job never started), and again under the next term', () => {
    expectAccepted([...aLeads(), claim('A', 1, 1000, null, 1010), follow('B', null, 1, 2750), acquire('B', 2, 2800), claim('B', 2, 2810, 2850, 2830, 2)]);
  });

  test('a fenced write and a claim of one frozen process share the fence, both committing after the lease\'s time ran out; the grant waits for both', () => {
    // Both asserted while A's lease (to +2.7 s) was live; the process froze; both inserted at
    // +3.0 s. Fences share the row's lock: nobody took over meanwhile, and A's next term came after.
    expectAccepted([...aLeads(), write('A', 1, 1000, 3050, 3000), claim('A', 1, 1000, 3060, 3010), acquire('A', 2, 3100)]);
    expectRejected([...aLeads(), write('A', 1, 1000, 3050, 3000), claim('A', 1, 1000, 3060, 3010), acquire('B', 2, 2800, 2790, 2810)], /no linearization/);
  });

  test('namespaces are independent registers', () => {
    const result = expectAccepted([
      { ...acquire('A', 1, 100), ns: 'x' },
      { ...acquire('B', 1, 100), ns: 'y' },
      { ...write('A', 1, 200, 220, 210), ns: 'x' },
      { ...write('B', 1, 200, 220, 210), ns: 'y' },
    ]);
    expect(result.partitions.map((p) => p.ns)).toEqual(['x', 'y']);
  });
});

describe('linearizability checker: violations are rejected', () => {
  test('a stale write: term 1 committed after term 2 was granted', () => {
    expectRejected([...aLeads(), acquire('B', 2, 2800), write('A', 1, 2900, 2950, 2910)], /stale write: committed under term 1, but the register is at term 2/);
  });

  test('a stale write whose call overlaps the newer grant, inserted after it by the database clock', () => {
    // Fencing would have made the grant wait for the write's commit: an insert at +2.85 s cannot
    // precede a grant decided at +2.8 s.
    expectRejected([...aLeads(), acquire('B', 2, 2800, 2790, 2810), write('A', 1, 2600, 2950, 2850)], /A write \(term 1\)/);
  });

  test('a slot claimed under term 1 after term 2 was granted', () => {
    expectRejected([...aLeads(), acquire('B', 2, 2800), claim('A', 1, 2600, 2950, 2900)], /stale claim: committed under term 1, but the register is at term 2/);
  });

  test('a slot claimed under term 1 after term 2 was granted, though its job never started (no return)', () => {
    // The run row's write at +2.9 s, after the grant decided at +2.8 s: fencing forbids that order.
    expectRejected([...aLeads(), acquire('B', 2, 2800, 2790, 2810), claim('A', 1, 2000, null, 2900)], /A claim of slot S, attempt 1 \(term 1\)/);
  });

  test('a slot claimed by a worker that never held the term', () => {
    expectRejected([...aLeads(), claim('B', 1, 1000, 1050, 1020)], /stale claim: committed under term 1, but the register is at term 1 held by A/);
  });

  test('two holders at once: term 2 granted while term 1\'s renewed lease was live', () => {
    expectRejected([...aLeads(), acquire('B', 2, 1500)], /acquired term 2 by \+1\.505s, while term 1 of A was live until \+2\.69/);
  });

  test('two holders at once: both write under their terms while the older lease was live', () => {
    // B's acquisition was never answered (its process died); its writes show it led anyway.
    expectRejected([...aLeads(), unknownElect('B', 1000), write('B', 2, 1600, 1610, 1605), write('A', 1, 1700, 1710, 1705)], /B write \(term 2\)|A write \(term 1\)/);
  });

  test('the same term, two holders', () => {
    expectRejected([acquire('A', 1, 100), renew('B', 1, 500)], /was given term 1, but the register is at term 1 held by A/);
  });

  test('a term granted twice', () => {
    expectRejected([acquire('A', 1, 100), follow('C', null, 1, 2500), acquire('B', 1, 3000)], /B elect .* leads term 1 \(acquired\)/);
  });

  test('a watch that yields terms out of order', () => {
    expectRejected(
      [...aLeads(), acquire('B', 2, 2800), watch('W', 'B', 2, 3000), watch('W', 'A', 1, 3100)],
      /W watch .*→ A, term 1: saw term 1 held by A, but the register is at term 2/,
    );
  });

  test('a follower told of a leader whose lease had ended', () => {
    expectRejected([acquire('A', 1, 100), follow('B', 'A', 1, 2500)], /saw A leading at \+2\.495s or later, but its lease ended at \+2\.1/);
  });

  test('a write refused although its writer held the live lease', () => {
    expectRejected([...aLeads(), refused('A', 1, 1000, 1020, 1, null)], /refused: term 1, leader nobody: saw no leader by/);
  });

  test('a renewal after the lease ended (a lapsed lease must be taken over under a new term)', () => {
    expectRejected([acquire('A', 1, 100), renew('A', 1, 2500)], /renewed term 1 at \+2\.495s, after its lease ended at \+2\.1/);
  });

  test('a database clock outside its own call (the clock assumption broken) is reported', () => {
    expectRejected([{ ...acquire('A', 1, 100), invokeAt: T0 + 500, returnAt: T0 + 600 }], /the clocks disagree/);
  });

  test('a lease change in the database that no call could have made', () => {
    const changes: Change[] = [{ ns: 'default', kind: 'grant', term: 1, holder: 'A', at: T0 + 5000, leaseUntil: T0 + 7000 }];
    expectRejected([unknownElect('A', 100, 300)], /no call of A that could have made it was in flight/, { changes });
  });

  test('a search that runs out of budget says so: unknown, never linearizable', () => {
    const entries: Entry[] = [acquire('A', 1, 100)];
    for (let t = 700; t < 10_000; t += 650) entries.push(renew('A', 1, t), write('A', 1, t + 50, t + 70, t + 60));
    const result = check(entries, { maxNodes: 5 });
    expect(result.verdict).toBe('unknown');
    expect(formatResult(result)).toMatch(/UNDECIDED/);
  });
});

// ---- random histories from the model ----------------------------------------------------------

/** Mulberry32: a small seeded generator, so a failing seed can be replayed. */
function rng(seed: number) {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

interface Simulated {
  entries: Entry[];
  changes: Change[];
  /** Per entry: the point the simulation executed it at. */
  points: number[];
  /** The register at the end. */
  end: { term: number; holder: string | null; leaseEnd: number; now: number };
  acquisitions: number[];
}

/**
 * Runs the lease register sequentially — each call at one instant — with processes electing,
 * writing under the term they last led, vacating, and a watcher reading; then widens every call
 * around its instant by up to `jitterMs` each way. A correct register's history, so it must be
 * linearizable.
 */
function simulate(seed: number, steps: number, jitterMs: number): Simulated {
  const random = rng(seed);
  const processes = ['P0', 'P1', 'P2', 'P3'];
  const believed = new Map<string, number>();
  let term = 0;
  let holder: string | null = null;
  let leaseEnd = -Infinity;
  let now = T0;
  const entries: Entry[] = [];
  const points: number[] = [];
  const changes: Change[] = [];
  const acquisitions: number[] = [];
  const around = (at: number) => ({ invokeAt: at - random() * jitterMs, returnAt: at + random() * jitterMs });
  const push = (entry: Entry, at: number) => {
    entries.push(entry);
    points.push(at);
  };
  let lastWatch = T0 - 1;
  for (let n = 0; n < steps; n++) {
    now += 10 + Math.floor(random() * 400);
    const p = processes[Math.floor(random() * processes.length)];
    const live = holder !== null && leaseEnd > now;
    const roll = random();
    if (roll < 0.4) {
      if (live && holder === p) {
        leaseEnd = now + LEASE;
        changes.push({ ns: 'default', kind: 'renew', term, holder: p, at: now, leaseUntil: leaseEnd });
        believed.set(p, term);
        push({ process: p, op: 'elect', ...around(now), result: { isLeader: true, leaderId: p, term, acquired: false, databaseNow: now } }, now);
      } else if (!live && random() < 0.8) {
        term++;
        holder = p;
        leaseEnd = now + LEASE;
        changes.push({ ns: 'default', kind: 'grant', term, holder: p, at: now, leaseUntil: leaseEnd });
        believed.set(p, term);
        acquisitions.push(entries.length);
        push({ process: p, op: 'elect', ...around(now), result: { isLeader: true, leaderId: p, term, acquired: true, databaseNow: now } }, now);
      } else {
        push({ process: p, op: 'elect', ...around(now), result: { isLeader: false, leaderId: live ? holder : null, term, databaseNow: now } }, now);
      }
    } else if (roll < 0.75) {
      const mine = believed.get(p);
      if (mine === undefined) continue;
      if (live && holder === p && term === mine) {
        push({ process: p, op: 'write', args: { term: mine }, ...around(now), result: { status: 'committed', at: now } }, now);
      } else {
        push({ process: p, op: 'write', args: { term: mine }, ...around(now), result: { status: 'refused', term, leaderId: live ? holder : null } }, now);
      }
    } else if (roll < 0.8) {
      if (holder !== p) continue;
      holder = null;
      changes.push({ ns: 'default', kind: 'vacate', term, holder: null, at: now, leaseUntil: null });
      push({ process: p, op: 'vacate', ...around(now), result: { term } }, now);
    } else {
      // The watcher reports a state it read at `now`, within `jitterMs` after; its reports keep their order.
      const by = Math.max(lastWatch + 1, now + random() * jitterMs);
      lastWatch = by;
      push({ process: 'W', op: 'watch', invokeAt: null, returnAt: by, result: { leaderId: live ? holder : null, term: term === 0 ? null : term } }, now);
    }
  }
  return { entries, changes, points, end: { term, holder, leaseEnd, now }, acquisitions };
}

const SEEDS = Array.from({ length: 24 }, (_, i) => 1000 + i);
const JITTER_MS = 250;
const STEPS = 400;

/** A copy of `entry` as one call strictly after `t` (so it must be linearized after whatever returned by `t`). */
const after = (t: number) => ({ invokeAt: t + 20, returnAt: t + 60 });

describe('a chaos run as a history: the schedule\'s claims and run.transactions', () => {
  const A = 'aaaaaaaa-0000-4000-8000-000000000000';
  const S1 = T0 + 1000;
  const S2 = T0 + 2000;
  const S3 = T0 + 3000;
  const p = 'w0-1';
  const jobRecord = (type: string, slot: number, at: number) => ({ p, f: 'job', type, ns: 'chaos', name: 'n', slot, attempt: 1, term: 1, at: T0 + at });
  const row = (id: number, kind: string, slot: number, at: number, holder = A) => ({ id, kind, ns: 'chaos', term: 1, holder, worker: 0, seq: null, leaseUntil: null, name: 'n', slot, attempt: 1, at: T0 + at });
  const S4 = T0 + 4000;
  /**
   * Elected for term 1 at +0.1 s; S1's job ran and committed; S2's started and never returned
   * (its process's answer lost); S3 claimed at +2.6 s, its job never started: the leadership ended
   * locally and came back under the same term at +2.7 s, whose run ran S4's job.
   */
  const records = () => [
    [
      { p, f: 'start', at: T0, candidateId: A, slot: 0, namespaces: ['chaos'] },
      { p, f: 'elected', at: T0 + 100, ns: 'chaos', term: 1 },
      jobRecord('start', S1, 1010),
      jobRecord('committed', S1, 1030),
      jobRecord('start', S2, 2010),
      { p, f: 'elected', at: T0 + 2700, ns: 'chaos', term: 1 },
      jobRecord('start', S4, 4010),
    ],
  ];
  const ledger = () => [row(1, 'claim', S1, 1005), row(2, 'job', S1, 1020), row(3, 'claim', S2, 2005), row(4, 'claim', S3, 2600), row(5, 'claim', S4, 4005)];

  test('each claim is a call from its leadership\'s start or previous job\'s return to its own job\'s start; each committed job row a fenced write', () => {
    const { entries, problems } = historyOfRun({ records: records(), ledger: ledger(), watches: [], watchedNs: 'chaos' });
    expect(problems).toEqual([]);
    const claims = entries.filter((e) => e.op === 'claim').map((e) => [e.args?.slot, e.invokeAt! - T0, e.returnAt === null ? null : e.returnAt! - T0]);
    expect(claims).toEqual([
      [new Date(S1).toISOString(), 100, 1010],
      [new Date(S2).toISOString(), 1030, 2010],
      // No job: of either leadership of term 1, so from the first one on.
      [new Date(S3).toISOString(), 100, null],
      [new Date(S4).toISOString(), 2700, 4010],
    ]);
    expect(checkHistory(entries.filter((e) => e.op === 'claim' || e.op === 'write').concat([{ ...acquire(p, 1, 50), caller: A, ns: 'chaos' }]), { leaseMs: 10_000, t0: T0 }).verdict).toBe('ok');
    // S1's run.transaction committed its row; S2's, never answered and without a row, had no effect the checker knows of.
    const jobs = entries.filter((e) => e.op === 'write');
    expect(jobs).toEqual([expect.objectContaining({ args: { term: 1 }, invokeAt: T0 + 1010, returnAt: T0 + 1030, result: { status: 'committed', at: T0 + 1020 } })]);
  });

  test('a claim or job row no worker\'s log explains, or a committed job without its row, is a problem', () => {
    const B = 'bbbbbbbb-0000-4000-8000-000000000000';
    const unexplained = historyOfRun({ records: records(), ledger: [...ledger(), row(6, 'claim', T0 + 5000, 5005, B)], watches: [], watchedNs: 'chaos' });
    expect(unexplained.problems).toEqual([expect.stringMatching(/^ledger #6: a claim of slot .* by bbbbbbbb\S+ that no worker's log explains$/)]);
    const lost = historyOfRun({ records: records(), ledger: ledger().filter((r) => r.kind !== 'job'), watches: [], watchedNs: 'chaos' });
    expect(lost.problems).toEqual([expect.stringMatching(/^w0-1: the job of slot .* \(attempt 1\) committed, but the ledger lacks its row$/)]);
  });
});

describe('linearizability checker: random histories of the lease register', () => {
  test.each(SEEDS)('seed %i: a jittered history of the register is accepted', (seed) => {
    const { entries } = simulate(seed, STEPS, JITTER_MS);
    const result = expectAccepted(entries, { t0: T0 });
    expect(result.ops).toBeGreaterThan(STEPS / 2);
  });

  test.each(SEEDS.slice(0, 8))('seed %i: with some answers lost (unknown outcomes) it is still accepted, with and without the database\'s log', (seed) => {
    const { entries, changes } = simulate(seed, STEPS, JITTER_MS);
    const random = rng(seed * 7);
    const lossy = entries.map((e) => (e.op === 'elect' && random() < 0.04 ? { ...e, returnAt: null, result: null } : e));
    expectAccepted(lossy);
    expectAccepted(lossy, { changes });
  });

  test.each(SEEDS.slice(0, 12))('seed %i: each planted violation is rejected', (seed) => {
    const sim = simulate(seed, STEPS, JITTER_MS);
    const { entries, end } = sim;
    const random = rng(seed * 13);
    const pick = <T>(xs: T[]) => xs[Math.floor(random() * xs.length)];
    const acquisitions = sim.acquisitions.filter((i) => (entries[i].result as { term: number }).term >= 2);
    expect(acquisitions.length).toBeGreaterThan(0);

    // A stale write: the previous term's holder writes under it, strictly after a newer grant returned.
    const grant = entries[pick(acquisitions)];
    const newer = (grant.result as { term: number }).term;
    const oldHolder = entries.find((e) => e.op === 'elect' && (e.result as { isLeader?: boolean; term?: number } | null)?.isLeader && (e.result as { term: number }).term === newer - 1)!.process;
    const t = grant.returnAt!;
    expectRejected([...entries, { process: oldHolder, op: 'write', args: { term: newer - 1 }, ...after(t), result: { status: 'committed', at: t + 40 } }], /stale write|term/);

    // A term granted twice: another process acquires the same term after it was granted.
    const other = ['P0', 'P1', 'P2', 'P3'].find((p) => p !== grant.process)!;
    expectRejected([...entries, { process: other, op: 'elect', ...after(t), result: { isLeader: true, leaderId: other, term: newer, acquired: true, databaseNow: t + 40 } }], /\(acquired\)/);

    // Two holders: after the run, P0 takes the next term, and P1 takes the one after while P0's lease is live.
    const last = Math.max(end.now + 1000, end.leaseEnd + 100);
    const lead: Entry = { process: 'P0', op: 'elect', invokeAt: last - 10, returnAt: last + 10, result: { isLeader: true, leaderId: 'P0', term: end.term + 1, acquired: true, databaseNow: last } };
    const rival = (at: number): Entry => ({ process: 'P1', op: 'elect', invokeAt: at - 20, returnAt: at + 20, result: { isLeader: true, leaderId: 'P1', term: end.term + 2, acquired: true, databaseNow: at } });
    // The same without the overlap is fine: P1 takes over after the lease ran out.
    expectAccepted([...entries, lead, rival(last + LEASE + 100)]);
    expectRejected([...entries, lead, rival(last + 500)], /acquired term \d+ by .* while term \d+ of P0 was live/);

    // A watcher's reports out of order: two of its reports of different terms swapped.
    const reports = entries.map((e, i) => ({ e, i })).filter(({ e }) => e.op === 'watch');
    const pairs = reports.slice(1).map((r, k) => [reports[k], r]).filter(([x, y]) => ((x.e.result as { term: number | null }).term ?? 0) < ((y.e.result as { term: number | null }).term ?? 0));
    if (pairs.length) {
      const [x, y] = pick(pairs);
      const swapped = entries.map((e, i) => (i === x.i ? { ...e, result: y.e.result } : i === y.i ? { ...e, result: x.e.result } : e));
      expectRejected(swapped, /W watch/);
    }
  });
});
