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
 *     clock: the same host's clock, with `clockToleranceMs`);
 * (d) time without a leader (no unexpired lease) stays within the bound the faults explain:
 *     tick + slack, plus (duration + lease + tick) for each fault near the gap;
 * (e) the workers never crashed on their own nor let a rejection go unhandled;
 * (f) fencing at work: a leader stalled (event loop blocked) just before `assertLeader` for
 *     longer than its lease is fenced off (NotLeaderError); one stalled just after it still holds
 *     the fence, so nobody takes over and its write commits.
 */

/**
 * @typedef {import('./database').LedgerRow} LedgerRow
 * @typedef {{ t: number, ev: string, slot: number, incarnation: number, [k: string]: any }} WorkerEvent
 * @typedef {{ type: string, slot: number | null, start: number, end: number, detail?: string }} Fault
 * @typedef {{ term: number, holder: string, start: number, end: number, endedBy: 'expiry' | 'vacate' | 'next' | 'run-end' }} Leadership
 * @typedef {{ start: number, end: number, allowed: number, explainedBy: string[] }} Gap
 * @typedef {{ id: string, name: string, ok: boolean, detail: string, violations: string[] }} Check
 */

/**
 * @param {{ ledger: LedgerRow[], events: WorkerEvent[], faults: Fault[], ns: string, leaseMs: number, tickMaxMs: number,
 *   slackMs: number, clockToleranceMs: number, runStart: number, stopAt: number }} input
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
      // contract §2 keeps the term on renewal. Going back to an older term is never right.
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
  for (const action of actions) {
    const next = grants.find((g) => g.term > action.term);
    if (!next) continue;
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
  add(
    'c',
    'no action of a term starts after a later term began',
    lateActions,
    `${actions.length} actions (tolerance ${clockToleranceMs} ms); ${pausedStarts} started late only because their process was paused right after the leadership check`,
  );

  // (d) leaderless gaps.
  /** @type {Gap[]} */ const gaps = [];
  /** @type {string[]} */ const longGaps = [];
  const explain = (/** @type {number} */ start, /** @type {number} */ end) => {
    const near = faults.filter((f) => f.start <= end && f.end >= start - (leaseMs + tickMaxMs));
    const allowed = tickMaxMs + slackMs + near.reduce((sum, f) => sum + (f.end - f.start) + leaseMs + tickMaxMs, 0);
    return { allowed, explainedBy: near.map((f) => `${f.type}${f.slot === null ? '' : `@w${f.slot}`}`) };
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
  const maxGap = gaps.reduce((m, g) => Math.max(m, g.end - g.start), 0);
  const maxQuietGap = gaps.filter((g) => g.explainedBy.length === 0).reduce((m, g) => Math.max(m, g.end - g.start), 0);
  add('d', 'time without a leader within the faults\' bound', longGaps, `${gaps.length} gaps, longest ${Math.round(maxGap)} ms; bound tick ${tickMaxMs} + slack ${slackMs} ms + (duration + lease + tick) per nearby fault`);

  // (f) fencing, shown at work: a leader stalled before assertLeader for longer than its lease
  // must be fenced off; one stalled after it holds the fence's lock, so its write commits.
  /** @type {string[]} */ const fencing = [];
  const stalls = events.filter((e) => e.ev === 'stall');
  for (const stall of stalls) {
    const outcome = events.find(
      (e) => e.slot === stall.slot && e.incarnation === stall.incarnation && e.seq === stall.seq && ['action-commit', 'action-fenced', 'action-error'].includes(e.ev),
    );
    const expected = stall.where === 'before-fence' ? 'action-fenced' : 'action-commit';
    if (!outcome) continue; // the worker was stopped before the action ended (end of run)
    if (outcome.ev !== expected) {
      fencing.push(`worker ${stall.slot}/${stall.incarnation} stalled ${stall.where} (seq ${stall.seq}): ${outcome.ev}${outcome.message ? ` ${outcome.message}` : ''}, expected ${expected}`);
    }
  }
  add('f', 'stalled leaders: fenced off before the fence, committed inside it', fencing, `${stalls.filter((s) => s.where === 'before-fence').length} stalls before assertLeader, ${stalls.filter((s) => s.where === 'in-fence').length} inside the fence`);

  // (e) robustness and liveness sanity: a run that wrote nothing proves nothing.
  /** @type {string[]} */ const crashes = [];
  for (const e of events) {
    if (e.ev === 'unhandled-rejection' || e.ev === 'fatal') crashes.push(`worker ${e.slot}/${e.incarnation}: ${e.ev}: ${e.message}`);
  }
  const committed = events.filter((e) => e.ev === 'action-commit').length;
  if (writes.length === 0) crashes.push('no fenced write committed: the run proves nothing');
  if (committed > writes.length) crashes.push(`workers logged ${committed} commits, the ledger holds ${writes.length} writes`);
  add('e', 'no crash or unhandled rejection; work was done', crashes, `${committed} commits logged, ${writes.length} ledger writes`);

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
      lateWrites,
      actions: actions.length,
      fenced: count('action-fenced'),
      actionErrors: count('action-error'),
      tickErrors: count('error'),
      stalls: stalls.length,
      pausedStarts,
      demotions: count('demoted'),
      sameTermReelections: sameTermAgain,
      faults: faults.length,
      faultCounts,
      maxGapMs: Math.round(maxGap),
      /** Longest leaderless time with no fault nearby: how fast a follower notices an expired lease. */
      maxQuietGapMs: Math.round(maxQuietGap),
    },
  };
}

module.exports = { check };
