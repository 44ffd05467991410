// @ts-check
'use strict';
/**
 * A chaos run as a history for the linearizability checker: the workers' operation logs
 * (op-recorder.js, `<out>/ops/*.jsonl`), the watchers' events (`watches.jsonl`), and the ledger —
 * whose write rows say which fenced writes committed (also those whose caller died or saw an error)
 * and at what database time, whose claim and job rows say the same of the schedule's claims of
 * slots and `run.transaction`s, and whose lease trigger rows are the database's log of lease
 * changes that settles the outcomes no caller saw.
 *
 * Usage: `node tools/chaos/run-history.js <out dir>` checks a finished run again (exit 0: linearizable).
 *
 * Unknown outcomes, per worker process (each may or may not have taken effect in its window):
 * - an elect that failed: from its invocation on, with no end (the server may commit a statement
 *   whose connection the client already gave up);
 * - the elect in flight when the process died or stopped: from the last answered tick on;
 * - group mode: each tick, for every namespace it did not report taking (a renewal, or a lease
 *   taken while being given up, is not reported per namespace);
 * - a vacate: from the first answer that made it leader of a term (a hand-over, also of a lease
 *   it never led locally because it was outranked), from a demotion that gives a lease up, from the
 *   start of `stop()`, and — group mode — inside every tick (it folds in the leases given up).
 */
const fs = require('fs');
const path = require('path');
const { checkHistory, formatResult } = require('./linearizability');

/**
 * @typedef {import('./linearizability').Entry} Entry
 * @typedef {import('./linearizability').Change} Change
 * @typedef {import('./database').LedgerRow} LedgerRow
 * @typedef {{ p: string, f: string, [k: string]: any }} OpRecord
 * @typedef {{ watcher: string, t: number, leaderId: string | null, term: number | null, at?: number }} WatchLine
 */

/** @param {string} file @returns {any[]} */
function readLines(file) {
  if (!fs.existsSync(file)) return [];
  const lines = fs.readFileSync(file, 'utf8').split('\n').filter(Boolean);
  return lines.flatMap((line, i) => {
    try {
      return [JSON.parse(line)];
    } catch (error) {
      // The last line of a process killed while writing it: that record is lost, as if unwritten.
      if (i === lines.length - 1) return [];
      throw error;
    }
  });
}

/**
 * @param {{ records: OpRecord[][], ledger: LedgerRow[], watches: WatchLine[], watchedNs: string }} run
 *   `records`: one array per worker process, in the order written
 * @returns {{ entries: Entry[], changes: Change[], names: Record<string, string>, problems: string[] }}
 */
function historyOfRun(run) {
  /** @type {Entry[]} */
  const entries = [];
  /** @type {string[]} */
  const problems = [];
  /** @type {Record<string, string>} */
  const names = {};
  /** @type {Map<string, LedgerRow>} committed writes by (candidate, seq) */
  const committed = new Map();
  for (const row of run.ledger) if (row.kind === 'write') committed.set(`${row.holder}\u0000${row.seq}`, row);
  /** @type {Set<string>} */
  const claimedWrites = new Set();
  /** The schedule's claims and job rows by (candidate, ns, name, slot, attempt). */
  const runRows = { claims: new Map(), jobs: new Map() };
  for (const row of run.ledger) {
    if (row.kind === 'claim') runRows.claims.set(runKey(String(row.holder), row), row);
    else if (row.kind === 'job') runRows.jobs.set(runKey(String(row.holder), row), row);
  }
  /** @type {Set<LedgerRow>} */
  const explainedRuns = new Set();

  for (const records of run.records) {
    const start = records.find((r) => r.f === 'start');
    if (!start) continue;
    const proc = start.p;
    const caller = /** @type {string} */ (start.candidateId);
    const namespaces = /** @type {string[]} */ (start.namespaces);
    names[caller] = proc;
    const common = { process: proc, caller };
    let lastAnswer = start.at;
    /** @type {Set<string>} (ns, term) this process was told it leads */
    const mayVacate = new Set();
    /** @type {Map<number, OpRecord>} */
    const invoked = new Map();
    const jobs = scheduledJobs(records);
    for (const r of records) {
      if (r.f === 'tick') {
        if (r.outcome === 'error') {
          entries.push({ ...common, ns: r.ns, op: 'elect', invokeAt: r.inv, returnAt: null, result: null });
        } else {
          const isLeader = r.outcome === 'acquired' || r.outcome === 'renewed';
          // A lease the database gave it may be vacated from then on: handed over (even one it never
          // led locally, an outranked candidate's), or by stop().
          const key = `${r.ns}\u0000${r.term}`;
          if (isLeader && !mayVacate.has(key)) {
            mayVacate.add(key);
            entries.push({ ...common, ns: r.ns, op: 'vacate', invokeAt: r.inv, returnAt: null, result: null });
          }
          entries.push({
            ...common,
            ns: r.ns,
            op: 'elect',
            invokeAt: r.inv,
            returnAt: r.ret,
            result: { isLeader, leaderId: r.leaderId, term: r.term, acquired: isLeader ? r.outcome === 'acquired' : undefined, databaseNow: r.dbNow },
          });
        }
        lastAnswer = r.ret;
      } else if (r.f === 'gtick') {
        const taken = new Map(/** @type {[string, number][]} */ (r.elected));
        for (const ns of namespaces) {
          // A tick also vacates the leases being given up whose callbacks have settled.
          entries.push({ ...common, ns, op: 'vacate', invokeAt: r.inv, returnAt: r.ok ? r.ret : null, result: null });
          const term = taken.get(ns);
          if (r.ok && term !== undefined) {
            // Decided by some statement of the tick: the tick's clock reading is one of them.
            entries.push({ ...common, ns, op: 'elect', invokeAt: r.inv, returnAt: r.ret, result: { isLeader: true, leaderId: caller, term, databaseNow: r.dbNow, decidedWithin: [r.inv, r.ret] } });
          } else {
            entries.push({ ...common, ns, op: 'elect', invokeAt: r.inv, returnAt: r.ok ? r.ret : null, result: null });
          }
        }
        lastAnswer = r.ret;
      } else if (r.f === 'demoted' && ['handed-over', 'resigned', 'stopped'].includes(r.reason)) {
        entries.push({ ...common, ns: r.ns, op: 'vacate', invokeAt: r.at, returnAt: null, result: null });
      } else if (r.f === 'stopping') {
        for (const ns of namespaces) entries.push({ ...common, ns, op: 'vacate', invokeAt: r.at, returnAt: null, result: null });
      } else if (r.f === 'write' && r.type === 'invoke') {
        invoked.set(r.seq, r);
      } else if (r.f === 'write') {
        const call = invoked.get(r.seq);
        invoked.delete(r.seq);
        if (!call) {
          problems.push(`${proc}: write seq ${r.seq} returned without an invocation`);
          continue;
        }
        entries.push(writeEntry(common, call, r, committed, claimedWrites, problems));
      }
    }
    // Still in flight when the process ended: the write may have committed, the elect taken effect.
    for (const call of invoked.values()) entries.push(writeEntry(common, call, undefined, committed, claimedWrites, problems));
    for (const ns of namespaces) entries.push({ ...common, ns, op: 'elect', invokeAt: lastAnswer, returnAt: null, result: null });
    entries.push(...runEntries(common, start.at, jobs, runRows, explainedRuns, problems));
  }
  for (const row of [...runRows.claims.values(), ...runRows.jobs.values()]) {
    if (!explainedRuns.has(row)) problems.push(`ledger #${row.id}: a ${row.kind} of slot ${new Date(Number(row.slot)).toISOString()} (attempt ${row.attempt}, term ${row.term}) by ${names[String(row.holder)] ?? row.holder} that no worker's log explains`);
  }
  for (const [key, row] of committed) {
    if (!claimedWrites.has(key)) problems.push(`ledger #${row.id}: a write of term ${row.term} by ${names[String(row.holder)] ?? row.holder} (seq ${row.seq}) that no worker invoked`);
  }
  for (const w of run.watches) {
    // Read no earlier than the state it reports began (its database time), reported at `t`.
    entries.push({ process: w.watcher, ns: run.watchedNs, op: 'watch', invokeAt: typeof w.at === 'number' ? w.at : null, returnAt: w.t, result: { leaderId: w.leaderId, term: w.term } });
  }
  /** @type {Change[]} */
  const changes = run.ledger
    .filter((row) => LEASE_CHANGES.includes(row.kind))
    .map((row) => ({ ns: row.ns, kind: /** @type {'grant' | 'renew' | 'vacate'} */ (row.kind), term: row.term, holder: row.holder, at: row.at, leaseUntil: row.leaseUntil }));
  return { entries, changes, names, problems };
}

/** The ledger kinds that are the database's log of lease changes. */
const LEASE_CHANGES = ['grant', 'renew', 'vacate'];

/** A run of a slot: (candidate, ns, schedule, slot, attempt). @param {string} candidate @param {Record<string, any>} r a ledger row or a job record */
const runKey = (candidate, r) => [candidate, r.ns, r.name, r.slot, r.attempt].join('\u0000');

/**
 * @typedef {{ ns: string, term: number, at: number }} Election a leadership of this process: when it was told it leads (ns, term)
 * @typedef {{ start: OpRecord, end: OpRecord | undefined, leadership: Election | undefined }} JobCall
 * @typedef {{ elections: Election[], calls: JobCall[] }} ProcessJobs
 */

/**
 * A process's leaderships (one per 'elected': a local demotion and a re-election under the same
 * term are two) and scheduled jobs, each with its return, if it returned, and its leadership: the
 * last one of its (ns, term) told before it started — a run of a leadership starts a job only
 * while that leadership lasts, in the step that checked so.
 * @param {OpRecord[]} records @returns {ProcessJobs}
 */
function scheduledJobs(records) {
  /** @type {Election[]} */
  const elections = [];
  /** @type {JobCall[]} */
  const calls = [];
  /** @type {Map<string, JobCall>} */
  const open = new Map();
  for (const r of records) {
    if (r.f === 'elected') elections.push({ ns: r.ns, term: r.term, at: r.at });
    if (r.f !== 'job') continue;
    const run = [r.ns, r.name, r.slot, r.attempt].join('\u0000');
    if (r.type === 'start') {
      const leadership = elections.filter((e) => e.ns === r.ns && e.term === r.term).pop();
      const call = { start: r, end: undefined, leadership };
      calls.push(call);
      open.set(run, call);
    } else {
      const call = open.get(run);
      if (call) call.end = r;
      open.delete(run);
    }
  }
  return { elections, calls };
}

/**
 * The schedule's operations of one process, from its log and the ledger: each claim it made (a
 * fenced write of the run row, logged by the ledger's trigger) and each `run.transaction` (a fenced
 * write that committed the job's row with `done`).
 *
 * A claim's call is not logged (the library makes it), so its window is bounded by what is. A
 * claim whose job started was made by that job's leadership: after the process was told of it (a
 * schedule's run of a leadership starts with it) and after that leadership's previous job returned
 * (the run claims, runs the job, then claims the next); it returned before its job started. A claim
 * whose job never started (the leadership ended, or the process died, on the way) may be of any
 * leadership of its term: after the first, returned at some unknown time.
 * @param {{ process: string, caller: string }} common @param {number} startedAt the process's start
 * @param {ProcessJobs} jobs @param {{ claims: Map<string, LedgerRow>, jobs: Map<string, LedgerRow> }} rows
 * @param {Set<LedgerRow>} explained the rows some process's log explains (added to) @param {string[]} problems
 * @returns {Entry[]}
 */
function runEntries(common, startedAt, jobs, rows, explained, problems) {
  /** @type {Entry[]} */
  const entries = [];
  const slotOf = (/** @type {Record<string, any>} */ r) => new Date(Number(r.slot)).toISOString();
  /** The earliest a claim can have been made: see above. @param {LedgerRow} claim @param {JobCall | undefined} call */
  const invokedAfter = (claim, call) => {
    if (!call?.leadership) return jobs.elections.find((e) => e.ns === claim.ns && e.term === claim.term)?.at ?? startedAt;
    const previous = jobs.calls.filter((c) => c.leadership === call.leadership && c !== call && c.start.at <= call.start.at && c.end);
    return Math.max(call.leadership.at, ...previous.map((c) => /** @type {OpRecord} */ (c.end).at));
  };
  const byRun = new Map(jobs.calls.map((c) => [runKey(common.caller, c.start), c]));
  for (const [key, claim] of rows.claims) {
    if (claim.holder !== common.caller) continue;
    explained.add(claim);
    const call = byRun.get(key);
    const returnAt = call ? call.start.at : null;
    entries.push({
      ...common,
      ns: claim.ns,
      op: 'claim',
      args: { term: claim.term, slot: slotOf(claim), attempt: Number(claim.attempt) },
      invokeAt: invokedAfter(claim, call),
      returnAt,
      result: { status: 'committed', at: claim.at },
    });
  }
  for (const call of jobs.calls) {
    const key = runKey(common.caller, call.start);
    const row = rows.jobs.get(key);
    const what = `${common.process}: the job of slot ${slotOf(call.start)} (attempt ${call.start.attempt})`;
    if (!rows.claims.has(key)) problems.push(`${what} ran, but the ledger has no claim of it`);
    if (call.end?.type === 'committed' && !row) problems.push(`${what} committed, but the ledger lacks its row`);
    if (call.end?.type === 'refused' && row) problems.push(`${what} was refused (NotLeaderError), but the ledger holds its row`);
    if (!row) continue; // no effect the checker can know of
    explained.add(row);
    entries.push({
      ...common,
      ns: call.start.ns,
      op: 'write',
      args: { term: call.start.term },
      invokeAt: call.start.at,
      // An error may come after the commit went through: then it committed some time after.
      returnAt: call.end?.type === 'committed' ? call.end.at : null,
      result: { status: 'committed', at: row.at },
    });
  }
  return entries;
}

/**
 * A fenced write: its result as the caller saw it, settled by the ledger when the caller saw none.
 * @param {{ process: string, caller: string }} common @param {OpRecord} call @param {OpRecord | undefined} ret
 * @param {Map<string, LedgerRow>} committed @param {Set<string>} claimed @param {string[]} problems
 * @returns {Entry}
 */
function writeEntry(common, call, ret, committed, claimed, problems) {
  const key = `${common.caller}\u0000${call.seq}`;
  const row = committed.get(key);
  if (row) claimed.add(key);
  const base = { ...common, ns: call.ns, op: /** @type {const} */ ('write'), args: { term: call.term }, invokeAt: call.at };
  if (ret?.type === 'refused') {
    if (row) problems.push(`${common.process}: write seq ${call.seq} was refused (NotLeaderError) but the ledger holds it`);
    return { ...base, returnAt: ret.at, result: { status: 'refused', term: ret.current, leaderId: ret.leaderId } };
  }
  if (ret?.type === 'committed' && !row) problems.push(`${common.process}: write seq ${call.seq} of term ${call.term} committed, but the ledger lacks it`);
  if (ret?.type === 'guard-refused' && row) problems.push(`${common.process}: write seq ${call.seq} was refused by the guarded table but the ledger holds it`);
  if (!row) return { ...base, returnAt: ret?.at ?? null, result: null };
  // An error may come after the commit went through (the answer lost): then it may have committed any time after.
  return { ...base, returnAt: ret?.type === 'committed' ? ret.at : null, result: { status: 'committed', at: row.at } };
}

/**
 * Checks a run from its output directory, or from what the runner holds in memory.
 * @param {{ outDir: string, leaseMs: number, toleranceMs?: number, ledger?: LedgerRow[], watchedNs: string, timeLimitMs?: number, t0?: number }} o
 */
function checkRun(o) {
  const opsDir = path.join(o.outDir, 'ops');
  const files = fs.existsSync(opsDir) ? fs.readdirSync(opsDir).filter((f) => f.endsWith('.jsonl')).sort() : [];
  const records = files.map((f) => readLines(path.join(opsDir, f)));
  const ledger = o.ledger ?? JSON.parse(fs.readFileSync(path.join(o.outDir, 'ledger.json'), 'utf8'));
  const watches = readLines(path.join(o.outDir, 'watches.jsonl'));
  const { entries, changes, names, problems } = historyOfRun({ records, ledger, watches, watchedNs: o.watchedNs });
  const result = checkHistory(entries, {
    leaseMs: o.leaseMs,
    ...(o.toleranceMs === undefined ? {} : { toleranceMs: o.toleranceMs }),
    ...(o.timeLimitMs === undefined ? {} : { timeLimitMs: o.timeLimitMs }),
    ...(o.t0 === undefined ? {} : { t0: o.t0 }),
    changes,
    names,
  });
  result.problems.unshift(...problems);
  if (problems.length && result.verdict !== 'violation') result.verdict = 'violation';
  return { result, processes: records.length, entries: entries.length };
}

/**
 * The run's check in the checker's format (id `lin`).
 * @param {Parameters<typeof checkRun>[0]} o
 */
function linearizabilityCheck(o) {
  const { result, processes } = checkRun(o);
  const violations = [...result.problems, ...result.partitions.filter((p) => p.report).map((p) => /** @type {string} */ (p.report))];
  const states = result.partitions.reduce((n, p) => n + p.nodes, 0);
  return {
    check: {
      id: 'lin',
      name: 'the operations the workers and watchers saw are linearizable against the lease register',
      ok: result.verdict === 'ok',
      detail: `${result.summary}; ${processes} worker processes`,
      violations: violations.slice(0, 20),
    },
    stats: { verdict: result.verdict, ops: result.ops, namespaces: result.partitions.length, states, ms: result.ms },
  };
}

if (require.main === module) {
  const outDir = process.argv[2];
  if (!outDir) {
    process.stderr.write('usage: node tools/chaos/run-history.js <chaos output dir>\n');
    process.exit(2);
  }
  const summary = JSON.parse(fs.readFileSync(path.join(outDir, 'summary.json'), 'utf8'));
  const history = JSON.parse(fs.readFileSync(path.join(outDir, 'history.json'), 'utf8'));
  const watchedNs = summary.group ? Object.keys(history).sort()[0] : /** @type {string} */ (readLines(path.join(outDir, 'ops', fs.readdirSync(path.join(outDir, 'ops'))[0])).find((r) => r.f === 'start')?.namespaces[0]);
  const { result } = checkRun({ outDir, leaseMs: summary.leaseS * 1000, watchedNs });
  process.stdout.write(`${formatResult(result)}\n`);
  process.exitCode = result.verdict === 'ok' ? 0 : 1;
}

module.exports = { historyOfRun, checkRun, linearizabilityCheck };
