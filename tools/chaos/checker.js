// @ts-check
'use strict';
/**
 * The checker: reads the ledger (fenced writes and every lease change, in the database's lock
 * order), the workers' event logs and the fault log, and decides.
 *
 * (a) zero stale writes: each committed write's term is the current term of the leader row, held
 *     by the writer and not vacated, at the moment the write was made (ledger order);
 * (b) terms strictly increase over time: each grant is the previous term + 1, and each worker's
 *     elected terms increase; leases never overlap (a grant only after the previous lease ended);
 * (c) no leader-only action of a term starts after a later term began (worker clock vs database
 *     clock: the same host's clock, with `clockToleranceMs`); a run with no action of a term that
 *     a later term followed has nothing to check, and fails (unless `requireSecondTerm: false`);
 * (d) time without a leader (no unexpired lease) stays within the bound the faults explain: one
 *     tick + `slackMs` (a small margin for a loaded machine) when no fault is near the gap, else
 *     the durations of the faults near it + lease + tick + `slackMs`, either widened by the
 *     slowness the workers measured in their ticks near the gap (`tick` events: twice the longest
 *     tick + the most a tick started late); and the first term is granted within `startupMs` of
 *     the first worker's start;
 * (e) the workers never crashed on their own nor let a rejection go unhandled, and work was done;
 * (f) fencing at work: a leader stalled (event loop blocked) just before `assertLeader` for
 *     longer than its lease is fenced off (NotLeaderError); one stalled just after it still holds
 *     the fence, so nobody takes over and its write commits. A stall whose action never ended is
 *     a failure unless its process was killed or stopped first; each kind in `expectStalls` must
 *     have happened at least once with its expected outcome;
 * (h) the history table is exactly the ledger's terms: terms 1..n, each naming the ledger's
 *     holder, never overlapping (database clock), each closed with the reason the ledger and the
 *     workers' reports explain (vacated in time → resigned/unregistered/handed-over as the holder
 *     reported; lapsed → expired, ended at the lease's own end);
 * (i) every write fenced off by `assertLeader` was attempted under a (term, candidate) the history
 *     has; with a `before-fence` stall expected, at least one write was fenced off;
 * (j) the `watch()` observers saw every term and every vacancy, in term order, never a state twice,
 *     dated as the history dates them;
 * (k) priorities: an ineligible worker never leads (no grant, no history row, no election), and
 *     at the end of the quiet tail the leader is a live eligible worker of the highest priority;
 * (l) no two workers report leading at once: each 'elected' report up to its 'demoted' report or
 *     the end of the last lease the ledger gave it, whichever is first (a frozen process reports
 *     late, but its local deadline ended its leadership by then);
 * (r) with the workers' schedule (`scheduled`): its claims, final states and job rows against the
 *     lease history, each slot's attempts, `done` and job rows, and the runs table (runs-check.js);
 * (n) with the workers' records of their loop (`loopCallbacks`): per leadership, onStartedLeading,
 *     'elected', onStoppedLeading, 'demoted' in order, once each, all four unless its process was
 *     killed, the signal aborted exactly from onStoppedLeading on, and no leadership of a
 *     namespace started before the previous one was demoted;
 * (o) with them: no leader work item (a fenced write, a scheduled job) starts with its lease's
 *     signal aborted, after its onStoppedLeading, or after its local deadline can have passed.
 *
 * Group mode (`checkGroup`: every worker runs a LeaderElectorGroup over the same namespaces and
 * makes fenced writes per namespace): (a)–(l) per namespace, each failure naming its namespace,
 * plus
 * (m) no (namespace, term) held by two workers — by the ledger's grants, the workers' 'elected'
 *     reports and the history — and no write to a namespace outside the group.
 */

/**
 * @typedef {import('./database').LedgerRow} LedgerRow
 * @typedef {{ t: number, ev: string, slot: number, incarnation: number, [k: string]: any }} WorkerEvent
 * @typedef {{ type: string, slot: number | null, start: number, end: number, detail?: string, took?: boolean }} Fault
 *   `took: false`: a stall order no fenced action took up (its target was not leading)
 * @typedef {{ term: number, holder: string, start: number, end: number, endedBy: 'expiry' | 'vacate' | 'next' | 'run-end' }} Leadership
 * @typedef {{ start: number, end: number, allowed: number, explainedBy: string[] }} Gap
 * @typedef {{ id: string, name: string, ok: boolean, detail: string, violations: string[] }} Check
 * @typedef {{ term: number, leaderId: string, acquiredAt: number, endedAt: number | null, endReason: string | null }} HistoryRow
 * @typedef {{ t: number, leaderId: string | null, term: number | null, at: number }} WatchChange
 * @typedef {{ name: string, pollMs: number | undefined, changes: WatchChange[], errors: number }} WatchRecord
 * @typedef {{ slot: number, priority: number, eligible: boolean }} SlotSetting
 * @typedef {{ leaderId: string | null, term: number, live: boolean, current: string[] }} FinalLeader
 */

/** Database timestamps read back through different paths (trigger arithmetic, the library's Dates) agree to this many ms. */
const INSTANT_TOLERANCE_MS = 2;

const { checkRuns } = require('./runs-check');

/**
 * (d): the first term is granted within this long of the first worker's start event (that worker
 * connects, reads the schema and runs its first tick; a loaded machine is slow at all three).
 */
const STARTUP_MS = 5000;
/** The end reasons of a term its holder vacated (the chaos workers never write as an operator); the other is 'expired'. */
const VACATE_END_REASONS = ['handed-over', 'resigned', 'unregistered'];

/**
 * (d): how much the workers' measured ticks near a window add to a gap's bound: twice the longest
 * tick (the one in flight when the lease ran out, then the taking one) plus the most any worker's
 * next tick started later than a period after its previous one ended. Ticks are the workers'
 * `tick` events (`t` its end, `ms` its duration); none (an older log): nothing is added.
 * @param {WorkerEvent[]} events @param {number} tickMaxMs
 * @returns {(from: number, to: number) => { ms: number, why: string }}
 */
function tickSlowness(events, tickMaxMs) {
  /** @type {Map<string, WorkerEvent[]>} */ const byWorker = new Map();
  for (const e of events) {
    if (e.ev !== 'tick') continue;
    const key = `${e.slot}/${e.incarnation}`;
    const list = byWorker.get(key) ?? [];
    list.push(e);
    byWorker.set(key, list);
  }
  for (const list of byWorker.values()) list.sort((a, b) => a.t - b.t);
  return (from, to) => {
    let longest = 0;
    let latest = 0;
    for (const list of byWorker.values()) {
      for (let i = 0; i < list.length; i++) {
        const tick = list[i];
        const began = tick.t - tick.ms;
        if (tick.t < from || began > to) continue;
        longest = Math.max(longest, tick.ms);
        if (i > 0) latest = Math.max(latest, began - list[i - 1].t - tickMaxMs);
      }
    }
    const ms = Math.round(2 * longest + latest);
    return { ms, why: `slow ticks (longest ${Math.round(longest)} ms, late by ${Math.round(latest)} ms)` };
  };
}

/** The outcomes an action logs. */
const OUTCOMES = ['action-commit', 'action-fenced', 'action-guard-refused', 'action-error'];

/**
 * The history, watch, priority and fenced-off inputs are optional: checks (h)–(l) run on what is given.
 * @param {{ ledger: LedgerRow[], events: WorkerEvent[], faults: Fault[], ns: string, leaseMs: number, tickMaxMs: number,
 *   slackMs: number, clockToleranceMs: number, runStart: number, stopAt: number, history?: HistoryRow[], watches?: WatchRecord[],
 *   watchFailures?: string[], settings?: SlotSetting[], final?: FinalLeader, lastFaultEnd?: number, settleMs?: number,
 *   requireWrites?: boolean, balance?: boolean, requireSecondTerm?: boolean, startupMs?: number,
 *   expectStalls?: ('before-fence' | 'in-fence')[], scheduled?: boolean, runs?: import('./runs-check').RunRow[], loopCallbacks?: boolean, guarded?: boolean }} input
 *   `requireWrites: false`: a namespace without writes is no failure (group mode decides over all of them);
 *   `balance: true`: hand-overs between equal priorities are expected (a balancing group);
 *   `requireSecondTerm: false`: (c) with nothing to check is no failure (group mode decides over all namespaces);
 *   `startupMs`: bound of the first grant after the first worker's start (default {@link STARTUP_MS});
 *   `expectStalls`: the stalls the run's schedule guaranteed ((f) and (i) fail without them);
 *   `scheduled`: the workers ran a schedule, so (r) checks its runs (`runs`: the runs table at the end);
 *   `loopCallbacks`: the workers recorded their loop's callbacks, events and work items, so (n) and (o) check them;
 *   `guarded`: the workers' writes went to a guarded table first, which refuses a write whose
 *   lease ran out even inside the fence: a stall inside it (longer than the lease) is then refused.
 */
function check(input) {
  const { events, faults, leaseMs, tickMaxMs, slackMs, clockToleranceMs, stopAt } = input;
  const ledger = input.ledger.filter((r) => r.ns === input.ns);
  const grants = ledger.filter((r) => r.kind === 'grant');
  const writes = ledger.filter((r) => r.kind === 'write');
  /** @type {Check[]} */
  const checks = [];
  const add = (/** @type {string} */ id, /** @type {string} */ name, /** @type {string[]} */ violations, /** @type {string} */ detail) =>
    checks.push({ id, name, ok: violations.length === 0, detail, violations: violations.slice(0, 20) });

  // Replay the ledger in lock order: the leader row's state before each row.
  /** @type {string[]} */ const stale = [];
  /** @type {string[]} */ const termOrder = [];
  /** @type {string[]} */ const overlaps = [];
  let term = 0;
  /** @type {string | null} */ let holder = null;
  /** @type {number | null} */ let leaseUntil = null;
  let vacated = true;
  let lateWrites = 0;
  /** @type {Leadership[]} */ const leaderships = [];
  for (const row of ledger) {
    const current = leaderships[leaderships.length - 1];
    if (row.kind === 'grant') {
      if (row.term !== term + 1) termOrder.push(`ledger #${row.id}: term ${row.term} granted after term ${term} (expected ${term + 1})`);
      if (!vacated && leaseUntil !== null && row.at < leaseUntil - clockToleranceMs) {
        overlaps.push(`ledger #${row.id}: term ${row.term} granted ${Math.round(leaseUntil - row.at)} ms before term ${term}'s lease ended`);
      }
      if (current && current.endedBy === 'expiry' && row.at < current.end) {
        current.end = row.at;
        current.endedBy = 'next';
      }
      term = row.term;
      holder = row.holder;
      leaseUntil = row.leaseUntil;
      vacated = false;
      leaderships.push({ term, holder: String(holder), start: row.at, end: Number(row.leaseUntil), endedBy: 'expiry' });
    } else if (row.kind === 'renew') {
      if (row.term !== term || row.holder !== holder) termOrder.push(`ledger #${row.id}: renewal of term ${row.term} by ${row.holder} while term ${term} is ${holder}'s`);
      leaseUntil = row.leaseUntil;
      if (current && !vacated) current.end = Number(row.leaseUntil);
    } else if (row.kind === 'vacate') {
      if (row.term !== term) termOrder.push(`ledger #${row.id}: vacate of term ${row.term} while the term is ${term}`);
      if (current && !vacated) {
        current.end = Math.min(current.end, row.at);
        current.endedBy = 'vacate';
      }
      vacated = true;
    } else if (row.kind === 'write') {
      if (row.term !== term || row.holder !== holder || vacated) {
        stale.push(
          `ledger #${row.id}: worker ${row.worker} wrote seq ${row.seq} under term ${row.term} while the leader row held ` +
            `${vacated ? 'no lease' : `term ${term} (${holder === row.holder ? 'same holder' : `holder ${holder}`})`}`,
        );
      } else if (leaseUntil !== null && row.at > leaseUntil) {
        // Possible only while the writer kept the fence's lock past its lease (paused in the
        // transaction): nobody else could take over meanwhile, so it is not stale.
        lateWrites++;
      }
    }
  }
  const last = leaderships[leaderships.length - 1];
  if (last && last.end > stopAt) {
    last.end = stopAt;
    last.endedBy = 'run-end';
  }

  // Workers' own view of their terms.
  /** @type {Map<string, WorkerEvent[]>} */
  const byIncarnation = new Map();
  for (const e of events) {
    const key = `${e.slot}/${e.incarnation}`;
    if (!byIncarnation.has(key)) byIncarnation.set(key, []);
    /** @type {WorkerEvent[]} */ (byIncarnation.get(key)).push(e);
  }
  /** @type {Map<number, string>} */ const electedBy = new Map();
  /** @type {Map<string, string>} */ const candidateOf = new Map();
  let sameTermAgain = 0;
  for (const [key, list] of byIncarnation) {
    let previous = 0;
    for (const e of list) {
      if (e.ev === 'start') candidateOf.set(key, e.candidateId);
      if (e.ev !== 'elected') continue;
      // The same term again is a renewal the database saw as continuous (the lease never
      // lapsed there) after this elector had already demoted itself locally (a slow round trip):
      // renewal keeps the term (docs/protocol.md). Going back to an older term is never right.
      if (e.term < previous) termOrder.push(`worker ${key}: elected for term ${e.term} after term ${previous}`);
      if (e.term === previous) sameTermAgain++;
      previous = e.term;
      const other = electedBy.get(e.term);
      if (other && other !== key) termOrder.push(`term ${e.term} was elected by workers ${other} and ${key}`);
      electedBy.set(e.term, key);
      const grant = grants.find((g) => g.term === e.term);
      if (!grant) termOrder.push(`worker ${key} reports term ${e.term}, which the ledger never granted`);
      else if (grant.holder !== candidateOf.get(key)) termOrder.push(`worker ${key} reports term ${e.term}, granted to ${grant.holder}`);
    }
  }

  add('a', 'zero stale writes', stale, `${writes.length} committed writes replayed against the lease history; ${lateWrites} made after the lease's end while holding the fence (not stale)`);
  add(
    'b',
    'terms strictly increase; leases never overlap',
    [...termOrder, ...overlaps],
    `${grants.length} grants (terms ${grants[0]?.term ?? '-'}..${grants[grants.length - 1]?.term ?? '-'}); ` +
      `${sameTermAgain} local re-elections under an unchanged term (lease renewed after a local demotion)`,
  );

  // (c) actions vs the start of the next term.
  /** @type {string[]} */ const lateActions = [];
  const actions = events.filter((e) => e.ev === 'action-start');
  let pausedStarts = 0;
  // Actions of a term that a later term followed: the only ones (c) can judge.
  let judged = 0;
  for (const action of actions) {
    const next = grants.find((g) => g.term > action.term);
    if (!next) continue;
    judged++;
    // The elector decides when runIfLeader checks leadership (decidedAt is read just before, in
    // the same synchronous step). A process paused between that check and the action's first
    // line starts it late whatever the elector does — that is what fencing is for, and (a) shows
    // it held; such starts are counted, not failed.
    const decidedAt = action.decidedAt ?? action.at;
    if (decidedAt > next.at + clockToleranceMs) {
      lateActions.push(`worker ${action.slot}/${action.incarnation} decided to run action seq ${action.seq} of term ${action.term} ${Math.round(decidedAt - next.at)} ms after term ${next.term} began`);
    } else if (action.at > next.at + clockToleranceMs) {
      pausedStarts++;
    }
  }
  if (judged === 0 && input.requireSecondTerm !== false) {
    lateActions.push(`no action of a term that a later term followed (${grants.length} grants, ${actions.length} actions): nothing to check`);
  }
  add(
    'c',
    'no action of a term starts after a later term began',
    lateActions,
    `${actions.length} actions, ${judged} of a term a later term followed (tolerance ${clockToleranceMs} ms); ${pausedStarts} started late only because their process was paused right after the leadership check`,
  );

  // (d) leaderless gaps.
  /** @type {Gap[]} */ const gaps = [];
  /** @type {string[]} */ const longGaps = [];
  // A fault near a gap (active during it, or ending at most a lease and a tick before it began)
  // may hold it open for the fault's duration, then a lease (a lease granted or renewed just before
  // the fault heals) and a tick (the next taker's). Faults run one at a time: their durations add up.
  // The workers' own measure of their ticks widens that: a tick in flight when the lease ran out
  // delays its worker's next one by its duration, the taking tick lasts its own, and a timer that
  // fired late (a loaded machine) adds its lateness. Their largest near the gap are added, so the
  // bound follows what the run measured instead of what a quiet machine does.
  const slowness = tickSlowness(events, tickMaxMs);
  const explain = (/** @type {number} */ start, /** @type {number} */ end) => {
    const near = faults.filter((f) => f.start <= end && f.end >= start - (leaseMs + tickMaxMs));
    const slow = slowness(start - tickMaxMs, end);
    const allowed = tickMaxMs + slackMs + slow.ms + (near.length ? near.reduce((sum, f) => sum + (f.end - f.start), 0) + leaseMs : 0);
    return { allowed, explainedBy: [...near.map((f) => `${f.type}${f.slot === null ? '' : `@w${f.slot}`}`), ...(slow.ms > 0 ? [slow.why] : [])] };
  };
  for (let i = 0; i < leaderships.length; i++) {
    const end = leaderships[i].end;
    const nextStart = i + 1 < leaderships.length ? leaderships[i + 1].start : stopAt;
    if (nextStart - end <= 0) continue;
    const gap = { start: end, end: nextStart, ...explain(end, nextStart) };
    gaps.push(gap);
    if (gap.end - gap.start > gap.allowed) {
      longGaps.push(`${Math.round(gap.end - gap.start)} ms without a leader after term ${leaderships[i].term} (allowed ${Math.round(gap.allowed)} ms: ${gap.explainedBy.join(', ') || 'no fault'})`);
    }
  }
  if (leaderships.length === 0) longGaps.push('no leader was ever elected');
  // The first grant: nothing to wait for on an empty table but the first worker's start-up and tick.
  const startupMs = input.startupMs ?? STARTUP_MS;
  const firstStart = events.filter((e) => e.ev === 'start').reduce((m, e) => Math.min(m, e.t), Infinity);
  const firstGrantMs = grants.length && Number.isFinite(firstStart) ? grants[0].at - firstStart : undefined;
  if (firstGrantMs !== undefined && firstGrantMs > startupMs + tickMaxMs) {
    longGaps.push(`the first term was granted ${Math.round(firstGrantMs)} ms after the first worker started (allowed ${startupMs + tickMaxMs} ms: start-up + tick)`);
  }
  const maxGap = gaps.reduce((m, g) => Math.max(m, g.end - g.start), 0);
  const maxQuietGap = gaps.filter((g) => g.explainedBy.every((why) => why.startsWith('slow ticks'))).reduce((m, g) => Math.max(m, g.end - g.start), 0);
  add(
    'd',
    'time without a leader within the faults\' bound',
    longGaps,
    `${gaps.length} gaps, longest ${Math.round(maxGap)} ms; bound tick ${tickMaxMs} + margin ${slackMs} ms, + the nearby faults' durations + lease ${leaseMs} ms; ` +
      `first grant ${firstGrantMs === undefined ? '-' : Math.round(firstGrantMs)} ms after the first start (bound ${startupMs + tickMaxMs} ms)`,
  );

  // (f) fencing, shown at work: a leader stalled before assertLeader for longer than its lease
  // must be fenced off; one stalled after it holds the fence's lock, so its write commits.
  /** @type {string[]} */ const fencing = [];
  const stalls = events.filter((e) => e.ev === 'stall');
  const inFence = input.guarded ? 'action-guard-refused' : 'action-commit';
  const asExpected = stallOutcomes(events, faults, stopAt, fencing, inFence);
  const inFenceDid = input.guarded ? 'refused by the guarded table, the lease over' : 'committed';
  for (const where of input.expectStalls ?? []) {
    if (asExpected[where] === 0) fencing.push(`no stall ${where} ended as expected (${where === 'before-fence' ? 'fenced off' : inFenceDid}): nothing to check`);
  }
  add(
    'f',
    `stalled leaders: fenced off before the fence, ${inFenceDid} inside it`,
    fencing,
    `${stalls.filter((s) => s.where === 'before-fence').length} stalls before assertLeader (${asExpected['before-fence']} fenced off), ` +
      `${stalls.filter((s) => s.where === 'in-fence').length} inside the fence (${asExpected['in-fence']} ${inFenceDid})`,
  );

  // (e) robustness and liveness sanity: a run that wrote nothing proves nothing.
  /** @type {string[]} */ const crashes = [];
  for (const e of events) {
    if (e.ev === 'unhandled-rejection' || e.ev === 'fatal') crashes.push(`worker ${e.slot}/${e.incarnation}: ${e.ev}: ${e.message}`);
  }
  const committed = events.filter((e) => e.ev === 'action-commit').length;
  if (writes.length === 0 && input.requireWrites !== false) crashes.push('no fenced write committed: the run proves nothing');
  if (committed > writes.length) crashes.push(`workers logged ${committed} commits, the ledger holds ${writes.length} writes`);
  add('e', 'no crash or unhandled rejection; work was done', crashes, `${committed} commits logged, ${writes.length} ledger writes`);

  const extra = checkHistoryAndObservers(input, { ledger, grants, candidateOf, byIncarnation, add });
  if (input.loopCallbacks) {
    const loops = checkLoopCallbacks(byIncarnation, leaseMs, input.requireWrites !== false);
    add('n', 'per leadership: onStartedLeading, \'elected\', onStoppedLeading, \'demoted\', in order, once each (unless its process was killed), the signal aborted exactly from onStoppedLeading on', loops.order, loops.orderDetail);
    add('o', 'no leader work starts after its leadership ended (signal aborted, onStoppedLeading called, or the local deadline passed)', loops.late, loops.lateDetail);
    Object.assign(extra, loops.stats);
  }
  if (input.scheduled) {
    const runs = checkRuns({ ledger, ns: input.ns, runs: input.runs, requireClaims: input.requireWrites !== false });
    add('r', 'each slot claimed under the live term, attempts 1, 2, … in order, done at most once with exactly one job row; the runs table agrees', runs.violations, runs.detail);
    Object.assign(extra, runs.stats);
  }

  const count = (/** @type {string} */ ev) => events.filter((e) => e.ev === ev).length;
  /** @type {Record<string, number>} */
  const faultCounts = {};
  for (const f of faults) faultCounts[f.type] = (faultCounts[f.type] ?? 0) + 1;
  checks.sort((x, y) => x.id.localeCompare(y.id));
  return {
    ok: checks.every((c) => c.ok),
    checks,
    leaderships,
    gaps,
    candidateOf: Object.fromEntries(candidateOf),
    stats: {
      grants: grants.length,
      writes: writes.length,
      staleWrites: stale.length,
      lateWrites,
      actions: actions.length,
      fenced: count('action-fenced'),
      actionErrors: count('action-error'),
      tickErrors: count('error'),
      stalls: stalls.length,
      stallsBeforeFenceFenced: asExpected['before-fence'],
      stallsInFenceCommitted: asExpected['in-fence'],
      pausedStarts,
      judgedActions: judged,
      firstGrantMs: firstGrantMs === undefined ? null : Math.round(firstGrantMs),
      demotions: count('demoted'),
      sameTermReelections: sameTermAgain,
      faults: faults.length,
      faultCounts,
      maxGapMs: Math.round(maxGap),
      /** Longest leaderless time with no fault nearby: how fast a follower notices an expired lease. */
      maxQuietGapMs: Math.round(maxQuietGap),
      ...extra,
    },
  };
}

/**
 * (f) per stall: the outcome of the stalled action against what its place demands — fenced off
 * before `assertLeader`, committed inside the fence. An action with no outcome is a failure unless
 * its process could not finish it: killed (a kill fault on its slot after the stall began), stopped
 * (its 'stopping' report after the stall), or the run ended before the stall did.
 * @param {WorkerEvent[]} events @param {Fault[]} faults @param {number} stopAt @param {string[]} violations
 * @param {string} [inFence] the outcome a stall inside the fence must have (a guarded run: refused)
 * @returns {{ 'before-fence': number, 'in-fence': number }} stalls that ended as expected, per place
 */
function stallOutcomes(events, faults, stopAt, violations, inFence = 'action-commit') {
  const ok = { 'before-fence': 0, 'in-fence': 0 };
  for (const stall of events.filter((e) => e.ev === 'stall')) {
    const own = (/** @type {WorkerEvent} */ e) => e.slot === stall.slot && e.incarnation === stall.incarnation;
    const outcome = events.find((e) => own(e) && e.seq === stall.seq && OUTCOMES.includes(e.ev));
    const where = /** @type {'before-fence' | 'in-fence'} */ (stall.where);
    const expected = where === 'before-fence' ? 'action-fenced' : inFence;
    const who = `worker ${stall.slot}/${stall.incarnation} stalled ${where} (seq ${stall.seq}${stall.ns === undefined ? '' : `, ${stall.ns}`})`;
    if (!outcome) {
      const killed = faults.some((f) => f.type === 'kill' && f.slot === stall.slot && f.end >= stall.t && f.start <= stall.t + Number(stall.ms ?? 0) + 5000);
      const stopped = events.some((e) => own(e) && e.ev === 'stopping' && e.t >= stall.t);
      const runEnded = stopAt <= stall.t + Number(stall.ms ?? 0);
      if (!killed && !stopped && !runEnded) violations.push(`${who}: its action never ended, though its process was neither killed nor stopped`);
      continue;
    }
    if (outcome.ev === expected) ok[where]++;
    else violations.push(`${who}: ${outcome.ev}${outcome.message ? ` ${outcome.message}` : ''}, expected ${expected}`);
  }
  return ok;
}

/** The steps of one leadership, in the order the loops must report them. */
const LEADERSHIP_STEPS = ['cb-started', 'elected', 'cb-stopped', 'demoted'];
const STEP_NAMES = /** @type {Record<string, string>} */ ({ 'cb-started': 'onStartedLeading', elected: "'elected'", 'cb-stopped': 'onStoppedLeading', demoted: "'demoted'" });

/**
 * (n) and (o), from the workers' records of their loop (worker.js): each leadership (`lid`: one
 * Lease object, so a term granted twice is two) with its callbacks and events and whether its
 * signal had aborted at each, and each leader work item's start (`work`: a fenced write handed a
 * lease by runIfLeader or the group's isLeader/lease, or a scheduled job) with its lease's signal
 * and `tickAt`, the wall time of the loop's last successful tick before it.
 *
 * (n) per leadership: onStartedLeading, 'elected', onStoppedLeading, 'demoted', in that order and
 *     each once; all four unless its process never stopped cleanly (killed: it ends with a prefix
 *     of them); the signal not aborted at the first two, aborted at the last two; and per
 *     namespace, no leadership starts before the previous one was demoted.
 * (o) per work item: its lease's signal not aborted, its onStoppedLeading not yet called, and its
 *     start no later than the local deadline can be: a deadline starts before its tick was sent,
 *     so it ends by `tickAt` + the lease (same host's wall clock; the deadline passes by the more
 *     pessimistic of the monotonic and the wall clock).
 * @param {Map<string, WorkerEvent[]>} byIncarnation @param {number} leaseMs
 * @param {boolean} requireSome a run without any leadership or work item has nothing to check, and fails
 */
function checkLoopCallbacks(byIncarnation, leaseMs, requireSome) {
  /** @type {string[]} */ const order = [];
  /** @type {string[]} */ const late = [];
  let leaderships = 0;
  let complete = 0;
  let open = 0;
  let items = 0;
  let jobs = 0;
  /** Least time left between a work item's start and its deadline bound. */
  let closest = Infinity;
  for (const [key, list] of byIncarnation) {
    const killed = !list.some((e) => e.ev === 'stopped');
    /** @type {Map<number, { ns: string | undefined, term: number, steps: WorkerEvent[] }>} */
    const byLid = new Map();
    /** @type {Map<string, number>} the last leadership started per namespace, until demoted */
    const current = new Map();
    for (const e of list) {
      if (LEADERSHIP_STEPS.includes(e.ev) && e.lid !== undefined) {
        const name = `worker ${key} ${e.ns === undefined ? '' : `${e.ns} `}term ${e.term} (leadership ${e.lid})`;
        let l = byLid.get(e.lid);
        if (!l) {
          byLid.set(e.lid, (l = { ns: e.ns, term: e.term, steps: [] }));
          if (e.ev !== 'cb-started') order.push(`${name}: ${STEP_NAMES[e.ev]} before onStartedLeading`);
        } else if (l.term !== e.term || l.ns !== e.ns) {
          order.push(`${name}: ${STEP_NAMES[e.ev]} names another lease than its onStartedLeading (${l.ns ?? ''} term ${l.term})`);
        }
        const shouldBeAborted = e.ev === 'cb-stopped' || e.ev === 'demoted';
        if (e.aborted !== shouldBeAborted) order.push(`${name}: signal ${e.aborted ? 'aborted' : 'not aborted'} at ${STEP_NAMES[e.ev]}`);
        const nsKey = String(e.ns);
        if (e.ev === 'cb-started') {
          const before = current.get(nsKey);
          if (before !== undefined && before !== e.lid) order.push(`${name}: onStartedLeading before leadership ${before} of its namespace was demoted`);
          current.set(nsKey, e.lid);
        } else if (e.ev === 'demoted' && current.get(nsKey) === e.lid) {
          current.delete(nsKey);
        }
        l.steps.push(e);
      } else if (e.ev === 'work') {
        items++;
        if (e.what === 'job') jobs++;
        const name = `worker ${key} ${e.what ?? 'work'} ${e.ns === undefined ? '' : `${e.ns} `}term ${e.term} (leadership ${e.lid}) at ${e.t}`;
        const l = byLid.get(e.lid);
        if (!l) late.push(`${name}: its lease was never started (no onStartedLeading before it)`);
        else if (l.term !== e.term) late.push(`${name}: the lease is of term ${l.term}`);
        if (e.aborted) late.push(`${name}: started with its lease's signal aborted`);
        const stopped = l?.steps.find((x) => x.ev === 'cb-stopped');
        if (stopped) late.push(`${name}: started ${e.t - stopped.t} ms after its onStoppedLeading`);
        const bound = Number(e.tickAt) + leaseMs;
        if (!e.tickAt) late.push(`${name}: started before any successful tick of its loop`);
        else if (e.t > bound + INSTANT_TOLERANCE_MS) late.push(`${name}: started ${e.t - bound} ms after its local deadline could last (last successful tick at ${e.tickAt} + lease ${leaseMs} ms)`);
        else closest = Math.min(closest, bound - e.t);
      }
    }
    for (const [lid, l] of byLid) {
      leaderships++;
      const seen = l.steps.map((e) => e.ev);
      const name = `worker ${key} ${l.ns === undefined ? '' : `${l.ns} `}term ${l.term} (leadership ${lid})`;
      const prefix = LEADERSHIP_STEPS.slice(0, seen.length);
      if (seen.join() === LEADERSHIP_STEPS.join()) complete++;
      else if (killed && seen.length < LEADERSHIP_STEPS.length && seen.join() === prefix.join()) open++;
      else order.push(`${name}: ${seen.map((ev) => STEP_NAMES[ev]).join(', ')}${killed ? '' : ' (its process stopped cleanly)'}`);
    }
  }
  if (requireSome && leaderships === 0) order.push('no leadership was recorded: nothing to check');
  if (requireSome && items === 0) late.push('no leader work item was recorded: nothing to check');
  return {
    order,
    late,
    orderDetail: `${leaderships} leaderships recorded: ${complete} complete, ${open} cut short by a kill`,
    lateDetail: `${items} leader work items (${jobs} scheduled jobs); the closest started ${Number.isFinite(closest) ? Math.round(closest) : '-'} ms before its deadline bound`,
    stats: { loopLeaderships: leaderships, loopLeadershipsComplete: complete, loopLeadershipsKilled: open, workItems: items, workClosestToDeadlineMs: Number.isFinite(closest) ? Math.round(closest) : null },
  };
}

/**
 * Checks (h)–(l).
 * @param {Parameters<typeof check>[0]} input
 * @param {{ ledger: LedgerRow[], grants: LedgerRow[], candidateOf: Map<string, string>, byIncarnation: Map<string, WorkerEvent[]>,
 *   add: (id: string, name: string, violations: string[], detail: string) => void }} context
 */
function checkHistoryAndObservers(input, { ledger, grants, candidateOf, byIncarnation, add }) {
  const { events, faults, leaseMs, clockToleranceMs } = input;
  const settings = input.settings ?? [];
  /** @type {Map<string, { slot: number, incarnation: number, key: string }>} */
  const workerOf = new Map();
  for (const [key, id] of candidateOf) {
    const [slot, incarnation] = key.split('/').map(Number);
    workerOf.set(id, { slot, incarnation, key });
  }
  const settingOf = (/** @type {string | null} */ id) => {
    const w = id === null ? undefined : workerOf.get(id);
    return w ? settings.find((s) => s.slot === w.slot) ?? { slot: w.slot, priority: 0, eligible: true } : undefined;
  };
  const topPriority = Math.max(...(settings.length ? settings : [{ priority: 0, eligible: true }]).filter((s) => s.eligible).map((s) => s.priority));
  /** @type {Record<string, number>} */
  const stats = {};

  // (h) the history against the ledger.
  if (input.history) {
    const history = [...input.history].sort((x, y) => x.term - y.term);
    /** @type {string[]} */ const v = [];
    history.forEach((h, i) => {
      if (h.term !== i + 1) v.push(`history row ${i + 1} is term ${h.term} (terms must be 1..n)`);
    });
    for (let i = 1; i < history.length; i++) {
      const [prev, next] = [history[i - 1], history[i]];
      if (prev.endedAt === null) v.push(`term ${prev.term} is still open while term ${next.term} exists`);
      else if (prev.endedAt > next.acquiredAt) v.push(`term ${prev.term} ended ${prev.endedAt - next.acquiredAt} ms after term ${next.term} was acquired`);
    }
    for (const h of history) {
      if (h.endedAt !== null && h.endedAt < h.acquiredAt) v.push(`term ${h.term} ended before it was acquired`);
      if ((h.endedAt === null) !== (h.endReason === null)) v.push(`term ${h.term}: ended_at ${h.endedAt} with end_reason ${h.endReason}`);
      if (h.endReason !== null && h.endReason !== 'expired' && !VACATE_END_REASONS.includes(h.endReason)) v.push(`term ${h.term}: end_reason ${h.endReason}`);
    }
    const byTerm = new Map(history.map((h) => [h.term, h]));
    for (const g of grants) {
      const h = byTerm.get(g.term);
      if (!h) v.push(`term ${g.term} was granted to ${g.holder} (ledger #${g.id}) but has no history row`);
      else if (h.leaderId !== g.holder) v.push(`term ${g.term}: the ledger granted it to ${g.holder}, the history names ${h.leaderId}`);
    }
    for (const h of history) if (!grants.some((g) => g.term === h.term)) v.push(`history term ${h.term} (${h.leaderId}) was never granted in the ledger`);

    // How each term ended, by the ledger: vacated while its lease was live, or lapsed.
    let handOvers = 0;
    let expired = 0;
    /** The end of each ended term's last lease, before any vacate (what (j) compares watchers with). */
    /** @type {Map<number, number>} */ const leaseEnds = new Map();
    for (const g of grants) {
      const h = byTerm.get(g.term);
      if (!h || h.endedAt === null) continue;
      const rows = ledger.filter((r) => r.term === g.term && (r.kind === 'renew' || r.kind === 'vacate' || r.kind === 'grant'));
      let leaseUntil = Number(g.leaseUntil);
      /** @type {LedgerRow | undefined} */ let vacate;
      for (const r of rows) {
        if (r.kind === 'vacate') {
          vacate = r;
          break;
        }
        if (r.kind === 'renew' && r.holder === g.holder) leaseUntil = Number(r.leaseUntil);
      }
      leaseEnds.set(g.term, leaseUntil);
      const vacatedInTime = vacate !== undefined && vacate.at <= leaseUntil + clockToleranceMs;
      const holder = workerOf.get(String(g.holder));
      const reports = holder ? (byIncarnation.get(holder.key) ?? []).filter((e) => e.ev === 'demoted' && e.term === g.term).map((e) => e.reason) : [];
      if (h.endReason === 'handed-over') handOvers++;
      if (h.endReason === 'expired') expired++;
      if (!vacatedInTime) {
        if (h.endReason !== 'expired') v.push(`term ${g.term}: its lease lapsed at ${Math.round(leaseUntil)} without a vacate, the history says ${h.endReason}`);
        else if (Math.abs(h.endedAt - leaseUntil) > INSTANT_TOLERANCE_MS) v.push(`term ${g.term} expired: ended_at is ${Math.round(h.endedAt - leaseUntil)} ms off its lease's end`);
        continue;
      }
      const vacatedAt = /** @type {LedgerRow} */ (vacate).at;
      if (h.endReason === 'expired') v.push(`term ${g.term} was vacated ${Math.round(leaseUntil - vacatedAt)} ms before its lease ended, the history says expired`);
      else if (h.endedAt > vacatedAt + clockToleranceMs || h.endedAt < h.acquiredAt) v.push(`term ${g.term}: ended_at ${h.endedAt} is not the vacate at ${Math.round(vacatedAt)}`);
      // The harness never calls resign: a vacate is a hand-over or a stop's unregister.
      // What the holder reported names the reason: a hand-over, or stop() (which unregisters).
      const expected = reports.flatMap((r) => (r === 'handed-over' ? ['handed-over'] : r === 'stopped' ? ['unregistered'] : []));
      if (h.endReason === 'resigned') v.push(`term ${g.term}: ended as resigned, but no worker resigns`);
      else if (expected.length && !expected.includes(/** @type {string} */ (h.endReason))) v.push(`term ${g.term}: its holder reported ${reports.join(', ')}, the history says ${h.endReason}`);
      if (h.endReason === 'handed-over' && !input.balance) {
        const s = settingOf(String(g.holder));
        if (s && s.eligible && s.priority >= topPriority) v.push(`term ${g.term} was handed over by ${g.holder} (priority ${s.priority}), which no eligible worker outranks`);
      }
    }
    Object.assign(stats, { historyRows: history.length, handOvers, expiredTerms: expired });
    add('h', 'the history is the ledger\'s terms: 1..n, same leaders, no overlap, end reasons as observed', v, `${history.length} history rows: ${handOvers} handed-over, ${expired} expired, ${history.filter((h) => h.endReason === 'unregistered').length} unregistered`);

    // (i) fenced-off attempts are attributable.
    /** @type {string[]} */ const unattributable = [];
    const fenced = events.filter((e) => e.ev === 'action-fenced');
    for (const e of fenced) {
      const id = candidateOf.get(`${e.slot}/${e.incarnation}`);
      const h = byTerm.get(e.term);
      if (!h || h.leaderId !== id) unattributable.push(`worker ${e.slot}/${e.incarnation} (${id}) was fenced off under term ${e.term}, which the history gives to ${h ? h.leaderId : 'nobody'}`);
    }
    if (fenced.length === 0 && (input.expectStalls ?? []).includes('before-fence')) unattributable.push('no write was fenced off, though a stall before assertLeader was expected: nothing to check');
    add('i', 'every fenced-off write was attempted under a (term, candidate) of the history', unattributable, `${fenced.length} stale writes rejected by assertLeader`);
    stats.staleRejected = fenced.length;

    // (j) the observers.
    // A lease may lapse while its holder's renewal transaction is open, the row locked (a tick
    // slowed past the lease end, or a client frozen between the renewal's UPDATE and its COMMIT):
    // readers see the lease expired, so watchers report the vacancy at the lease's end; then the
    // renewal commits under the same term, nobody else having been able to take the lease, and
    // the history ends the term later, at the renewed lease's end or by a later vacate. The holder
    // shows it: its local deadline (which starts before the renewal was sent) demoted it, reported
    // no earlier than a lease before the vacancy and, when its process was frozen, late. Then
    // either its tick's answer came in time and it was elected again under that term, or the
    // renewed lease ran out with nobody leading (the history says expired), or the renewal's
    // answer told it to give the lease up (a preferred candidate had appeared) and it vacated it:
    // the history ends the term at that vacate, and the worker's tick that renewed was in flight
    // across the lease's end (sent before it, answered after the demotion). Only then may a
    // watcher's end of a term precede the history's.
    const renewalAcross = (/** @type {WorkerEvent} */ d, /** @type {number} */ at) =>
      events.some((e) => e.ev === 'tick' && e.slot === d.slot && e.incarnation === d.incarnation && !e.failed && e.t >= d.t && e.t - Number(e.ms) <= at);
    const lapsedAndRenewed = (/** @type {HistoryRow} */ h, /** @type {number} */ at) =>
      h.endedAt !== null &&
      at < h.endedAt &&
      events.some(
        (d) =>
          d.ev === 'demoted' && d.term === h.term && d.reason === 'lease-expired-locally' && candidateOf.get(`${d.slot}/${d.incarnation}`) === h.leaderId &&
          d.t >= at - leaseMs &&
          (h.endReason === 'expired' ||
            events.some((e) => e.ev === 'elected' && e.term === h.term && e.slot === d.slot && e.incarnation === d.incarnation && e.t > d.t) ||
            (VACATE_END_REASONS.includes(String(h.endReason)) && renewalAcross(d, at))),
      );
    // A vacate (a hand-over, a stop's unregister) decided while the lease was live, whose
    // transaction committed only after the lease's end: readers saw the lease lapse before they
    // saw the vacate, so a watcher dates the vacancy at the lease's end, later than the history
    // (which dates the vacate's own statement). Seen beside two busy loops: an unregister decided
    // 15 ms before its lease's end, committed after it.
    const lapsedBeforeVacateCommitted = (/** @type {HistoryRow} */ h, /** @type {number} */ at) =>
      h.endedAt !== null && h.endReason !== 'expired' && at > h.endedAt && Math.abs(at - (leaseEnds.get(h.term) ?? Number.NaN)) <= INSTANT_TOLERANCE_MS;
    if (input.watches) {
      /** @type {string[]} */ const w = [...(input.watchFailures ?? [])];
      const key = (/** @type {WatchChange} */ c) => (c.term === null ? -1 : 2 * c.term + (c.leaderId === null ? 1 : 0));
      const show = (/** @type {WatchChange} */ c) => `(${c.leaderId ?? 'vacant'}, ${c.term ?? '-'})`;
      for (const watcher of input.watches) {
        const changes = watcher.changes;
        for (let i = 1; i < changes.length; i++) {
          if (key(changes[i]) <= key(changes[i - 1])) w.push(`${watcher.name}: ${show(changes[i])} after ${show(changes[i - 1])}`);
        }
        for (const h of history) {
          const lead = changes.find((c) => c.term === h.term && c.leaderId !== null);
          if (!lead) w.push(`${watcher.name} never saw term ${h.term} (${h.leaderId})`);
          else if (lead.leaderId !== h.leaderId) w.push(`${watcher.name} saw term ${h.term} held by ${lead.leaderId}, the history says ${h.leaderId}`);
          else if (Math.abs(lead.at - h.acquiredAt) > INSTANT_TOLERANCE_MS) w.push(`${watcher.name} dates term ${h.term} at ${lead.at}, the history at ${h.acquiredAt}`);
          const vacancy = changes.find((c) => c.term === h.term && c.leaderId === null);
          if (h.endedAt === null) continue;
          if (!vacancy) w.push(`${watcher.name} never saw the vacancy after term ${h.term}`);
          else if (Math.abs(vacancy.at - h.endedAt) > INSTANT_TOLERANCE_MS && !lapsedAndRenewed(h, vacancy.at) && !lapsedBeforeVacateCommitted(h, vacancy.at)) {
            w.push(`${watcher.name} dates the end of term ${h.term} at ${vacancy.at}, the history at ${h.endedAt}`);
          }
        }
        for (const c of changes) if (c.term !== null && !byTerm.has(c.term)) w.push(`${watcher.name} saw term ${c.term}, which the history lacks`);
      }
      const states = input.watches.map((x) => `${x.name}: ${x.changes.length} states, ${x.errors} read errors retried`);
      add('j', 'watch() saw every term and vacancy in order, never twice, dated as the history', w, states.join('; '));
    }
  }

  // (k) priorities and eligibility.
  if (input.settings) {
    /** @type {string[]} */ const p = [];
    for (const g of grants) {
      const s = settingOf(String(g.holder));
      if (s && !s.eligible) p.push(`ineligible worker ${s.slot} (${g.holder}) was granted term ${g.term}`);
    }
    for (const h of input.history ?? []) {
      const s = settingOf(h.leaderId);
      if (s && !s.eligible) p.push(`the history has ineligible worker ${s.slot} (${h.leaderId}) leading term ${h.term}`);
    }
    for (const e of events) {
      const s = settings.find((x) => x.slot === e.slot);
      if (e.ev === 'elected' && s && !s.eligible) p.push(`ineligible worker ${e.slot}/${e.incarnation} reports being elected for term ${e.term}`);
    }
    const final = input.final;
    let detail = 'no final reading (interrupted run)';
    if (final) {
      const s = settingOf(final.leaderId);
      const where = `at the end of the quiet tail (${input.settleMs ?? '?'} ms after the last fault)`;
      if (!final.live || final.leaderId === null) p.push(`nobody held a live lease ${where}`);
      else if (!s || !final.current.includes(final.leaderId)) p.push(`the leader ${final.leaderId} ${where} is no running worker`);
      else if (!s.eligible || s.priority !== topPriority) p.push(`the leader ${where} is worker ${s.slot} (priority ${s.priority}${s.eligible ? '' : ', ineligible'}), not one of the highest eligible priority ${topPriority}`);
      const lastGrant = grants.filter((g) => g.term === final.term)[0];
      // Negative: the final term began before the last fault ended (that fault did not touch it).
      if (lastGrant && input.lastFaultEnd !== undefined) stats.settledAfterMs = Math.round(lastGrant.at - input.lastFaultEnd);
      const settled = stats.settledAfterMs === undefined ? '' : stats.settledAfterMs >= 0 ? `; its term began ${stats.settledAfterMs} ms after the last fault ended` : '; it held the lease through the last fault';
      detail = `final leader: worker ${s?.slot ?? '?'} (term ${final.term}, priority ${s?.priority ?? '?'}), highest eligible priority ${topPriority}${settled}`;
    }
    add('k', 'ineligible workers never lead; after the faults, a top-priority eligible worker leads', p, detail);
  }

  // (l) the workers' own reports: no two leaderships at once.
  /** @type {{ key: string, slot: number, term: number, start: number, end: number }[]} */
  const spans = [];
  for (const [key, list] of byIncarnation) {
    const slot = list[0].slot;
    const id = candidateOf.get(key);
    for (let i = 0; i < list.length; i++) {
      const e = list[i];
      if (e.ev !== 'elected') continue;
      // No report of its end: it led until its next report, or until the run stopped.
      const next = list.slice(i + 1).find((x) => x.ev === 'demoted' || x.ev === 'elected');
      let end = next ? next.t : input.stopAt;
      // A process that cannot run (paused, stalled, killed, blocked in a synchronous driver call)
      // cannot report, but its leadership ended by its local deadline, which is never later than
      // the database lease of its last renewal.
      const leases = ledger.filter((r) => (r.kind === 'grant' || r.kind === 'renew') && r.term === e.term && r.holder === id && r.at <= end + clockToleranceMs);
      if (leases.length) end = Math.min(end, Math.max(...leases.map((r) => Number(r.leaseUntil))));
      spans.push({ key, slot, term: e.term, start: e.t, end });
    }
  }
  spans.sort((x, y) => x.start - y.start);
  /** @type {string[]} */ const twoLeaders = [];
  for (let i = 0; i < spans.length; i++) {
    for (let j = i + 1; j < spans.length && spans[j].start < spans[i].end; j++) {
      if (spans[j].key === spans[i].key) continue;
      const overlap = Math.min(spans[i].end, spans[j].end) - spans[j].start;
      if (overlap > clockToleranceMs) {
        twoLeaders.push(`workers ${spans[i].key} (term ${spans[i].term}) and ${spans[j].key} (term ${spans[j].term}) both reported leading for ${Math.round(overlap)} ms`);
      }
    }
  }
  add('l', 'no two workers report leading at once', twoLeaders, `${spans.length} reported leaderships, each ending at its 'demoted' report or its last lease, whichever is first`);
  return stats;
}

/** Numeric stats that add up over namespaces (the rest: the largest, or the first namespace's). */
const ADDITIVE = ['grants', 'writes', 'staleWrites', 'lateWrites', 'actions', 'fenced', 'actionErrors', 'pausedStarts', 'demotions', 'sameTermReelections', 'historyRows', 'handOvers', 'expiredTerms', 'staleRejected',
  'judgedActions', 'stallsBeforeFenceFenced', 'stallsInFenceCommitted', 'claims', 'reclaims', 'slots', 'doneSlots', 'jobRows', 'runRows', 'failedSlots', 'missedSlots',
  'abandonedSlots', 'skippedSlots', 'runningSlots', 'loopLeaderships', 'loopLeadershipsComplete', 'loopLeadershipsKilled', 'workItems'];

/**
 * Group mode: {@link check} per namespace, merged — a check passes only if it passes for every
 * namespace, and each violation names its namespace — plus (m). Worker events that carry an `ns`
 * belong to that namespace; the others (start, errors, crashes) to all of them.
 * @param {Omit<Parameters<typeof check>[0], 'ns' | 'history' | 'final'> & { namespaces: string[],
 *   histories?: Record<string, HistoryRow[]>, finals?: Record<string, FinalLeader> }} input
 *   `watches` are of the first namespace.
 */
function checkGroup(input) {
  const { namespaces, histories, finals, ...rest } = input;
  const known = new Set(namespaces);
  const perNs = namespaces.map((ns, i) => ({
    ns,
    result: check({
      ...rest,
      ns,
      events: input.events.filter((e) => e.ns === undefined || e.ns === ns),
      history: histories?.[ns],
      final: finals?.[ns],
      watches: i === 0 ? input.watches : undefined,
      watchFailures: i === 0 ? input.watchFailures : undefined,
      requireWrites: false,
      requireSecondTerm: false,
      expectStalls: undefined,
    }),
  }));
  /** @type {Map<string, Check>} */
  const merged = new Map();
  /** @type {Map<string, number>} */
  const failing = new Map();
  for (const { ns, result } of perNs) {
    for (const c of result.checks) {
      const m = merged.get(c.id) ?? { id: c.id, name: c.name, ok: true, detail: '', violations: [] };
      if (!c.ok) {
        m.ok = false;
        failing.set(c.id, (failing.get(c.id) ?? 0) + 1);
        for (const v of c.violations) if (m.violations.length < 20) m.violations.push(`${ns}: ${v}`);
      }
      if (!m.detail) m.detail = `${ns}: ${c.detail}`;
      merged.set(c.id, m);
    }
  }
  for (const m of merged.values()) {
    m.name = `${m.name} (per namespace)`;
    m.detail = `${namespaces.length - (failing.get(m.id) ?? 0)} of ${namespaces.length} namespaces pass; ${m.detail}`;
  }

  // (e) over all namespaces: the run did work.
  const writes = input.ledger.filter((r) => r.kind === 'write');
  const e = merged.get('e');
  if (e && writes.length === 0) {
    e.ok = false;
    e.violations.push('no fenced write committed in any namespace: the run proves nothing');
  }
  // (c), (f), (i) over all namespaces: something was there to check.
  const sum = (/** @type {string} */ key) => perNs.reduce((n, { result }) => n + Number(result.stats[key] ?? 0), 0);
  /** @type {Array<[string, boolean, string]>} */
  const required = [
    ['c', input.requireSecondTerm !== false && sum('judgedActions') === 0, 'no namespace had an action of a term that a later term followed: nothing to check'],
    ...(input.expectStalls ?? []).map((where) => /** @type {[string, boolean, string]} */ ([
      'f',
      sum(where === 'before-fence' ? 'stallsBeforeFenceFenced' : 'stallsInFenceCommitted') === 0,
      `no stall ${where} ended as expected (${where === 'before-fence' ? 'fenced off' : 'committed'}) in any namespace: nothing to check`,
    ])),
    ['i', Boolean(input.histories) && (input.expectStalls ?? []).includes('before-fence') && sum('staleRejected') === 0, 'no write was fenced off in any namespace, though a stall before assertLeader was expected'],
    ['r', Boolean(input.scheduled) && sum('claims') === 0, 'no slot was claimed in any namespace: nothing to check'],
    ['n', Boolean(input.loopCallbacks) && sum('loopLeaderships') === 0, 'no leadership was recorded in any namespace: nothing to check'],
    ['o', Boolean(input.loopCallbacks) && sum('workItems') === 0, 'no leader work item was recorded in any namespace: nothing to check'],
  ];
  for (const [id, missing, violation] of required) {
    const m = merged.get(id);
    if (m && missing) {
      m.ok = false;
      m.violations.push(violation);
    }
  }

  // (m) no (namespace, term) held by two workers; no write outside the group.
  /** @type {string[]} */ const twice = [];
  /** @type {Map<string, Set<string>>} */ const holders = new Map();
  const hold = (/** @type {string} */ ns, /** @type {number} */ term, /** @type {string | undefined | null} */ id, /** @type {string} */ source) => {
    if (!id) return;
    const key = `${ns}#${term}`;
    const set = holders.get(key) ?? new Set();
    if (!set.has(id) && set.size > 0) twice.push(`${ns} term ${term}: ${source} names ${id}, already held by ${[...set].join(', ')}`);
    set.add(id);
    holders.set(key, set);
  };
  /** @type {Map<string, string>} */ const candidateOf = new Map();
  for (const ev of input.events) if (ev.ev === 'start') candidateOf.set(`${ev.slot}/${ev.incarnation}`, ev.candidateId);
  for (const g of input.ledger) if (g.kind === 'grant') hold(g.ns, g.term, g.holder, `ledger grant #${g.id}`);
  for (const ev of input.events) {
    if (ev.ev === 'elected' && ev.ns !== undefined) hold(ev.ns, ev.term, candidateOf.get(`${ev.slot}/${ev.incarnation}`), `worker ${ev.slot}/${ev.incarnation}'s 'elected'`);
  }
  for (const [ns, rows] of Object.entries(histories ?? {})) for (const h of rows) hold(ns, h.term, h.leaderId, 'the history');
  for (const r of input.ledger) if (!known.has(r.ns)) twice.push(`ledger #${r.id}: ${r.kind} in namespace ${r.ns}, which is not one of the group's`);
  const staleByNs = perNs.filter(({ result }) => result.checks.some((c) => c.id === 'a' && !c.ok)).map(({ ns }) => ns);
  merged.set('m', {
    id: 'm',
    name: 'no term of any namespace held by two workers; writes only to the group\'s namespaces',
    ok: twice.length === 0,
    detail: `${holders.size} (namespace, term) pairs over ${namespaces.length} namespaces; namespaces with stale writes: ${staleByNs.length ? staleByNs.join(', ') : 'none'}`,
    violations: twice.slice(0, 20),
  });

  const checks = [...merged.values()].sort((x, y) => x.id.localeCompare(y.id));
  const first = perNs[0]?.result;
  /** @type {Record<string, any>} */
  const stats = { ...(first?.stats ?? {}), namespaces: namespaces.length };
  for (const key of ADDITIVE) {
    if (perNs.some(({ result }) => typeof result.stats[key] === 'number')) stats[key] = perNs.reduce((sum, { result }) => sum + Number(result.stats[key] ?? 0), 0);
  }
  stats.maxGapMs = Math.max(0, ...perNs.map(({ result }) => result.stats.maxGapMs));
  stats.maxQuietGapMs = Math.max(0, ...perNs.map(({ result }) => result.stats.maxQuietGapMs));
  stats.stalls = input.events.filter((x) => x.ev === 'stall').length;
  stats.tickErrors = input.events.filter((x) => x.ev === 'error').length;
  stats.staleWritesByNamespace = Object.fromEntries(perNs.map(({ ns, result }) => [ns, result.stats.staleWrites]));
  return {
    ok: checks.every((c) => c.ok),
    checks,
    // The picture shows the first namespace.
    leaderships: first?.leaderships ?? [],
    gaps: first?.gaps ?? [],
    candidateOf: first?.candidateOf ?? {},
    stats,
  };
}

module.exports = { OUTCOMES, check, checkGroup, checkLoopCallbacks };
