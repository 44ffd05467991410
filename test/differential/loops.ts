/**
 * Real loops beside the model-driven schedules: LeaderElectors and LeaderElectorGroups (short
 * leases, intervals from LOOP_INTERVALS_MS), in a process of their own
 * (test/support/workers/loops-worker.js), campaign in namespaces of their own of the same
 * database while schedules with concurrent rounds run (their sessions, locks and "time passes"
 * touch only their own namespaces, but SQLite's write lock and the servers' load are shared), and
 * `watch()` follows each namespace. Meanwhile the round, in turn, takes a term back from its holder
 * (the leader row and the history go back to before its grant, as a failover that lost the grant
 * leaves them: the next tick is granted the same term again, to whichever loop ticks first),
 * stops and restarts a holder (a hand-over), and resigns a holder's lease from another process
 * (behind its back). At the end every loop has stopped, and what the loops and watches recorded
 * is checked against the history table (loops-check.ts):
 * - the callback rule per leadership of every loop, complete (the chaos checker's (n): one rule
 *   for both; test/lifecycle/callback-rule.ts states it for in-process tests);
 * - every grant of a term to a loop (the history's holder of each term, and the first holder of a
 *   term granted twice) is one leadership of that loop, in term order, and the loop had no other
 *   — but for a leadership ended by its local deadline whose lease the database renewed without a
 *   gap (the same term again: docs/protocol.md), and a grant the loop shows it never started (a
 *   tick answered after the deadline it armed, the worker's clocks disagreeing near it, or a stop);
 * - watch() of every namespace yielded every holder of every term (both holders of a term granted
 *   twice, in that order, when they differ) and the vacancy after every term that ended, in
 *   order, and nothing else.
 */
import { randomBytes, randomUUID } from 'crypto';
import type { DataSource } from 'typeorm';
import { ElectionService } from 'gemstone-utils';
import type { TestDatabase } from '../support/databases';
import { collect, type Collected } from '../election/watch-support';
import { WorkerProcess } from '../elector/worker-process';
import { LOOP_EXPIRE_SECONDS, callbackRule, leadershipsOf, loopsAgainstHistory, unledOf, watchAgainstHistory, type HistoryRow, type LoopSpec, type Regrant } from './loops-check';

/** Each loop's tick period, in turn (all below half the lease). */
export const LOOP_INTERVALS_MS = [150, 200, 300, 400];
/** The watches' poll. */
const WATCH_POLL_MS = 100;
/** The round lasts at least this long, however quick the schedules beside it. */
const MIN_ROUND_MS = 2500;
/** …and goes on until what it checks has happened (a term granted twice, terms in each namespace), for this long at most. */
const GIVE_UP_MS = 30_000;
const WORKER = require.resolve('../support/workers/loops-worker.js');

export interface LoopRoundResult {
  /** Every violation found; empty when the round passed. */
  violations: string[];
  /** What was recorded, for the log. */
  summary: string;
}

/**
 * Runs the loops while `beside()` runs (the model-driven schedules), then stops them and checks.
 * Needs a database separate DataSources share (not `:memory:`).
 */
export async function loopRound(db: TestDatabase, beside: () => Promise<void>): Promise<LoopRoundResult> {
  const tag = randomBytes(3).toString('hex');
  const namespaces = [`loops-${tag}-0`, `loops-${tag}-1`];
  const kinds = ['elector', 'elector', 'group', 'group'] as const;
  const loops: LoopSpec[] = kinds.map((kind, i) => ({
    kind,
    candidateId: randomUUID(),
    intervalMs: LOOP_INTERVALS_MS[i % LOOP_INTERVALS_MS.length]!,
    namespaces: kind === 'elector' ? namespaces.slice(0, 1) : namespaces,
  }));
  // Reads only: the round's writes are the worker's (see loops-worker.js).
  const observerDs: DataSource = await db.connect();
  const observer = new ElectionService(observerDs, { expireSeconds: LOOP_EXPIRE_SECONDS });
  const stopWatching = new AbortController();
  const watches = new Map<string, Collected>(namespaces.map((ns) => [ns, collect(observer.watch({ ns, pollMs: WATCH_POLL_MS, signal: stopWatching.signal }))]));
  const worker = new WorkerProcess({ url: db.url(), ns: namespaces[0]!, expireSeconds: LOOP_EXPIRE_SECONDS, intervalMs: 0, namespaces, loops }, { script: WORKER });
  const regrants: Regrant[] = [];
  const found: string[] = [];
  const started = Date.now();
  try {
    await worker.ready();
    // Terms change hands while the schedules run, in turn: a term granted twice, a hand-over by a
    // stop and start, a resignation behind the holder's back (another process's resign()).
    let besideDone = false;
    /** What the checks below need to have happened: a term granted twice, terms changing hands in each namespace. */
    const enough = async () => {
      if (regrants.length === 0) return false;
      for (const ns of namespaces) if ((await observer.getHistory({ ns, limit: 2 })).length < 2) return false;
      return true;
    };
    const disturb = async () => {
      for (let step = 0; step < 3 || !besideDone || Date.now() - started < MIN_ROUND_MS || (Date.now() - started < GIVE_UP_MS && !(await enough())); step++) {
        const ns = namespaces[step % 2]!;
        const leader = await observer.getLeader({ ns });
        const holder = leader ? loops.findIndex((l) => l.candidateId === leader.leaderId) : -1;
        if (leader && holder >= 0) {
          if (step % 3 === 0) {
            // Once the watch has seen the first holder: the test is whether it shows the second.
            await watches.get(ns)!.waitForState(leader.leaderId, leader.term, 5000).catch(() => undefined);
            await regrant(ns, leader.term, leader.leaderId);
          } else if (step % 3 === 1) {
            const mark = worker.lines.length;
            worker.send(`restart ${holder}`);
            await worker.waitFor(`loop ${holder} restarted`, (l) => l.event === 'restarted' && l['loop'] === holder, 15_000, mark);
          } else {
            const mark = worker.lines.length;
            worker.send(`resign ${ns} ${leader.leaderId}`);
            await worker.waitFor('the resignation', (l) => l.event === 'resigned', 15_000, mark);
          }
        }
        await sleep(300);
      }
    };
    /** The worker takes `from`'s term back (if it is still `from`'s): the next tick is granted it again. */
    const regrant = async (ns: string, term: number, from: string) => {
      const mark = worker.lines.length;
      worker.send(`rewind ${ns} ${term} ${from}`);
      const done = await worker.waitFor('the rewind', (l) => l.event === 'rewound', 15_000, mark);
      if (done['ok'] === true) regrants.push({ ns, term, from });
    };
    await Promise.all([beside().finally(() => (besideDone = true)), disturb()]);
  } finally {
    worker.send('stop');
    await worker.waitFor('the loops to stop', (l) => l.event === 'stopped', 30_000).catch((error: Error) => found.push(error.message));
    await worker.shutdown();
  }
  const seconds = ((Date.now() - started) / 1000).toFixed(1);
  const histories = new Map<string, HistoryRow[]>();
  for (const ns of namespaces) {
    const rows = await observer.getHistory({ ns, limit: 10_000 });
    histories.set(ns, rows.map((h) => ({ term: h.term, leaderId: h.leaderId, acquiredAt: h.acquiredAt, endedAt: h.endedAt })).sort((x, y) => x.term - y.term));
  }
  // Every loop stopped: each watch ends with the vacancy after its namespace's last term.
  for (const ns of namespaces) {
    const last = histories.get(ns)!.at(-1);
    if (last) await watches.get(ns)!.waitForState(null, last.term, 10_000).catch((error: Error) => found.push(`${ns}: ${error.message}`));
  }
  stopWatching.abort();
  for (const [ns, w] of watches) {
    const end = await w.ended;
    if (end.error) found.push(`${ns}: watch() threw ${String(end.error)}`);
  }
  await observerDs.destroy();

  for (const line of worker.lines) if (line.event === 'fatal') found.push(`the loops' process: ${String(line['message'])}`);
  const steps = worker.lines.filter((l) => l.event === 'step');
  const rule = callbackRule(loops, steps, worker.lines.some((l) => l.event === 'stopped'));
  found.push(...rule.order);
  const unled = unledOf(loops, worker.lines);
  const against = loopsAgainstHistory(loops, leadershipsOf(loops, steps), histories, regrants, unled);
  found.push(...against.violations);
  for (const ns of namespaces) found.push(...watchAgainstHistory(ns, watches.get(ns)!.changes, histories.get(ns)!, regrants));
  const terms = [...histories.values()].reduce((n, h) => n + h.length, 0);
  const changes = [...watches.values()].reduce((n, w) => n + w.changes.length, 0);
  // Not vacuous: terms changed hands, one of them granted twice.
  if (regrants.length === 0) found.push('no term was granted twice: the watches were not tested on it');
  if (terms < 2 * namespaces.length) found.push(`only ${terms} terms in the history of ${namespaces.length} namespaces`);
  if (found.length > 0) {
    // What a failure needs to be understood: the loops, the history, and the worker's record but
    // the steps (errors, ticks that came near a lease, stops, rewinds, resignations, clock steps).
    found.push(`the loops: ${loops.map((l, i) => `${l.kind} ${i} = ${l.candidateId} (every ${l.intervalMs} ms)`).join(', ')}`);
    for (const [ns, rows] of histories) found.push(`history of ${ns}: ${rows.map((h) => `${h.term} ${h.leaderId.slice(0, 8)} ${h.acquiredAt.toISOString()}..${h.endedAt?.toISOString() ?? 'now'}`).join('; ')}`);
    found.push(`the worker's record: ${worker.lines.filter((l) => l.event !== 'step').map((l) => JSON.stringify(l)).join(' ')}`);
  }
  return {
    violations: found,
    summary: `${loops.length} loops over ${namespaces.length} namespaces for ${seconds} s: ${rule.orderDetail}; ${terms} terms in the history (${against.unled} grant(s) a loop never started: by a tick answered after its deadline, near a clock step, or while it stopped; ${against.unledOfLed} of them a second grant of a term it led; ${unled.clockSteps.length} clock step(s)), ${regrants.length} term(s) granted twice, ${changes} watch() changes`,
  };
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, Math.max(0, ms)));

