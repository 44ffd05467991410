// @ts-check
'use strict';
/**
 * The sequential specification the linearizability checker (linearizability.js) holds a history
 * to: one lease register per namespace, as the database keeps it in the leader row.
 *
 * State: `term` (0 before the first grant), `holder` (candidate id, or null once vacated), the end
 * of the lease by the database clock — known up to an interval `[leaseLo, leaseHi]`, because
 * clocks are read with a tolerance and some effects are known only to within their call — and
 * three clocks of the linearization: `now`, the time of the last linearization point (points never
 * go back); `lockFloor`, when the last operation that locks the leader row (an acquisition, renewal
 * or vacate; a fenced write, which holds a share lock until it commits) released it; and
 * `exclusiveFloor`, when the last one that locks it exclusively (an acquisition, renewal or vacate)
 * did — fences share their lock, so one waits for those only (a worker's fenced write and its
 * schedule's claim may both hold the row, and both commit after a stall that froze the process).
 *
 * Operations, each linearized at a point τ inside its window, in an order where τ never decreases:
 * - `lead` (an elect that answered "you lead term T"): decided at δ by the database clock, after
 *   the previous locking operation released the row (δ ≥ lockFloor). A renewal needs the caller to
 *   hold term T with its lease live at δ; an acquisition needs T = term + 1 and the lease vacated
 *   or ended (leaseEnd ≤ δ). The new lease ends at δ + lease. Its effect becomes visible at its
 *   commit, τ ≥ δ: readers without the lock may still see the old state in between — which is how
 *   a lease that lapsed while its holder's renewal waited on the row lock reads as vacant for a
 *   moment and then as renewed under the same term.
 * - `follow` (an elect that answered "L leads term T", or nobody): a read at its decision δ: term
 *   T, and L holding a live lease — or, for nobody, no holder or an ended lease.
 * - `read` (a watch event): the same observation somewhere in its window; a watcher's events are
 *   linearized in the order it yielded them.
 * - `write` (a fenced write that committed): assertLeader at a ≥ exclusiveFloor found the writer
 *   holding term t with a live lease, and the write commits at τ ≥ its insert's database time,
 *   still under term t and the same holder (the fence's share lock keeps the row unchanged).
 * - `claim` (a schedule's slot claimed under term t, its run row written inside the fence): as a
 *   `write` — the claimer holds term t with a live lease where it is linearized, so a slot claimed
 *   under term n after term n + 1 was granted has no linearization.
 * - `refused` (assertLeader threw NotLeaderError carrying the row's term and live leader): a locked
 *   read showing that term and leader, and never the writer holding its own term live.
 * - `vacate` (a hand-over or stop): the holder gives the lease up; the term stays.
 * - `maybe-elect`, `maybe-vacate`: calls whose outcome nobody saw (an elect that failed or was in
 *   flight when its process died, a group tick's namespaces, a vacate attempt): they may have had
 *   their effect somewhere in their window, or none — the search decides.
 */

/**
 * @typedef {{ term: number, holder: string | null, leaseLo: number, leaseHi: number, now: number, lockFloor: number, exclusiveFloor: number }} State
 * @typedef {'lead' | 'follow' | 'read' | 'write' | 'claim' | 'refused' | 'vacate' | 'maybe-elect' | 'maybe-vacate'} Kind
 * @typedef {{
 *   index: number, label: string, process: string, caller: string, ns: string, kind: Kind, optional: boolean,
 *   inv: number, ret: number, lo: number, hi: number, dLo: number, dHi: number, dAt?: number, after: number,
 *   term: number, leaderId: string | null, acquired?: boolean, leaseLo?: number, leaseHi?: number,
 *   insertLo?: number, insertHi?: number, writeTerm?: number
 * }} Op
 *   Times in epoch ms; `lo`/`hi` bound the linearization point, `dLo`/`dHi` the database's decision
 *   (both already widened by the tolerance), `dAt` the database clock reading the call was answered
 *   with; `leaseLo`/`leaseHi` a known lease end (else δ + lease); `insertLo`/`insertHi` the database
 *   time of a committed write's insert, inside its fence.
 * @typedef {{ leaseMs: number, toleranceMs: number, at: (t: number) => string, who: (id: string | null) => string }} ModelOptions
 *   `at` and `who` write times and candidates in reasons.
 */

/** @returns {State} */
function initialState() {
  return { term: 0, holder: null, leaseLo: -Infinity, leaseHi: -Infinity, now: -Infinity, lockFloor: -Infinity, exclusiveFloor: -Infinity };
}

/** @param {number} t @param {number} t0 */
function fmt(t, t0) {
  if (t === Infinity) return '∞';
  if (t === -Infinity) return '-∞';
  const s = (t - t0) / 1000;
  return `${s < 0 ? '-' : '+'}${Math.abs(s).toFixed(3)}s`;
}

/** @param {string | null} id */
function short(id) {
  return id === null ? 'nobody' : id.length > 12 ? id.slice(0, 8) : id;
}

/**
 * The states the register can be in after `op` is linearized next, from `s` (the earliest point
 * each allows: a later point is never needed, since nothing but `now` depends on it); with none, the
 * reason.
 * @param {State} s @param {Op} op @param {ModelOptions} m
 * @returns {{ next: State[], reason?: string }}
 */
function step(s, op, m) {
  switch (op.kind) {
    case 'lead':
      return lead(s, op, m);
    case 'follow':
    case 'read':
      return observe(s, op, op.kind === 'follow' ? op.dLo : op.lo, op.kind === 'follow' ? op.dHi : op.hi, m);
    case 'write':
    case 'claim':
      return write(s, op, m);
    case 'refused':
      return refused(s, op, m);
    case 'vacate':
    case 'maybe-vacate':
      return vacate(s, op, m);
    case 'maybe-elect':
      return maybeElect(s, op, m);
    default:
      throw new Error(`lease model: unknown operation kind ${op.kind}`);
  }
}

const fail = (/** @type {string} */ reason) => ({ next: [], reason });

/** @param {State} s @param {Op} op @param {ModelOptions} m */
function lead(s, op, m) {
  const decided = Math.max(op.dLo, s.lockFloor);
  if (decided > op.dHi) return fail(`decided by ${m.at(op.dHi)} but the leader row was locked until ${m.at(s.lockFloor)}`);
  let at = decided;
  if (op.term === s.term && s.holder === op.caller) {
    if (op.acquired === true) return fail(`reported acquiring term ${op.term}, which it already held`);
    if (s.leaseHi <= decided) return fail(`renewed term ${op.term} at ${m.at(decided)}, after its lease ended at ${m.at(s.leaseHi)}`);
  } else if (op.term === s.term + 1) {
    if (op.acquired === false) return fail(`reported renewing term ${op.term}, which the register had not granted yet`);
    if (s.holder !== null) {
      at = Math.max(decided, s.leaseLo);
      if (at > op.dHi) return fail(`acquired term ${op.term} by ${m.at(op.dHi)}, while term ${s.term} of ${m.who(s.holder)} was live until ${m.at(s.leaseLo)}`);
    }
  } else {
    return fail(`was given term ${op.term}, but the register is at term ${s.term}${s.holder ? ` held by ${m.who(s.holder)}` : ''}`);
  }
  const point = Math.max(s.now, op.lo, at);
  if (point > op.hi) return fail(`its effect must be visible by ${m.at(op.hi)}, but the history is already at ${m.at(point)}`);
  const leaseLo = op.leaseLo ?? at + m.leaseMs - m.toleranceMs;
  const leaseHi = op.leaseHi ?? op.dHi + m.leaseMs + m.toleranceMs;
  return { next: [{ term: op.term, holder: op.caller, leaseLo, leaseHi, now: point, lockFloor: point, exclusiveFloor: point }] };
}

/** A read of (leaderId, term) at a point in [lo, hi]. @param {State} s @param {Op} op @param {number} lo @param {number} hi @param {ModelOptions} m */
function observe(s, op, lo, hi, m) {
  if (op.term !== s.term) return fail(`saw term ${op.term}${op.leaderId ? ` held by ${m.who(op.leaderId)}` : ''}, but the register is at term ${s.term}`);
  let point = Math.max(s.now, lo);
  if (op.leaderId !== null) {
    if (s.holder !== op.leaderId) return fail(`saw ${m.who(op.leaderId)} leading term ${op.term}, but ${s.holder === null ? 'it was vacated' : `${m.who(s.holder)} holds it`}`);
    if (s.leaseHi <= point) return fail(`saw ${m.who(op.leaderId)} leading at ${m.at(point)} or later, but its lease ended at ${m.at(s.leaseHi)}`);
  } else if (s.holder !== null) {
    point = Math.max(point, s.leaseLo);
  }
  if (point > hi) return fail(op.leaderId === null ? `saw no leader by ${m.at(hi)}, but ${m.who(s.holder)} held term ${s.term} until ${m.at(s.leaseLo)}` : `had to be read by ${m.at(hi)}, but the history is already at ${m.at(point)}`);
  return { next: [{ ...s, now: point }] };
}

/** @param {State} s @param {Op} op @param {ModelOptions} m */
function write(s, op, m) {
  const asserted = Math.max(op.lo, s.exclusiveFloor);
  const assertBy = op.insertHi ?? op.hi;
  if (asserted > assertBy) return fail(`asserted by ${m.at(assertBy)}, but the leader row was locked until ${m.at(s.exclusiveFloor)}`);
  if (s.term !== op.writeTerm || s.holder !== op.caller) {
    return fail(`stale ${op.kind === 'claim' ? 'claim' : 'write'}: committed under term ${op.writeTerm}, but the register is at term ${s.term}${s.holder ? ` held by ${m.who(s.holder)}` : ', vacated'}`);
  }
  if (s.leaseHi <= asserted) return fail(`fenced at ${m.at(asserted)} or later, but the lease of term ${s.term} ended at ${m.at(s.leaseHi)}`);
  const point = Math.max(s.now, asserted, op.insertLo ?? -Infinity);
  if (point > op.hi) return fail(`had to commit by ${m.at(op.hi)}, but the history is already at ${m.at(point)}`);
  return { next: [{ ...s, now: point, lockFloor: point }] };
}

/** @param {State} s @param {Op} op @param {ModelOptions} m */
function refused(s, op, m) {
  if (op.leaderId === op.caller && op.term === op.writeTerm) return fail(`refused term ${op.writeTerm} while naming itself its live leader`);
  // assertLeader reads the row under its share lock: after the last exclusive lock was released.
  return observe(s, op, Math.max(op.lo, s.exclusiveFloor), op.hi, m);
}

/** @param {State} s @param {Op} op @param {ModelOptions} m */
function vacate(s, op, m) {
  if (s.holder !== op.caller) return fail(`vacated, but ${m.who(s.holder)} held term ${s.term}`);
  if (op.kind === 'vacate' && op.term > 0 && op.term !== s.term) return fail(`vacated term ${op.term}, but the register is at term ${s.term}`);
  if (op.kind === 'maybe-vacate') {
    // Taken loosely, like an unknown elect: it may have been decided before the last lock.
    const point = Math.max(s.now, op.dLo);
    return point > op.dHi ? fail('its window closed') : { next: [{ ...s, holder: null, now: point }] };
  }
  const decided = Math.max(op.dLo, s.lockFloor);
  if (decided > op.dHi) return fail(`decided by ${m.at(op.dHi)} but the leader row was locked until ${m.at(s.lockFloor)}`);
  const point = Math.max(s.now, op.lo, decided);
  if (point > op.hi) return fail(`had to be visible by ${m.at(op.hi)}, but the history is already at ${m.at(point)}`);
  return { next: [{ ...s, holder: null, now: point, lockFloor: point, exclusiveFloor: point }] };
}

/**
 * An elect whose answer nobody saw: a renewal, an acquisition, or (by not being linearized)
 * nothing. The search tries it only where nothing else can come next, which may be later than it
 * took effect: so its effect is taken as loosely as its window allows — a renewal only widens the
 * lease's possible end, an acquisition's lease may end as early as its window allows.
 * @param {State} s @param {Op} op @param {ModelOptions} m
 */
function maybeElect(s, op, m) {
  const point = Math.max(s.now, op.dLo);
  if (point > op.dHi) return fail('its window closed');
  /** @type {State[]} */
  const next = [];
  const leaseHi = op.dHi + m.leaseMs + m.toleranceMs;
  if (s.holder === op.caller && s.leaseHi > op.dLo) next.push({ ...s, leaseHi: Math.max(s.leaseHi, leaseHi), now: point });
  const free = s.holder === null ? point : Math.max(point, s.leaseLo);
  if (free <= op.dHi) {
    const earliest = Math.max(op.dLo, s.holder === null ? -Infinity : s.leaseLo);
    next.push({ term: s.term + 1, holder: op.caller, leaseLo: earliest + m.leaseMs - m.toleranceMs, leaseHi, now: free, lockFloor: s.lockFloor, exclusiveFloor: s.exclusiveFloor });
  }
  return next.length ? { next } : fail(`could neither renew nor acquire: term ${s.term} held by ${m.who(s.holder)}`);
}

module.exports = { initialState, step, fmt, short };
