/**
 * Schedules of election operations, as data: what the generator produces, what the harness runs
 * against a database and the model, and what a failure prints. Candidates and namespaces are
 * small indices, so that shrinking and replaying stay readable.
 */
import fc from 'fast-check';
import type { VacateReason } from './model';

/**
 * How `elect` runs: `plain` (no session: PostgreSQL's one statement, MariaDB's one-statement
 * paths, SQLite's programs), `session` (inside the caller's transaction), `idle` (a session without
 * a transaction: the library's own transaction on the caller's connection), `locked` and
 * `locked-session` (the locked general path, forced by the test hook, without or with a session).
 */
export type ElectPath = 'plain' | 'session' | 'idle' | 'locked' | 'locked-session';

/** Candidate options of a call; `metadata` is a tag turned into a small JSON object. */
export interface FieldsSpec {
  priority?: number;
  eligible?: boolean;
  metadata?: number;
}

export type Step =
  | { op: 'register'; c: number; ns: number; fields: FieldsSpec; proc: number }
  | { op: 'elect'; c: number; ns: number; fields: FieldsSpec; path: ElectPath; proc: number }
  | { op: 'resign' | 'handOver' | 'unregister'; c: number; ns: number; session: boolean; proc: number }
  /** assertLeader in a caller's transaction, then a fenced write when it passed. */
  | { op: 'assert'; c: number; ns: number; term: 'none' | 'current' | 'previous' | 'next'; proc: number }
  /** One LeaderElectorGroup tick (the group store's entry point), `release`: leases given up first. */
  | { op: 'tick'; c: number; nss: number[]; priority: number; eligible: boolean; metadata: boolean; balance: boolean; release: number[]; reason: VacateReason; proc: number }
  /** The group's vacate of many leases (stop: unregister; remove / hand-over: not). */
  | { op: 'vacate'; c: number; nss: number[]; reason: VacateReason; unregister: boolean; proc: number }
  | { op: 'read'; c: number; ns: number; proc: number }
  /** The database clock moves `units` × TIME_UNIT forward (every stored instant of the schedule moves back). */
  | { op: 'time'; units: number }
  /** Operations sent at once; accepted if some order of them explains every outcome and the rows after. */
  | { op: 'race'; steps: Step[] }
  /**
   * A transaction that locks a leader row (assertLeader, or elect with a session), makes its live
   * lease end a moment later, and holds the lock past that end while `waiters` are sent. `lapse`:
   * first every lease and candidate of the schedule runs out (3 time units pass), so that the
   * holder's elect takes the lease.
   */
  | { op: 'hold'; holder: { kind: 'assert' | 'elect'; c: number; ns: number; proc: number }; waiters: Step[]; lapse: boolean }
  /** SQLite: another connection holds the database write lock while `step` runs, until the step's `release`-th failed statement. */
  | { op: 'busy'; release: number; step: Step };

export interface Schedule {
  candidates: number;
  namespaces: number;
  /** Namespace names with quotes, backslashes and non-ASCII characters. */
  hostile: boolean;
  steps: Step[];
}

/** What the database and configuration allow a schedule to contain. */
export interface Capabilities {
  /** Two processes (DataSources) share the database (not `:memory:`). */
  processes: number;
  /** The processes concurrent rounds and busy steps may use. */
  roundProcesses: number;
  /** Concurrent rounds: races and holds. */
  rounds: boolean;
  /** Sessions (caller transactions) inside concurrent rounds (not on SQLite's shared connection). */
  sessionsInRounds: boolean;
  /**
   * The forced locked path without a session inside concurrent rounds. Not on better-sqlite3:
   * there it is TypeORM's transaction, whose driver waits for another connection's lock
   * synchronously (up to its busy timeout), and the other connection lives in this thread.
   */
  lockedInRounds: boolean;
  /** `busy` steps (SQLite file). */
  busy: boolean;
  /**
   * `busy` steps may use the forced locked path without a session (TypeORM's own transaction).
   * Not on better-sqlite3: its driver then waits for the lock synchronously, up to its busy
   * timeout, and the holder in this thread could not release it meanwhile.
   */
  busyLocked: boolean;
  /** Waiter paths of `elect` allowed in hold rounds (known open defects take some away). */
  holdWaiterPaths: readonly ElectPath[];
  /** The other operations allowed as waiters in hold rounds. */
  holdWaiterOps: ReadonlyArray<'assert' | 'tick' | 'resign' | 'unregister'>;
  /** Whether a group tick may run beside its own candidate's fenced transaction (known defect 4). */
  tickBesideOwnFence: boolean;
  hostile: 'never' | 'sometimes' | 'always';
  maxSteps: number;
  /** The paths `elect` steps may take (default: all). */
  electPaths?: readonly ElectPath[];
  /**
   * Every `elect` step is followed by the same call twice more (without candidate options, then
   * with them again), as an elector's ticks are: a leader's renewals, which other steps between
   * two calls of one candidate make rare.
   */
  electAgain?: boolean;
}

const PATHS: readonly ElectPath[] = ['plain', 'session', 'idle', 'locked', 'locked-session'];
const REASONS: readonly VacateReason[] = ['resigned', 'handed-over'];

const fieldsArb: fc.Arbitrary<FieldsSpec> = fc.record(
  { priority: fc.integer({ min: 0, max: 2 }), eligible: fc.boolean(), metadata: fc.integer({ min: 1, max: 3 }) },
  { requiredKeys: [] },
);

function indexSet(max: number): fc.Arbitrary<number[]> {
  return fc.uniqueArray(fc.integer({ min: 0, max: max - 1 }), { minLength: 1, maxLength: max }).map((a) => [...a].sort((x, y) => x - y));
}

/** The operations of one step; `inRound`: inside a race or hold (no time, no nested rounds). */
function opArb(caps: Capabilities, c: number, n: number, inRound: boolean): fc.Arbitrary<Step> {
  const cand = fc.integer({ min: 0, max: c - 1 });
  const ns = fc.integer({ min: 0, max: n - 1 });
  const proc = fc.integer({ min: 0, max: (inRound ? caps.roundProcesses : caps.processes) - 1 });
  const sessions = !inRound || caps.sessionsInRounds;
  const allowed = caps.electPaths ?? PATHS;
  const paths = (sessions ? PATHS : PATHS.filter((p) => p === 'plain' || (p === 'locked' && (!inRound || caps.lockedInRounds)))).filter((p) => allowed.includes(p));
  const session = sessions ? fc.boolean() : fc.constant(false);
  const ops: Array<{ weight: number; arbitrary: fc.Arbitrary<Step> }> = [
    { weight: 3, arbitrary: fc.record({ op: fc.constant('register' as const), c: cand, ns, fields: fieldsArb, proc }) },
    { weight: 10, arbitrary: fc.record({ op: fc.constant('elect' as const), c: cand, ns, fields: fieldsArb, path: fc.constantFrom(...paths), proc }) },
    { weight: 2, arbitrary: fc.record({ op: fc.constantFrom('resign' as const, 'handOver' as const), c: cand, ns, session, proc }) },
    { weight: 1, arbitrary: fc.record({ op: fc.constant('unregister' as const), c: cand, ns, session, proc }) },
    { weight: 4, arbitrary: fc.record({ op: fc.constant('tick' as const), c: cand, nss: indexSet(n), priority: fc.integer({ min: 0, max: 2 }), eligible: fc.boolean(), metadata: fc.boolean(), balance: fc.boolean(), release: fc.constant([] as number[]), reason: fc.constantFrom(...REASONS), proc }) },
    { weight: 1, arbitrary: fc.record({ op: fc.constant('vacate' as const), c: cand, nss: indexSet(n), reason: fc.constantFrom(...REASONS, 'unregistered' as const), unregister: fc.boolean(), proc }) },
  ];
  // Not in rounds: a read is three statements (isLeader, getLeader, listCandidates), not one answer.
  if (!inRound) ops.push({ weight: 1, arbitrary: fc.record({ op: fc.constant('read' as const), c: cand, ns, proc }) });
  if (sessions) ops.push({ weight: 3, arbitrary: fc.record({ op: fc.constant('assert' as const), c: cand, ns, term: fc.constantFrom('none' as const, 'current' as const, 'previous' as const, 'next' as const), proc }) });
  if (!inRound) {
    // A tick that also vacates leases given up (released before it decides; not among its namespaces).
    ops.push({
      weight: 1,
      arbitrary: fc
        .record({ c: cand, nss: indexSet(n), rel: indexSet(n), priority: fc.integer({ min: 0, max: 2 }), eligible: fc.boolean(), balance: fc.boolean(), reason: fc.constantFrom(...REASONS), proc })
        .map(({ c: cc, nss, rel, priority, eligible, balance, reason, proc: p }) => {
          const release = rel.filter((i) => !nss.includes(i));
          return { op: 'tick' as const, c: cc, nss, priority, eligible, metadata: false, balance, release, reason, proc: p };
        }),
    });
    ops.push({ weight: 5, arbitrary: fc.record({ op: fc.constant('time' as const), units: fc.integer({ min: 1, max: 3 }) }) });
  }
  return fc.oneof(...ops);
}

function holdArb(caps: Capabilities, c: number, n: number): fc.Arbitrary<Step> {
  const cand = fc.integer({ min: 0, max: c - 1 });
  // -1: the holder's own candidate (its elector renewing, its group ticking, beside its fence).
  const waiterCand = fc.oneof({ weight: 2, arbitrary: cand }, { weight: 1, arbitrary: fc.constant(-1) });
  const proc = fc.integer({ min: 0, max: caps.roundProcesses - 1 });
  const kinds: Array<{ weight: number; arbitrary: fc.Arbitrary<Step> }> = [];
  if (caps.holdWaiterPaths.length > 0) {
    kinds.push({ weight: 6, arbitrary: fc.record({ op: fc.constant('elect' as const), c: waiterCand, ns: fc.constant(-1), fields: fieldsArb, path: fc.constantFrom(...caps.holdWaiterPaths), proc }) });
  }
  if (caps.holdWaiterOps.includes('tick')) {
    kinds.push({ weight: 2, arbitrary: fc.record({ op: fc.constant('tick' as const), c: waiterCand, nss: indexSet(n), priority: fc.integer({ min: 0, max: 2 }), eligible: fc.boolean(), metadata: fc.constant(false), balance: fc.boolean(), release: fc.constant([] as number[]), reason: fc.constant('resigned' as const), proc }) });
  }
  const vacates = caps.holdWaiterOps.filter((o): o is 'resign' | 'unregister' => o === 'resign' || o === 'unregister');
  if (vacates.length > 0) kinds.push({ weight: 1, arbitrary: fc.record({ op: fc.constantFrom(...vacates), c: cand, ns: fc.constant(-1), session: fc.constant(false), proc }) });
  if (caps.holdWaiterOps.includes('assert')) {
    kinds.push({ weight: 2, arbitrary: fc.record({ op: fc.constant('assert' as const), c: cand, ns: fc.constant(-1), term: fc.constantFrom('none' as const, 'current' as const), proc }) });
  }
  const waiter = fc.oneof(...kinds);
  return fc
    .record({
      // -1: the held namespace's leader when the round begins (candidate 0 when there is none).
      holder: fc.record({ kind: fc.constantFrom('assert' as const, 'elect' as const), c: fc.oneof(cand, fc.constant(-1)), ns: fc.integer({ min: 0, max: n - 1 }), proc }),
      waiters: fc.array(waiter, { minLength: 1, maxLength: 2 }),
      lapse: fc.boolean(),
    })
    .map(({ holder, waiters, lapse }) => {
      // Waiters on the held namespace (-1), except ticks, which campaign where they were drawn
      // (and on the held one too when they are the holder's candidate's).
      // Candidates are resolved when the round runs (see `holdWaiters`).
      const own = (w: Step): Step => (w.op === 'tick' && w.c === -1 ? { ...w, nss: [...new Set([...w.nss, holder.ns])].sort((a, b) => a - b) } : w);
      const ws = waiters.map(own).map((w) => ('ns' in w && w.ns === -1 ? { ...w, ns: holder.ns } : w));
      return { op: 'hold' as const, holder, waiters: ws, lapse };
    });
}

/**
 * The waiters of a hold round once its holder's candidate is known (-1 resolved to it): one
 * operation per candidate, and none of the holder's own candidate unless the holder is a fenced
 * transaction (its elector renewing or its group ticking beside it; ticks only when allowed).
 */
export function holdWaiters(waiters: readonly Step[], holder: number, kind: 'assert' | 'elect', tickBesideOwnFence: boolean): Step[] {
  let ws = onePerCandidate(waiters.map((w) => ('c' in w && w.c === -1 ? ({ ...w, c: holder } as Step) : w)));
  if (kind !== 'assert') ws = ws.filter((w) => (w as { c: number }).c !== holder);
  if (!tickBesideOwnFence) ws = ws.filter((w) => !(w.op === 'tick' && w.c === holder));
  return ws;
}

/**
 * One operation per candidate in a concurrent round, besides its fenced transactions: a process
 * is one candidate, and one candidate does not campaign twice at once (two ticks of one candidate
 * would see each other's first heartbeat as neither's).
 */
function onePerCandidate(steps: Step[]): Step[] {
  const seen = new Set<number>();
  return steps.filter((s) => {
    if (s.op === 'assert') return true;
    const c = (s as { c: number }).c;
    if (seen.has(c)) return false;
    seen.add(c);
    return true;
  });
}

function raceArb(caps: Capabilities, c: number, n: number): fc.Arbitrary<Step> {
  return fc
    .array(opArb(caps, c, n, true), { minLength: 2, maxLength: 4 })
    .map((raw) => {
      const steps = onePerCandidate(raw);
      if (caps.tickBesideOwnFence) return { op: 'race' as const, steps };
      const fencing = new Set(steps.filter((s) => s.op === 'assert').map((s) => (s as { c: number }).c));
      return { op: 'race' as const, steps: steps.filter((s) => !(s.op === 'tick' && fencing.has(s.c))) };
    })
    .filter((s) => s.steps.length >= 2);
}

function busyArb(caps: Capabilities, c: number, n: number): fc.Arbitrary<Step> {
  const step = opArb({ ...caps, sessionsInRounds: false }, c, n, true).map((s) => (s.op === 'elect' && s.path === 'locked' && !caps.busyLocked ? { ...s, path: 'plain' as const } : s));
  return fc.record({ op: fc.constant('busy' as const), release: fc.integer({ min: 1, max: 6 }), step });
}

const MAX_CANDIDATES = 5;
const MAX_NAMESPACES = 3;

/** The candidates and namespaces a schedule names (at least 2 and 1). */
function extent(steps: Step[]): { candidates: number; namespaces: number } {
  let c = 1;
  let n = 0;
  const visit = (s: Step): void => {
    if ('c' in s) c = Math.max(c, s.c);
    if ('ns' in s) n = Math.max(n, s.ns);
    if ('nss' in s) n = Math.max(n, ...s.nss);
    if (s.op === 'tick') n = Math.max(n, ...s.release, 0);
    if (s.op === 'race') s.steps.forEach(visit);
    if (s.op === 'hold') {
      c = Math.max(c, s.holder.c);
      n = Math.max(n, s.holder.ns);
      s.waiters.forEach(visit);
    }
    if (s.op === 'busy') visit(s.step);
  };
  steps.forEach(visit);
  return { candidates: c + 1, namespaces: n + 1 };
}

/**
 * Schedules over up to 5 candidates and 3 namespaces. No `chain`: indices shrink towards 0 and
 * steps are dropped one by one, so a failure shrinks to few steps, candidates and namespaces.
 */
export function scheduleArb(caps: Capabilities, options: { rounds: boolean }): fc.Arbitrary<Schedule> {
  const c = MAX_CANDIDATES;
  const n = MAX_NAMESPACES;
  const steps: Array<{ weight: number; arbitrary: fc.Arbitrary<Step> }> = [{ weight: 10, arbitrary: opArb(caps, c, n, false) }];
  if (options.rounds && caps.rounds) {
    steps.push({ weight: 2, arbitrary: raceArb(caps, c, n) });
    steps.push({ weight: 2, arbitrary: holdArb(caps, c, n) });
  }
  if (options.rounds && caps.busy) steps.push({ weight: 2, arbitrary: busyArb(caps, c, n) });
  return fc
    .record({
      hostile: caps.hostile === 'never' ? fc.constant(false) : caps.hostile === 'always' ? fc.constant(true) : fc.boolean(),
      steps: fc.array(fc.oneof(...steps), { minLength: 1, maxLength: caps.maxSteps }),
    })
    .map(({ hostile, steps: list }) => {
      const all = caps.electAgain ? list.flatMap((step): Step[] => (step.op === 'elect' ? [step, { ...step, fields: {} }, step] : [step])) : list;
      return { ...extent(all), hostile, steps: all };
    });
}

// ---- printing ---------------------------------------------------------------------------------

/** A candidate as printed: -1 is the holder's (or the held namespace's leader). */
const cText = (c: number) => (c === -1 ? 'c(holder)' : `c${c}`);

function fieldsText(f: FieldsSpec): string {
  const parts = [f.priority !== undefined ? `p=${f.priority}` : '', f.eligible !== undefined ? `e=${f.eligible}` : '', f.metadata !== undefined ? `m=${f.metadata}` : ''].filter(Boolean);
  return parts.length ? ` {${parts.join(' ')}}` : '';
}

/** One step as a line (what a failure prints). */
export function stepText(s: Step): string {
  switch (s.op) {
    case 'register':
      return `register ${cText(s.c)} ns${s.ns}${fieldsText(s.fields)} @${s.proc}`;
    case 'elect':
      return `elect ${cText(s.c)} ns${s.ns}${fieldsText(s.fields)} via ${s.path} @${s.proc}`;
    case 'resign':
    case 'handOver':
    case 'unregister':
      return `${s.op} ${cText(s.c)} ns${s.ns}${s.session ? ' in a transaction' : ''} @${s.proc}`;
    case 'assert':
      return `assertLeader ${cText(s.c)} ns${s.ns} term=${s.term} + fenced write @${s.proc}`;
    case 'tick':
      return `tick ${cText(s.c)} [${s.nss.map((i) => `ns${i}`).join(' ')}] p=${s.priority} e=${s.eligible}${s.metadata ? ' m' : ''}${s.balance ? ' balance' : ''}${s.release.length ? ` release [${s.release.map((i) => `ns${i}`).join(' ')}] ${s.reason}` : ''} @${s.proc}`;
    case 'vacate':
      return `group vacate ${cText(s.c)} [${s.nss.map((i) => `ns${i}`).join(' ')}] ${s.reason}${s.unregister ? ' +unregister' : ''} @${s.proc}`;
    case 'read':
      return `read ${cText(s.c)} ns${s.ns} @${s.proc}`;
    case 'time':
      return `time passes ${s.units} unit(s)`;
    case 'race':
      return `race { ${s.steps.map(stepText).join(' | ')} }`;
    case 'hold':
      return `${s.lapse ? 'time passes 3 unit(s), then ' : ''}hold ${s.holder.kind === 'assert' ? 'assertLeader' : 'elect in a transaction'} ${s.holder.c === -1 ? 'c(leader)' : `c${s.holder.c}`} ns${s.holder.ns} @${s.holder.proc}, lease ends, while { ${s.waiters.map(stepText).join(' | ')} }`;
    case 'busy':
      return `busy write lock (released at failure ${s.release}) while { ${stepText(s.step)} }`;
  }
}

export function scheduleText(s: Schedule): string {
  return [`${s.candidates} candidates, ${s.namespaces} namespace(s)${s.hostile ? ' (hostile names)' : ''}:`, ...s.steps.map((step, i) => `  ${i + 1}. ${stepText(step)}`)].join('\n');
}
