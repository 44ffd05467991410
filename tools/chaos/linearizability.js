// @ts-check
'use strict';
/**
 * Linearizability checker for the chaos runs: does a history of operations — each with the times
 * it was invoked and returned, and what it returned — admit a linearization against the lease
 * register (lease-model.js)? That is: an order of all operations, each taking effect at one point
 * inside its own interval, points never going back, in which every operation returns what the
 * register in that order would return.
 *
 * The search is Wing & Gong's with Lowe's just-in-time pruning, as in Porcupine: depth first over
 * the operations that may come next (an operation may come next only if no pending operation
 * returned before it was invoked), with a cache of (operations linearized, register state) that
 * were explored already. Namespaces are independent registers, so each is checked on its own
 * (P-compositionality). The search is bounded: a history it could not decide within the budget is
 * reported as `unknown`, never as linearizable.
 *
 * Clock assumptions: every process and the database server read one clock (one host); invocation
 * and return times are taken around each call, so the database's own readings in an answer
 * (an elect's `databaseNow`, a write's insert time) fall inside the call's interval. Times are
 * compared with a tolerance (`toleranceMs`, default 5 ms) for the rounding of each source and
 * the small gaps between statements of one call.
 *
 * The history format, one entry per operation (times in epoch ms; `returnAt` null: it never
 * returned, so its effect may come at any later time or never):
 *   { process, caller?, ns?, op: 'elect', invokeAt, returnAt,
 *     result: { isLeader, leaderId, term, acquired?, databaseNow?, decidedWithin?: [lo, hi], leaseEnd? } | null }
 *   (`databaseNow`: the database clock the call was answered with; `decidedWithin`: bounds on the
 *   moment the database decided when there is no exact reading — default: the call itself)
 *   { process, caller?, ns?, op: 'write', args: { term }, invokeAt, returnAt,
 *     result: { status: 'committed', at? } | { status: 'refused', term, leaderId } | null }
 *   { process, caller?, ns?, op: 'claim', args: { term, slot?, attempt? }, invokeAt, returnAt, result: { status: 'committed', at? } }
 *   (a schedule's slot claimed under `term`: fenced like a write; `at` the database time of its run row's write)
 *   { process, ns?, op: 'watch', invokeAt?, returnAt, result: { leaderId, term } }   (a process's watch events are in yield order)
 *   { process, caller?, ns?, op: 'vacate', invokeAt, returnAt, result: { term? } | null }
 * `caller` is the candidate id the process elects with (default: `process`). An elect with a null
 * result (it failed, or its process died) and a vacate with a null result may or may not have
 * taken effect. A write without a result had no effect the checker can know of: whether it
 * committed must be said by its result.
 *
 * `changes` (optional): the database's own log of lease changes ({ ns, kind: 'grant' | 'renew' |
 * 'vacate', term, holder, at, leaseUntil }, the chaos ledger's trigger rows). Used only to settle
 * what the callers could not see: which of the calls whose outcome is unknown took effect, and
 * when; and the exact end of each lease an answered elect granted. Every change must belong to a
 * call of its holder that was in flight then; one that does not is reported.
 */
const { initialState, step, fmt, short } = require('./lease-model');

/**
 * @typedef {import('./lease-model').Op} Op
 * @typedef {import('./lease-model').State} State
 * @typedef {{ process: string, caller?: string, ns?: string, op: 'elect' | 'write' | 'claim' | 'watch' | 'vacate', invokeAt?: number | null,
 *   returnAt?: number | null, args?: { term: number, slot?: string, attempt?: number }, result?: any }} Entry
 * @typedef {{ ns: string, kind: 'grant' | 'renew' | 'vacate', term: number, holder: string | null, at: number, leaseUntil: number | null }} Change
 * @typedef {{ leaseMs: number, toleranceMs?: number, changes?: Change[], maxNodes?: number, timeLimitMs?: number,
 *   names?: Record<string, string>, t0?: number }} Options
 *   `maxNodes`: search states per namespace before giving up (unknown); `timeLimitMs`: for the whole
 *   history; `names`: how to call candidate ids in reports; `t0`: reports give times relative to it.
 * @typedef {{ ns: string, verdict: 'ok' | 'violation' | 'unknown', ops: number, optional: number, nodes: number, ms: number, report?: string }} PartitionResult
 * @typedef {{ verdict: 'ok' | 'violation' | 'unknown', partitions: PartitionResult[], problems: string[], ops: number, ms: number, summary: string }} Result
 */

const DEFAULT_TOLERANCE_MS = 5;
const DEFAULT_MAX_NODES = 400_000;
const DEFAULT_TIME_LIMIT_MS = 60_000;

/**
 * Checks a history. `verdict` is 'ok' only when every namespace has a linearization.
 * @param {Entry[]} entries @param {Options} options @returns {Result}
 */
function checkHistory(entries, options) {
  const started = performance.now();
  const tolerance = options.toleranceMs ?? DEFAULT_TOLERANCE_MS;
  const t0 = options.t0 ?? entries.reduce((min, e) => Math.min(min, [e.invokeAt, e.returnAt].find((t) => typeof t === 'number' && Number.isFinite(t)) ?? Infinity), Infinity);
  const names = options.names ?? {};
  const who = (/** @type {string | null} */ id) => (id === null ? 'nobody' : names[id] ?? short(id));
  const at = (/** @type {number} */ t) => fmt(t, Number.isFinite(t0) ? t0 : 0);
  const model = { leaseMs: options.leaseMs, toleranceMs: tolerance, at, who };
  const { partitions, problems } = normalize(entries, options, model);
  /** @type {PartitionResult[]} */
  const results = [];
  const deadline = started + (options.timeLimitMs ?? DEFAULT_TIME_LIMIT_MS);
  for (const [ns, ops] of [...partitions].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))) {
    const begun = performance.now();
    const found = search(ops, model, { maxNodes: options.maxNodes ?? DEFAULT_MAX_NODES, deadline });
    results.push({
      ns,
      verdict: found.verdict,
      ops: ops.filter((o) => !o.optional).length,
      optional: ops.filter((o) => o.optional).length,
      nodes: found.nodes,
      ms: Math.round(performance.now() - begun),
      ...(found.verdict === 'ok' ? {} : { report: report(ns, ops, found, model) }),
    });
  }
  const verdict = problems.length || results.some((r) => r.verdict === 'violation') ? 'violation' : results.some((r) => r.verdict === 'unknown') ? 'unknown' : 'ok';
  const ops = results.reduce((n, r) => n + r.ops, 0);
  const ms = Math.round(performance.now() - started);
  const summary = `${verdict === 'ok' ? 'linearizable' : verdict === 'unknown' ? 'UNDECIDED (search budget exhausted)' : 'NOT linearizable'}: ${ops} operations in ${results.length} namespace(s), ${results.reduce((n, r) => n + r.nodes, 0)} search states, ${ms} ms`;
  return { verdict, partitions: results, problems, ops, ms, summary };
}

// ---- history → operations ----------------------------------------------------------------------

/**
 * @param {Entry[]} entries @param {Options} options @param {import('./lease-model').ModelOptions} model
 * @returns {{ partitions: Map<string, Op[]>, problems: string[] }}
 */
function normalize(entries, options, model) {
  const eps = model.toleranceMs;
  /** @type {string[]} */
  const problems = [];
  /** @type {Map<string, Op[]>} */
  const partitions = new Map();
  /** @type {Map<string, Op>} the last watch event of each watcher */
  const lastWatch = new Map();
  let counter = 0;
  const add = (/** @type {Omit<Op, 'index' | 'after'> & { after?: number }} */ op) => {
    const full = /** @type {Op} */ ({ after: -1, ...op, index: counter++ });
    if (!partitions.has(full.ns)) partitions.set(full.ns, []);
    /** @type {Op[]} */ (partitions.get(full.ns)).push(full);
    return full;
  };
  const widen = (/** @type {number | null | undefined} */ t, /** @type {number} */ fallback, /** @type {number} */ sign) => (t === null || t === undefined ? fallback : t + sign * eps);

  for (const e of entries) {
    const ns = e.ns ?? 'default';
    const caller = e.caller ?? e.process;
    const lo = widen(e.invokeAt, -Infinity, -1);
    const hi = widen(e.returnAt, Infinity, +1);
    const label = `${e.process} ${e.op}${e.op === 'write' && e.args ? ` (term ${e.args.term})` : ''} [${model.at(e.invokeAt ?? -Infinity)}, ${model.at(e.returnAt ?? Infinity)}]`;
    const base = { label, process: e.process, caller, ns, inv: e.invokeAt ?? -Infinity, ret: e.returnAt ?? Infinity, lo, hi, dLo: lo, dHi: hi, term: 0, leaderId: null };
    if (e.op === 'elect') {
      const r = e.result;
      if (!r) {
        add({ ...base, kind: 'maybe-elect', optional: true, label: `${label} → unknown` });
        continue;
      }
      // Without a clock reading the database decided somewhere inside the call.
      const [dFrom, dTo] = r.decidedWithin ?? (typeof r.databaseNow === 'number' ? [r.databaseNow, r.databaseNow] : [e.invokeAt ?? -Infinity, e.returnAt ?? Infinity]);
      const dLo = dFrom - eps;
      const dHi = dTo + eps;
      if (dHi < lo || dLo > hi) problems.push(`${label}: the database's clock (${model.at(dFrom)}) is outside the call — the clocks disagree beyond the tolerance of ${eps} ms`);
      const term = r.term ?? 0;
      const shown = r.isLeader ? `leads term ${term}${r.acquired === true ? ' (acquired)' : r.acquired === false ? ' (renewed)' : ''}` : `${model.who(r.leaderId ?? null)} leads term ${term}`;
      add({
        ...base,
        kind: r.isLeader ? 'lead' : 'follow',
        optional: false,
        label: `${label} → ${shown}${typeof r.databaseNow === 'number' ? ` at ${model.at(r.databaseNow)}` : ''}`,
        dLo: Math.max(dLo, lo),
        dHi: Math.min(dHi, hi),
        ...(typeof r.databaseNow === 'number' ? { dAt: r.databaseNow } : {}),
        term,
        leaderId: r.isLeader ? caller : r.leaderId ?? null,
        ...(r.acquired === undefined ? {} : { acquired: r.acquired }),
        ...(typeof r.leaseEnd === 'number' ? { leaseLo: r.leaseEnd - eps, leaseHi: r.leaseEnd + eps } : {}),
      });
    } else if (e.op === 'claim') {
      // A slot claimed in the database under the lease's term: a fenced write of the run row.
      const r = e.result;
      const a = /** @type {{ term: number, slot?: string, attempt?: number }} */ (e.args);
      if (r?.status !== 'committed') continue;
      const claimLabel = `${e.process} claim of slot ${a.slot ?? '?'}, attempt ${a.attempt ?? '?'} (term ${a.term}) [${model.at(e.invokeAt ?? -Infinity)}, ${model.at(e.returnAt ?? Infinity)}]`;
      const insert = typeof r.at === 'number' ? { insertLo: r.at - eps, insertHi: r.at + eps } : {};
      add({ ...base, kind: 'claim', optional: false, writeTerm: a.term, label: `${claimLabel} → claimed${typeof r.at === 'number' ? ` at ${model.at(r.at)}` : ''}`, ...insert });
    } else if (e.op === 'write') {
      const r = e.result;
      const writeTerm = /** @type {{ term: number }} */ (e.args).term;
      if (r?.status === 'committed') {
        const insert = typeof r.at === 'number' ? { insertLo: r.at - eps, insertHi: r.at + eps } : {};
        add({ ...base, kind: 'write', optional: false, writeTerm, label: `${label} → committed${typeof r.at === 'number' ? ` (inserted at ${model.at(r.at)})` : ''}`, ...insert });
      } else if (r?.status === 'refused') {
        add({ ...base, kind: 'refused', optional: false, writeTerm, term: r.term ?? 0, leaderId: r.leaderId ?? null, label: `${label} → refused: term ${r.term ?? 0}, leader ${model.who(r.leaderId ?? null)}` });
      }
      // Without a result the write had no effect the checker knows of.
    } else if (e.op === 'watch') {
      const r = e.result;
      const key = `${ns}\u0000${e.process}`;
      const previous = lastWatch.get(key);
      const op = add({
        ...base,
        kind: 'read',
        optional: false,
        term: r.term ?? 0,
        leaderId: r.leaderId ?? null,
        label: `${e.process} watch [by ${model.at(e.returnAt ?? Infinity)}] → ${r.leaderId === null ? 'no leader' : model.who(r.leaderId)}, term ${r.term ?? 0}`,
        ...(previous ? { after: previous.index } : {}),
      });
      lastWatch.set(key, op);
    } else if (e.op === 'vacate') {
      const r = e.result;
      if (r) add({ ...base, kind: 'vacate', optional: false, term: r.term ?? 0, label: `${label} → vacated` });
      else add({ ...base, kind: 'maybe-vacate', optional: true, label: `${label} → unknown` });
    } else {
      throw new Error(`linearizability: unknown operation ${/** @type {any} */ (e).op}`);
    }
  }
  if (options.changes) resolve(partitions, options.changes, eps, model, problems);
  return { partitions, problems };
}

/**
 * Settles the unknown outcomes by the database's log of lease changes. First each answered call
 * that changed the lease claims its change — the one of its caller, term and kind logged inside
 * its call nearest to the clock reading it was answered with (its exact lease end is then
 * known); then each change left is claimed by an unknown call of its holder in flight at that
 * moment (the one whose window closes first), which becomes an operation with that effect.
 * Unknown calls that claim nothing had no effect and are dropped.
 * @param {Map<string, Op[]>} partitions @param {Change[]} changes @param {number} eps
 * @param {import('./lease-model').ModelOptions} model @param {string[]} problems
 */
function resolve(partitions, changes, eps, model, problems) {
  /** @type {Map<string, string>} holder of each granted (ns, term) */
  const holderOf = new Map();
  for (const c of changes) if (c.kind === 'grant' && c.holder) holderOf.set(`${c.ns}\u0000${c.term}`, c.holder);
  const holder = (/** @type {Change} */ c) => (c.kind === 'vacate' ? holderOf.get(`${c.ns}\u0000${c.term}`) ?? null : c.holder);
  const inCall = (/** @type {Op} */ op, /** @type {number} */ t) => t >= op.lo - eps && t <= op.hi + eps;
  const leaseEnd = (/** @type {Change} */ c) => (c.leaseUntil === null ? {} : { leaseLo: c.leaseUntil - eps, leaseHi: c.leaseUntil + eps });
  /** @type {Set<Change>} */
  const settled = new Set();

  /** @type {{ op: Op, change: Change, cost: number }[]} */
  const pairs = [];
  for (const c of changes) {
    const who = holder(c);
    for (const op of partitions.get(c.ns) ?? []) {
      if (op.optional || op.caller !== who || !inCall(op, c.at) || c.at < op.dLo) continue;
      const fits = c.kind === 'vacate' ? op.kind === 'vacate' && (op.term === 0 || op.term === c.term) : op.kind === 'lead' && op.term === c.term && op.acquired !== (c.kind === 'renew');
      if (fits) pairs.push({ op, change: c, cost: Math.abs(c.at - (op.dAt ?? op.dLo)) });
    }
  }
  pairs.sort((x, y) => x.cost - y.cost);
  /** @type {Set<Op>} */
  const claimed = new Set();
  for (const { op, change } of pairs) {
    if (claimed.has(op) || settled.has(change)) continue;
    claimed.add(op);
    settled.add(change);
    Object.assign(op, change.kind === 'vacate' ? {} : leaseEnd(change), { dHi: Math.min(op.dHi, change.at + eps) });
  }

  for (const c of [...changes].sort((x, y) => x.at - y.at)) {
    if (settled.has(c)) continue;
    const who = holder(c);
    const kind = c.kind === 'vacate' ? 'maybe-vacate' : 'maybe-elect';
    const unknown = (partitions.get(c.ns) ?? [])
      .filter((op) => op.kind === kind && !claimed.has(op) && op.caller === who && inCall(op, c.at))
      .sort((x, y) => x.hi - y.hi || y.lo - x.lo)[0];
    if (!unknown) {
      problems.push(`the database logged a ${c.kind} of term ${c.term}${who ? ` (${model.who(who)})` : ''} at ${model.at(c.at)} in ${c.ns}, but no call of ${model.who(who)} that could have made it was in flight then`);
      continue;
    }
    claimed.add(unknown);
    Object.assign(unknown, {
      kind: c.kind === 'vacate' ? 'vacate' : 'lead',
      optional: false,
      term: c.term,
      leaderId: c.kind === 'vacate' ? null : who,
      dHi: Math.min(unknown.dHi, c.at + eps),
      label: `${unknown.label.replace(/ → unknown$/, '')} → ${c.kind} of term ${c.term} at ${model.at(c.at)} (by the database's log)`,
      ...(c.kind === 'vacate' ? {} : { acquired: c.kind === 'grant', ...leaseEnd(c) }),
    });
  }
  for (const [ns, ops] of partitions) partitions.set(ns, ops.filter((op) => !op.optional));
}

// ---- the search --------------------------------------------------------------------------------

/**
 * @typedef {{ op: Op, parent: PathNode | null, length: number }} PathNode
 * @typedef {{ depth: number, state: State, path: PathNode | null, stuck: { op: Op, reason: string }[], minDeadline: number }} Deepest
 * @typedef {{ verdict: 'ok' | 'violation' | 'unknown', nodes: number, deepest: Deepest | null }} Found
 */

/** The latest point `op` can be linearized at: a follower's read is pinned to its decision. @param {Op} op */
const deadlineOf = (op) => (op.kind === 'follow' ? Math.min(op.hi, op.dHi) : op.hi);

/**
 * The order to try candidates in: by when the database decided (elects, vacates) or inserted
 * (writes), else by the end of the call — so calls pinned to a moment go first, and those free to
 * move are placed just in time.
 * @param {Op} op
 */
const urgencyOf = (op) => (op.kind === 'write' || op.kind === 'claim' ? op.insertHi ?? op.hi : op.kind === 'read' || op.kind === 'refused' ? op.hi : op.dHi);

/** Operations that only read the register. */
const READS = new Set(['follow', 'read', 'refused']);

/**
 * Depth-first search for a linearization of one namespace's operations.
 * @param {Op[]} ops @param {import('./lease-model').ModelOptions} model
 * @param {{ maxNodes: number, deadline: number }} budget
 * @returns {Found}
 */
function search(ops, model, budget) {
  // Required operations by invocation (the order candidates are scanned in) and by deadline (the
  // first unlinearized one bounds which operations may come next: none that was invoked after it
  // had to be over).
  const all = [...ops].sort((x, y) => x.lo - y.lo || x.hi - y.hi || x.index - y.index);
  const position = new Map(all.map((op, i) => [op.index, i]));
  const after = all.map((op) => (op.after < 0 ? -1 : /** @type {number} */ (position.get(op.after) ?? -1)));
  const deadline = all.map(deadlineOf);
  const urgency = all.map(urgencyOf);
  const required = all.map((_, i) => i).filter((i) => !all[i].optional);
  const optional = all.map((_, i) => i).filter((i) => all[i].optional);
  const byDeadline = [...required].sort((x, y) => deadline[x] - deadline[y] || x - y);
  const deadlineRank = new Map(byDeadline.map((i, r) => [i, r]));
  // The unlinearized required operations, in invocation order, as a doubly linked list: linearizing
  // unlinks one, backtracking (always the most recent first) links it back.
  const HEAD = all.length;
  const next = new Int32Array(all.length + 1).fill(-1);
  const prev = new Int32Array(all.length + 1).fill(-1);
  let last = HEAD;
  for (const i of required) {
    next[last] = i;
    prev[i] = last;
    last = i;
  }
  const done = new Uint8Array(all.length);
  let firstDeadline = 0; // rank in `byDeadline` of the first unlinearized required op
  let left = required.length;
  /** @type {number[]} optional ops applied, in order */
  const applied = [];

  const minDeadline = () => {
    while (firstDeadline < byDeadline.length && done[byDeadline[firstDeadline]]) firstDeadline++;
    return firstDeadline < byDeadline.length ? deadline[byDeadline[firstDeadline]] : Infinity;
  };
  const mark = (/** @type {number} */ i) => {
    done[i] = 1;
    if (all[i].optional) {
      applied.push(i);
      return;
    }
    left--;
    next[prev[i]] = next[i];
    if (next[i] >= 0) prev[next[i]] = prev[i];
  };
  const unmark = (/** @type {number} */ i) => {
    done[i] = 0;
    if (all[i].optional) {
      applied.pop();
      return;
    }
    left++;
    next[prev[i]] = i;
    if (next[i] >= 0) prev[next[i]] = i;
    firstDeadline = Math.min(firstDeadline, /** @type {number} */ (deadlineRank.get(i)));
  };
  const unchanged = (/** @type {State} */ a, /** @type {State} */ b) =>
    a.now === b.now && a.term === b.term && a.holder === b.holder && a.leaseLo === b.leaseLo && a.leaseHi === b.leaseHi && a.lockFloor === b.lockFloor && a.exclusiveFloor === b.exclusiveFloor;

  /** The operations that may come next, each with the states it leads to; and why the others cannot. */
  const expand = (/** @type {State} */ s) => {
    const bound = minDeadline();
    /** @type {{ i: number, next: State }[]} */
    const children = [];
    /** @type {{ op: Op, reason: string }[]} */
    const stuck = [];
    if (bound < s.now) {
      const late = all[byDeadline[firstDeadline]];
      // Why it did not come next while it still could, if the register forbids it.
      const why = step({ ...s, now: Math.min(s.now, late.lo) }, late, model).reason;
      stuck.push({ op: late, reason: why ?? `had to take effect by ${model.at(bound)}, but the history is already at ${model.at(s.now)}` });
      return { children, stuck, bound };
    }
    /** @param {number} i @returns {boolean} true: a read that leaves the state as it is — take it and nothing else */
    const consider = (i) => {
      if (done[i] || (after[i] >= 0 && !done[after[i]])) return false;
      const { next, reason } = step(s, all[i], model);
      if (next.length === 0) {
        if (!all[i].optional) stuck.push({ op: all[i], reason: reason ?? 'no effect possible' });
        return false;
      }
      // Partial-order reduction: a read that neither changes the register nor moves the clock can
      // go first in any linearization that exists from here, so no other order needs trying.
      if (READS.has(all[i].kind) && unchanged(s, next[0])) {
        children.length = 0;
        children.push({ i, next: next[0] });
        return true;
      }
      for (const n of next) children.push({ i, next: n });
      return false;
    };
    for (let i = next[HEAD]; i >= 0 && all[i].lo <= bound; i = next[i]) if (consider(i)) return { children, stuck: [], bound };
    // Calls of unknown outcome are tried only where no other operation can come next, and only
    // with an effect that lets one of the stuck ones come next: they are there to explain what
    // follows (see maybeElect).
    if (children.length === 0) {
      for (const i of optional) {
        if (done[i] || all[i].lo > bound || all[i].dHi < s.now) continue;
        for (const n of step(s, all[i], model).next) {
          if (stuck.some(({ op }) => step(n, op, model).next.length > 0)) children.push({ i, next: n });
        }
      }
    }
    children.sort((x, y) => urgency[x.i] - urgency[y.i] || x.next.now - y.next.now || x.i - y.i);
    return { children, stuck, bound };
  };
  // Every linearized operation was invoked before the current bound, so the bound and the
  // unlinearized operations invoked before it name the linearized set exactly.
  const keyOf = (/** @type {State} */ s) => {
    const bound = minDeadline();
    let key = `${bound}`;
    for (let i = next[HEAD]; i >= 0 && all[i].lo <= bound; i = next[i]) key += `,${i}`;
    if (applied.length) key += `|${[...applied].sort((x, y) => x - y).join(',')}`;
    return `${key}|${s.term}|${s.holder}|${s.leaseLo}|${s.leaseHi}|${s.now}|${s.lockFloor}|${s.exclusiveFloor}`;
  };

  /** @type {Set<string>} */
  const seen = new Set();
  let state = initialState();
  /** @type {{ i: number, prev: State, path: PathNode | null, children: { i: number, next: State }[], k: number }[]} */
  const frames = [];
  /** @type {Deepest | null} */
  let deepest = null;
  let nodes = 0;
  const remember = (/** @type {ReturnType<typeof expand>} */ x, /** @type {PathNode | null} */ path) => {
    const depth = required.length - left;
    if (!deepest || depth > deepest.depth) deepest = { depth, state, path, stuck: x.stuck, minDeadline: x.bound };
  };
  const root = expand(state);
  remember(root, null);
  frames.push({ i: -1, prev: state, path: null, children: root.children, k: 0 });
  while (frames.length) {
    if (left === 0) return { verdict: 'ok', nodes, deepest: null };
    const frame = frames[frames.length - 1];
    if (frame.k >= frame.children.length) {
      frames.pop();
      if (frame.i >= 0) unmark(frame.i);
      state = frame.prev;
      continue;
    }
    const { i, next } = frame.children[frame.k++];
    mark(i);
    const key = keyOf(next);
    if (seen.has(key)) {
      unmark(i);
      continue;
    }
    seen.add(key);
    if (++nodes > budget.maxNodes || (nodes % 1024 === 0 && performance.now() > budget.deadline)) {
      unmark(i);
      return { verdict: 'unknown', nodes, deepest };
    }
    const prev = state;
    state = next;
    const path = { op: all[i], parent: frame.path, length: (frame.path?.length ?? 0) + 1 };
    const x = expand(state);
    frames.push({ i, prev, path, children: x.children, k: 0 });
    remember(x, path);
  }
  return { verdict: 'violation', nodes, deepest };
}

/** @param {PathNode | null} node @param {number} count the last `count` operations of a path, in order */
function lastOf(node, count) {
  /** @type {Op[]} */
  const ops = [];
  for (let n = node; n && ops.length < count; n = n.parent) ops.unshift(n.op);
  return ops;
}

// ---- reports -----------------------------------------------------------------------------------

/**
 * What a person needs to see: how far the longest partial linearization got, the register's state
 * there, the operations that could not come next and why, and the others in flight around them.
 * @param {string} ns @param {Op[]} ops @param {Found} found @param {import('./lease-model').ModelOptions} model
 */
function report(ns, ops, found, model) {
  const required = ops.filter((o) => !o.optional).length;
  const d = found.deepest;
  const head =
    found.verdict === 'unknown'
      ? `namespace ${ns}: undecided after ${found.nodes} search states (budget); the longest partial linearization covers ${d?.depth ?? 0} of ${required} operations`
      : `namespace ${ns}: no linearization; the longest partial one covers ${d?.depth ?? 0} of ${required} operations`;
  if (!d) return head;
  const lines = [head, `  register there: ${stateText(d.state, model)}`];
  lines.push('  last linearized:');
  for (const op of lastOf(d.path, 6)) lines.push(`    ${op.label}`);
  lines.push('  could not come next:');
  for (const { op, reason } of d.stuck.slice(0, 8)) lines.push(`    ${op.label}: ${reason}`);
  const from = d.state.now;
  const to = Math.max(d.minDeadline, ...d.stuck.map((s) => s.op.hi).filter(Number.isFinite));
  const linearized = new Set(lastOf(d.path, Infinity));
  const around = ops.filter((o) => !linearized.has(o) && !d.stuck.some((s) => s.op === o) && o.hi >= from && o.lo <= to).slice(0, 12);
  if (around.length) {
    lines.push('  also in flight in that window:');
    for (const op of around) lines.push(`    ${op.label}`);
  }
  return lines.join('\n');
}

/** @param {State} s @param {import('./lease-model').ModelOptions} model */
function stateText(s, model) {
  if (s.term === 0) return 'no lease granted yet';
  if (s.holder === null) return `term ${s.term}, vacated; history at ${model.at(s.now)}`;
  const end = s.leaseHi - s.leaseLo <= 4 * model.toleranceMs ? model.at((s.leaseLo + s.leaseHi) / 2) : `${model.at(s.leaseLo)}..${model.at(s.leaseHi)}`;
  return `term ${s.term} held by ${model.who(s.holder)}, lease ends ${end}; history at ${model.at(s.now)}`;
}

/** @param {Result} result */
function formatResult(result) {
  const lines = [result.summary];
  for (const p of result.partitions) {
    lines.push(`  ${p.ns}: ${p.verdict}, ${p.ops} operations${p.optional ? ` (+${p.optional} of unknown outcome)` : ''}, ${p.nodes} states, ${p.ms} ms`);
  }
  for (const problem of result.problems) lines.push(`  ${problem}`);
  for (const p of result.partitions) if (p.report) lines.push(p.report);
  return lines.join('\n');
}

module.exports = { checkHistory, formatResult, DEFAULT_TOLERANCE_MS };
