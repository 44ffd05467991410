// @ts-check
'use strict';
/**
 * One chaos run: a fresh database (or the one given), the ledger, K worker processes each behind
 * its own TCP proxy (each with its priority and eligibility), two `watch()` observers in this
 * process, the fault injector for `durationS`, a quiet tail in which leadership must settle on a
 * top-priority worker, then a clean stop, the history, the checker, the summary and the timeline —
 * all written to `outDir`.
 *
 * Group mode (`group: N`): every worker runs a LeaderElectorGroup over the same N namespaces
 * (`<ns>-0`…) and makes a fenced write per namespace it leads; faults aim at the leader of the
 * first namespace (the watchers and the timeline follow that one too); the checker runs per
 * namespace (`checkGroup`).
 */
const { spawn } = require('child_process');
const crypto = require('crypto');
const fs = require('fs');
const path = require('path');
const db = require('./database');
const { check, checkGroup } = require('./checker');
const { checkGuarded } = require('./guarded-check');
const { linearizabilityCheck } = require('./run-history');
const { GUARANTEED_STALLS, faultBag, faultsFor, inject, leaderCostingFault, rng, sh } = require('./faults');
const { ChaosProxy } = require('./proxy');
const { renderTimeline } = require('./timeline');
const { SCHEDULE } = require('./scheduled-job');

/** Defaults of a run; `npm run chaos -- --help` lists the flags. */
const DEFAULTS = Object.freeze({
  workers: 5,
  durationS: 60,
  leaseS: 2,
  workMs: 100,
  /** (d): leaderless time allowed beyond a tick (and beyond the nearby faults' bound): a loaded machine's scheduling and round trips. */
  slackMs: 1000,
  clockToleranceMs: 5,
  minFaults: 1,
  ns: 'chaos',
  /** Poll period of the second watcher: longer than a lease, so it misses states and must fill them in from the history. */
  slowWatchPollMs: 6000,
  /** Period of the schedule every worker runs (its job writes a ledger row in `run.transaction`); 0: none. */
  scheduleMs: 1000,
  /**
   * Group mode: the schedule runs in this many of the namespaces (the first ones; the faults aim at
   * the first). One keeps the load near what the CI bounds were measured with: with the schedule in
   * all 8 namespaces, a MariaDB run beside other test runs once ended its quiet tail with three
   * namespaces unled, their holder's tick slower than its lease (on MariaDB every fence writes the
   * leader row).
   */
  scheduleNamespaces: 1,
});

/**
 * The quiet tail after the last fault, in which leadership must settle on a live eligible worker
 * of the highest priority: a lease (a dead preferred candidate's row expires), a restarted
 * worker's start-up, and a few ticks for the hand-over.
 * @param {number} leaseMs @param {number} tickMaxMs
 */
const defaultSettleMs = (leaseMs, tickMaxMs) => leaseMs + 4 * tickMaxMs + 3000;

/**
 * Per slot: `{ priority, eligible }` from `--priorities` (one per worker, missing ones 0) and
 * `--ineligible` (slots). Restarted workers keep their slot's.
 * @param {number} workers @param {number[] | undefined} priorities @param {number[] | undefined} ineligible
 */
function slotSettings(workers, priorities = [], ineligible = []) {
  if (priorities.length > workers) throw new Error(`chaos: ${priorities.length} priorities for ${workers} workers`);
  for (const p of priorities) if (!Number.isInteger(p) || Math.abs(p) > 2 ** 31 - 1) throw new Error(`chaos: priority ${p} is not a 32-bit integer`);
  for (const slot of ineligible) if (!Number.isInteger(slot) || slot < 0 || slot >= workers) throw new Error(`chaos: --ineligible ${slot} is not a worker slot (0..${workers - 1})`);
  const settings = Array.from({ length: workers }, (_, slot) => ({ slot, priority: priorities[slot] ?? 0, eligible: !ineligible.includes(slot) }));
  if (!settings.some((s) => s.eligible)) throw new Error('chaos: every worker is ineligible: nobody could lead');
  return settings;
}

/**
 * @typedef {{ db?: import('./database').Kind, url?: string, workers?: number, durationS?: number, leaseS?: number,
 *   workMs?: number, slackMs?: number, clockToleranceMs?: number, minFaults?: number, seed?: number, faults?: string[], dbRestart?: boolean,
 *   out?: string, keep?: boolean, unfenced?: boolean, appTransactions?: boolean, priorities?: number[], ineligible?: number[],
 *   settleMs?: number, slowWatchPollMs?: number, group?: number, balance?: boolean, scheduleMs?: number, scheduleNamespaces?: number, guarded?: boolean,
 *   log?: (line: string) => void }} RunOptions
 */

/** The namespaces of group mode: `<base>-0`, `<base>-1`, … (zero-padded, so they sort in order). @param {string} base @param {number} count */
function groupNamespaces(base, count) {
  const width = String(count - 1).length;
  return Array.from({ length: count }, (_, i) => `${base}-${String(i).padStart(width, '0')}`);
}

const sleep = (/** @type {number} */ ms) => new Promise((resolve) => setTimeout(resolve, ms));

/** Node flags for children: the TypeORM 0.3 switch of the test suite, when it is on. */
function childExecArgv() {
  return process.env.GEMSTONE_TYPEORM_LINE === '0.3' ? ['-r', path.join(__dirname, '..', '..', 'test', 'support', 'typeorm-line.js')] : [];
}

/** @param {RunOptions} options */
async function runChaos(options) {
  /** @type {RunOptions & typeof DEFAULTS} */
  const o = { ...DEFAULTS, ...Object.fromEntries(Object.entries(options).filter(([, v]) => v !== undefined)) };
  const say = options.log ?? ((/** @type {string} */ line) => process.stderr.write(`${line}\n`));
  const kind = o.url ? db.kindOfUrl(o.url) : o.db;
  if (!kind) throw new Error('chaos: give --db postgres|mariadb|sqlite or --url');
  if (o.appTransactions && kind !== 'sqlite') throw new Error('chaos: --app-transactions is an SQLite mode (one connection shared by the elector and the app)');
  const seed = o.seed ?? crypto.randomInt(2 ** 31);
  const random = rng(seed);
  const leaseMs = o.leaseS * 1000;
  const tickMaxMs = Math.round((leaseMs / 3) * 1.1); // the elector's default period, +10% jitter
  const settleMs = o.settleMs ?? defaultSettleMs(leaseMs, tickMaxMs);
  const settings = slotSettings(o.workers, o.priorities, o.ineligible);
  if (o.group !== undefined && (!Number.isInteger(o.group) || o.group < 1 || o.group > 1000)) throw new Error(`chaos: --group ${o.group} is not a number of namespaces from 1 to 1000`);
  if (o.balance && o.group === undefined) throw new Error('chaos: --balance needs --group');
  if (o.guarded && (o.group !== undefined || o.unfenced)) throw new Error('chaos: --guarded needs one namespace and the fence (not --group, not --unfenced)');
  const namespaces = o.group === undefined ? [o.ns] : groupNamespaces(o.ns, o.group);
  /** The namespace the faults aim at, the watchers follow and the timeline shows. */
  const primaryNs = namespaces[0];
  const topPriority = Math.max(...settings.filter((s) => s.eligible).map((s) => s.priority));
  const outDir = o.out ?? path.join(db.tmpDir(), `${kind}-${new Date().toISOString().replace(/[:.]/g, '-')}`);
  const logDir = path.join(outDir, 'workers');
  fs.mkdirSync(logDir, { recursive: true });
  /** The workers' operation histories, for the linearizability checker. */
  const opsDir = path.join(outDir, 'ops');
  fs.mkdirSync(opsDir, { recursive: true });

  const created = o.url ? undefined : await db.createDatabase(kind, outDir);
  const url = /** @type {string} */ (o.url ?? created?.url);
  const described = settings.map((s) => `w${s.slot}:${s.eligible ? s.priority : 'ineligible'}`).join(' ');
  const mode = o.group === undefined ? '' : `, group of ${o.group} namespaces${o.balance ? ' (balanced)' : ''}`;
  say(`chaos: ${kind}, ${o.workers} workers (${described})${mode}, lease ${o.leaseS} s, ${o.durationS} s, seed ${seed}, output ${outDir}`);

  // The library's tables (as the application would create them), then the harness's ledger.
  const { initDb, ElectionService } = require('gemstone-utils');
  const setup = await initDb(url);
  await setup.destroy();
  let admin = await db.connectAdmin(url);
  await db.installLedger(admin);
  if (o.guarded) {
    // The guarded ledger, guarded for the run's namespace as an application would do it.
    await db.installGuardedLedger(admin);
    const guardDs = await initDb(url, { createTables: false });
    await new ElectionService(guardDs).guardTable('chaos_guarded', { ns: o.ns });
    await guardDs.destroy();
  }

  // Two observers for the whole run, straight to the database (no proxy, no faults): one at the
  // default poll, one polling less often than a lease lasts, which must fill in the states it
  // missed from the history. Started before any worker, so they see the namespace's first term.
  const observerDs = await initDb(url, { createTables: false });
  const observerService = new ElectionService(observerDs);
  const watchStop = new AbortController();
  const watchLog = path.join(outDir, 'watches.jsonl');
  /** @type {import('./checker').WatchRecord[]} */
  const watches = [
    { name: 'watch-default-poll', pollMs: undefined, changes: [], errors: 0 },
    { name: `watch-poll-${o.slowWatchPollMs}ms`, pollMs: o.slowWatchPollMs, changes: [], errors: 0 },
  ];
  const watching = watches.map(async (w) => {
    const stream = observerService.watch({ ns: primaryNs, signal: watchStop.signal, ...(w.pollMs ? { pollMs: w.pollMs } : {}), onError: () => void w.errors++ });
    for await (const change of stream) {
      const record = { t: Date.now(), leaderId: change.leaderId, term: change.term, at: change.at.getTime() };
      w.changes.push(record);
      fs.appendFileSync(watchLog, `${JSON.stringify({ watcher: w.name, ...record })}\n`);
    }
  });
  /** @type {string[]} */
  const watchFailures = [];
  for (const [i, p] of watching.entries()) p.catch((error) => watchFailures.push(`${watches[i].name} ended with ${error instanceof Error ? error.message : String(error)}`));

  /** @type {(ChaosProxy | undefined)[]} */
  const proxies = [];
  const workerUrls = [];
  for (let slot = 0; slot < o.workers; slot++) {
    if (kind === 'sqlite') {
      proxies.push(undefined);
      workerUrls.push(url);
      continue;
    }
    const target = new URL(url);
    const proxy = new ChaosProxy({ targetHost: target.hostname, targetPort: Number(target.port || (kind === 'postgres' ? 5432 : 3306)), name: `w${slot}` });
    target.hostname = '127.0.0.1';
    target.port = String(await proxy.listen());
    proxies.push(proxy);
    workerUrls.push(target.toString());
  }

  /** @type {{ child: import('child_process').ChildProcess, candidateId: string, incarnation: number, control: string, exited: Promise<number | null>, expectedExit: boolean }[]} */
  const slots = [];
  /** The events a worker process logged so far. @param {number} slot @param {number} incarnation @returns {import('./checker').WorkerEvent[]} */
  const workerLog = (slot, incarnation) => {
    let text = '';
    try {
      text = fs.readFileSync(path.join(logDir, `w${slot}-${incarnation}.jsonl`), 'utf8');
    } catch {
      return [];
    }
    // The last line may be half written.
    return text.split('\n').flatMap((line) => {
      try {
        return line ? [JSON.parse(line)] : [];
      } catch {
        return [];
      }
    });
  };
  /** @type {string[]} */
  const unexpectedExits = [];
  const incarnations = new Array(o.workers).fill(0);
  const spawnWorker = (/** @type {number} */ slot) => {
    const incarnation = ++incarnations[slot];
    const candidateId = crypto.randomUUID();
    const base = path.join(logDir, `w${slot}-${incarnation}`);
    const output = fs.openSync(`${base}.out`, 'a');
    const child = spawn(process.execPath, [...childExecArgv(), path.join(__dirname, 'worker.js')], {
      env: {
        ...process.env,
        CHAOS_URL: workerUrls[slot],
        CHAOS_SLOT: String(slot),
        CHAOS_INCARNATION: String(incarnation),
        CHAOS_CANDIDATE_ID: candidateId,
        CHAOS_NS: o.ns,
        ...(o.group === undefined ? {} : { CHAOS_NAMESPACES: JSON.stringify(namespaces), CHAOS_BALANCE: o.balance ? '1' : '0' }),
        CHAOS_LEASE_SECONDS: String(o.leaseS),
        CHAOS_WORK_MS: String(o.workMs),
        CHAOS_LOG: `${base}.jsonl`,
        CHAOS_OPS_LOG: path.join(opsDir, `w${slot}-${incarnation}.jsonl`),
        CHAOS_CONTROL: `${base}.control.json`,
        CHAOS_UNFENCED: o.unfenced ? '1' : '0',
        CHAOS_GUARDED: o.guarded ? '1' : '0',
        CHAOS_APP_TX: o.appTransactions ? '1' : '0',
        CHAOS_PRIORITY: String(settings[slot].priority),
        CHAOS_ELIGIBLE: settings[slot].eligible ? '1' : '0',
        CHAOS_SCHEDULE_MS: String(o.scheduleMs),
        CHAOS_SCHEDULE_NAMESPACES: String(o.scheduleNamespaces),
      },
      stdio: ['ignore', output, output],
      // Its own process group: Ctrl-C stops the run (see below), not the workers behind its back.
      detached: true,
    });
    fs.closeSync(output);
    const entry = { child, candidateId, incarnation, control: `${base}.control.json`, expectedExit: false, exited: /** @type {Promise<number | null>} */ (Promise.resolve(null)) };
    entry.exited = new Promise((resolve) =>
      child.on('exit', (code, signal) => {
        if (!entry.expectedExit) unexpectedExits.push(`w${slot}-${incarnation} exited (${signal ?? code}) on its own`);
        resolve(code);
      }),
    );
    slots[slot] = entry;
  };

  /** The rogue of a guarded run (tools/chaos/rogue.js): never leads, writes the guarded ledger anyway. */
  const rogueLog = path.join(outDir, 'rogue.jsonl');
  /** @type {{ child: import('child_process').ChildProcess, exited: Promise<unknown> } | undefined} */
  let rogue;
  const startRogue = () => {
    const output = fs.openSync(path.join(outDir, 'rogue.out'), 'a');
    const child = spawn(process.execPath, [...childExecArgv(), path.join(__dirname, 'rogue.js')], {
      env: { ...process.env, CHAOS_URL: url, CHAOS_NS: o.ns, CHAOS_CANDIDATE_ID: crypto.randomUUID(), CHAOS_WORK_MS: String(o.workMs), CHAOS_LOG: rogueLog },
      stdio: ['ignore', output, output],
      detached: true,
    });
    fs.closeSync(output);
    rogue = { child, exited: new Promise((resolve) => child.on('exit', resolve)) };
  };

  /** @type {import('./checker').Fault[]} */
  const faults = [];
  const faultLog = path.join(outDir, 'faults.jsonl');
  const runStart = Date.now();
  let stopAt = runStart;
  /** @type {{ leaderId: string | null, term: number, live: boolean, current: string[] } | undefined} the leader row when the quiet tail ended */
  let final;
  /** @type {Record<string, { leaderId: string | null, term: number, live: boolean, current: string[] }>} the leader row of each namespace then */
  const finals = {};
  /** @type {number | undefined} */
  let lastFaultEnd;
  /** The stall types the schedule guarantees (those the run's faults allow). @type {string[]} */
  let guaranteedStalls = [];
  let interruptedRun = false;
  try {
    // With priorities, the top-priority workers join once a lower one leads: every such run
    // opens with a hand-over, whatever the seed.
    const late = settings.filter((s) => s.eligible && s.priority === topPriority && settings.some((l) => l.eligible && l.priority < topPriority)).map((s) => s.slot);
    for (let slot = 0; slot < o.workers; slot++) if (!late.includes(slot)) spawnWorker(slot);
    if (o.guarded) startRogue();

    /** @type {import('./faults').FaultContext} */
    const ctx = {
      kind,
      workers: o.workers,
      leaseMs,
      random,
      leaderSlot: async () => {
        const row = await db.readLeader(admin, primaryNs);
        if (!row?.live) return undefined;
        const slot = slots.findIndex((s) => s.candidateId === row.leaderId);
        return slot >= 0 ? slot : undefined;
      },
      signal: (slot, signal) => {
        slots[slot].child.kill(signal);
      },
      stall: (slot, where, ms) => {
        // Polled by the worker at its next fenced action (see readStallOrder in worker.js).
        const armedAt = Date.now();
        fs.writeFileSync(slots[slot].control, JSON.stringify({ where, ms, armedAt }));
        return armedAt;
      },
      stallStarted: async (slot, where, armedAt, timeoutMs) => {
        const { incarnation } = slots[slot];
        for (const until = Date.now() + timeoutMs; Date.now() < until; await sleep(50)) {
          const found = workerLog(slot, incarnation).find((e) => e.ev === 'stall' && e.where === where && e.t >= armedAt);
          if (found) return found;
        }
        return undefined;
      },
      actionOutcome: async (stall, timeoutMs) => {
        for (const until = Date.now() + timeoutMs; Date.now() < until; await sleep(100)) {
          const found = workerLog(stall.slot, stall.incarnation).find((e) => e.seq === stall.seq && ['action-commit', 'action-fenced', 'action-error'].includes(e.ev));
          if (found) return found;
          // Killed meanwhile: it has no outcome to wait for.
          if (slots[stall.slot].incarnation !== stall.incarnation) return undefined;
        }
        return undefined;
      },
      tickMaxMs,
      workMs: o.workMs,
      killAndRestart: async (slot, downMs) => {
        slots[slot].expectedExit = true;
        slots[slot].child.kill('SIGKILL');
        await slots[slot].exited;
        await sleep(downMs);
        spawnWorker(slot);
      },
      proxy: (slot) => proxies[slot],
      killConnections: (list) => db.killConnections(admin, list.flatMap((slot) => proxies[slot]?.upstreamPorts() ?? [])),
      restartDatabase: async () => {
        await admin.close().catch(() => undefined);
        sh(db.restartCommand(kind));
        for (let attempt = 0; ; attempt++) {
          try {
            admin = await db.connectAdmin(url);
            return;
          } catch (error) {
            if (attempt > 120) throw error;
            await sleep(500);
          }
        }
      },
    };

    const types = faultsFor(kind, { dbRestart: Boolean(o.dbRestart), ...(o.faults ? { only: o.faults } : {}) });
    guaranteedStalls = GUARANTEED_STALLS.filter((t) => types.includes(t));
    const faultEnd = runStart + o.durationS * 1000 - settleMs; // leave the quiet tail
    const waitForLeader = async (/** @type {(slot: number) => boolean} */ accept) => {
      for (const until = Date.now() + 15_000; Date.now() < until; await sleep(100)) {
        const slot = await ctx.leaderSlot().catch(() => undefined);
        if (slot !== undefined && accept(slot)) return;
      }
    };
    // Faults start once a first leader holds the lease (workers take a second or two to load);
    // late joiners start once a lower one leads, and the faults once they took over.
    await waitForLeader(() => true);
    if (late.length) {
      for (const slot of late) spawnWorker(slot);
      await waitForLeader((slot) => late.includes(slot));
    }
    // Ctrl-C (or SIGTERM): stop injecting, then shut down, check and report what ran so far.
    let interrupted = false;
    const interrupt = () => {
      interrupted = true;
      interruptedRun = true;
      say('chaos: interrupted — stopping the workers and checking what ran so far');
    };
    process.once('SIGINT', interrupt);
    process.once('SIGTERM', interrupt);
    const pause = async (/** @type {number} */ ms) => {
      for (const until = Date.now() + ms; !interrupted && Date.now() < until; ) await sleep(Math.min(200, until - Date.now()));
    };
    // The schedule guarantees what a run is for, whatever the seed and however slow the machine:
    // the first fault is aimed at the leader and, when the allowed faults can, costs it its lease;
    // then, when allowed, the leader stalls inside the fence (its write must commit) and before it
    // (its write must be fenced off), each repeated until a fenced action took it up; then every
    // allowed type runs once before any runs twice; at least `minFaults` faults run — past the
    // planned end if need be, which then moves back to leave the same time to recover.
    const opening = leaderCostingFault(types);
    const nextType = faultBag(types, random);
    const stallsDue = [...guaranteedStalls];
    let runEnd = runStart + o.durationS * 1000;
    // Faults named by `faults` (--faults) each run at least once, however slow the machine: a run
    // asked for a restart must have one (a stall that no fenced action took up is repeated, which
    // could otherwise reach minFaults first).
    const named = o.faults ? types.filter((type) => o.faults?.includes(type)) : [];
    const namedDue = () => named.some((type) => !faults.some((f) => f.type === type));
    while (types.length && !interrupted && (Date.now() < faultEnd || faults.length < o.minFaults || stallsDue.length || namedDue())) {
      const first = faults.length === 0;
      const guaranteed = !first || !opening ? stallsDue[0] : undefined;
      if (first || guaranteed) for (const until = Date.now() + 15_000; Date.now() < until && (await ctx.leaderSlot().catch(() => undefined)) === undefined; ) await sleep(100);
      const type = (first && opening) || guaranteed || nextType(faults.map((f) => f.type));
      const fault = await inject(type, ctx, { atLeader: first || guaranteed !== undefined });
      faults.push(fault);
      fs.appendFileSync(faultLog, `${JSON.stringify(fault)}\n`);
      say(`chaos: +${((fault.start - runStart) / 1000).toFixed(1)} s ${fault.type}: ${fault.detail ?? ''}`);
      runEnd = Math.max(runEnd, fault.end + settleMs);
      lastFaultEnd = fault.end;
      if (guaranteed && fault.took !== false) stallsDue.shift();
      else if (guaranteed && faults.filter((f) => f.type === guaranteed).length >= 8) {
        // Left to the checker: (f) fails for want of it.
        say(`chaos: no fenced action took up ${guaranteed} in 8 attempts`);
        stallsDue.shift();
      }
      if (faults.length >= o.minFaults && !stallsDue.length && !namedDue()) await pause(Math.max(0, Math.min(faultEnd - Date.now(), 300 + random() * 1500)));
      else await pause(300 + random() * 1500);
    }
    await pause(Math.max(0, runEnd - Date.now()));
    if (!interrupted) {
      for (const ns of namespaces) {
        const row = await db.readLeader(admin, ns).catch(() => null);
        finals[ns] = { leaderId: row?.leaderId ?? null, term: row?.term ?? 0, live: row?.live ?? false, current: slots.map((s) => s.candidateId) };
      }
      final = finals[primaryNs];
    }
    process.removeListener('SIGINT', interrupt);
    process.removeListener('SIGTERM', interrupt);
  } catch (error) {
    // A broken run: the observers must not keep the process alive.
    watchStop.abort();
    await observerDs.destroy().catch(() => undefined);
    throw error;
  } finally {
    stopAt = Date.now();
    for (const proxy of proxies) proxy?.heal();
    if (rogue) {
      rogue.child.kill('SIGTERM');
      /** @type {NodeJS.Timeout | undefined} */
      let rogueTimer;
      const ended = await Promise.race([rogue.exited.then(() => true), new Promise((resolve) => (rogueTimer = setTimeout(() => resolve(false), 10_000)))]);
      clearTimeout(rogueTimer);
      if (!ended) rogue.child.kill('SIGKILL');
      await rogue.exited;
    }
    for (const s of slots) {
      if (!s) continue;
      s.expectedExit = true;
      s.child.kill('SIGCONT');
      s.child.kill('SIGTERM');
    }
    /** @type {NodeJS.Timeout | undefined} */
    let timer;
    const stopped = await Promise.race([
      Promise.all(slots.map((s) => s?.exited)).then(() => true),
      new Promise((resolve) => (timer = setTimeout(() => resolve(false), 15_000))),
    ]);
    clearTimeout(timer);
    if (!stopped) for (const s of slots) s?.child.kill('SIGKILL');
    await Promise.all(slots.map((s) => s?.exited));
  }

  const ledger = await db.readLedger(admin);
  /** @type {Record<string, import('./checker').HistoryRow[]>} */
  const histories = {};
  for (const ns of namespaces) {
    /** @type {import('./checker').HistoryRow[]} */
    const rows = [];
    for (let before; ; ) {
      const page = await observerService.getHistory({ ns, limit: 10_000, ...(before === undefined ? {} : { before }) });
      for (const h of page) {
        rows.push({ term: h.term, leaderId: h.leaderId, acquiredAt: h.acquiredAt.getTime(), endedAt: h.endedAt?.getTime() ?? null, endReason: h.endReason });
      }
      if (page.length < 10_000) break;
      before = page[page.length - 1].term;
    }
    histories[ns] = rows.sort((x, y) => x.term - y.term);
  }
  const history = histories[primaryNs];
  // The runs table as it ended, for (r): each slot's last claim and final state.
  const runs = o.scheduleMs ? await db.readRuns(observerService, namespaces.slice(0, o.scheduleNamespaces), SCHEDULE) : undefined;
  // The watchers' last state is the vacancy after the last term (every worker stopped): wait for
  // it (the slow one may be a poll behind), then end them.
  const lastTerm = history.length ? history[history.length - 1].term : null;
  const caughtUp = () => watches.every((w) => { const c = w.changes[w.changes.length - 1]; return c && c.leaderId === null && c.term === lastTerm; });
  for (const until = Date.now() + o.slowWatchPollMs + leaseMs + 10_000; !caughtUp() && Date.now() < until; ) await sleep(100);
  watchStop.abort();
  await Promise.allSettled(watching);
  await observerDs.destroy().catch(() => undefined);
  const events = fs
    .readdirSync(logDir)
    .filter((f) => f.endsWith('.jsonl'))
    .flatMap((f) =>
      fs
        .readFileSync(path.join(logDir, f), 'utf8')
        .split('\n')
        .filter(Boolean)
        .map((line) => JSON.parse(line)),
    )
    .sort((a, b) => a.t - b.t);
  // The stalls the schedule guaranteed: (f) and (i) fail without them (an interrupted run may lack them).
  const expectStalls = interruptedRun ? [] : guaranteedStalls.map((t) => (t === 'stall-in-fence' ? 'in-fence' : 'before-fence'));
  const common = { ledger, events, faults, leaseMs, tickMaxMs, slackMs: o.slackMs, clockToleranceMs: o.clockToleranceMs, runStart, stopAt, watches, watchFailures, settings, lastFaultEnd, settleMs, expectStalls, scheduled: o.scheduleMs > 0, runs, loopCallbacks: true };
  const result =
    o.group === undefined
      ? check({ ...common, ns: o.ns, history, final, guarded: Boolean(o.guarded) })
      : checkGroup({ ...common, namespaces, histories, finals: interruptedFinals(finals, namespaces), balance: Boolean(o.balance) });
  // The same run as operations with their call intervals, checked for a linearization.
  const lin = linearizabilityCheck({ outDir, leaseMs, toleranceMs: o.clockToleranceMs, ledger, watchedNs: primaryNs, t0: runStart });
  result.checks.push(lin.check);
  result.ok = result.ok && lin.check.ok;
  Object.assign(result.stats, { linearizability: lin.stats });
  if (o.guarded) {
    const rogueEvents = fs.existsSync(rogueLog) ? fs.readFileSync(rogueLog, 'utf8').split('\n').filter(Boolean).map((line) => JSON.parse(line)) : [];
    const guardedResult = checkGuarded({ ns: o.ns, guardedRows: await db.readGuarded(admin), ledger, events, rogueEvents });
    result.checks.push(guardedResult.check);
    result.ok = result.ok && guardedResult.check.ok;
    Object.assign(result.stats, guardedResult.stats);
  }
  if (unexpectedExits.length) {
    result.checks.push({ id: 'e2', name: 'no worker exited on its own', ok: false, detail: unexpectedExits.join('; '), violations: unexpectedExits });
    result.ok = false;
  }

  if (o.appTransactions) {
    const stopping = events.filter((e) => e.ev === 'stopping');
    const appCommits = stopping.reduce((n, e) => n + Number(e.appCommits ?? 0), 0);
    const appRollbacks = stopping.reduce((n, e) => n + Number(e.appRollbacks ?? 0), 0);
    const appErrors = events.filter((e) => e.ev === 'app-error');
    Object.assign(result.stats, { appCommits, appRollbacks, appErrors: appErrors.length });
    const violations = appErrors.slice(0, 20).map((e) => `w${e.slot}-${e.incarnation}: ${e.message}`);
    if (appCommits === 0 || appRollbacks === 0) violations.push(`the app committed ${appCommits} and rolled back ${appRollbacks} transactions: both must happen`);
    result.checks.push({
      id: 'g',
      name: 'application transactions on the shared connection neither fail nor get mixed with the elector\'s',
      ok: violations.length === 0,
      detail: `${appCommits} app commits, ${appRollbacks} app rollbacks (counted at clean stops), ${appErrors.length} app errors`,
      violations,
    });
    result.ok = result.ok && violations.length === 0;
  }

  const slotOfCandidate = new Map();
  for (const e of events) if (e.ev === 'start') slotOfCandidate.set(e.candidateId, e.slot);
  const svg = renderTimeline({
    title: `gemstone-utils chaos: ${kind}, ${o.workers} workers${o.group === undefined ? '' : `, ${primaryNs} of a group of ${o.group}`}, lease ${o.leaseS} s, ${Math.round((stopAt - runStart) / 1000)} s, seed ${seed} — ${result.ok ? 'PASS' : 'FAIL'}`,
    workers: o.workers,
    runStart,
    stopAt,
    leaderships: result.leaderships,
    gaps: result.gaps,
    faults,
    slotOf: (id) => slotOfCandidate.get(id),
    writes: ledger.filter((r) => r.kind === 'write' && r.ns === primaryNs),
    fenced: events.filter((e) => e.ev === 'action-fenced' && (e.ns === undefined || e.ns === primaryNs)),
  });
  fs.writeFileSync(path.join(outDir, 'timeline.svg'), svg);
  fs.writeFileSync(path.join(outDir, 'ledger.json'), JSON.stringify(ledger));
  fs.writeFileSync(path.join(outDir, 'history.json'), JSON.stringify(o.group === undefined ? history : histories));
  const summary = {
    ok: result.ok,
    kind,
    seed,
    workers: o.workers,
    leaseS: o.leaseS,
    group: o.group ?? null,
    balance: Boolean(o.balance),
    settings,
    settleMs,
    durationS: Math.round((stopAt - runStart) / 100) / 10,
    tickMaxMs,
    slackMs: o.slackMs,
    checks: result.checks,
    stats: result.stats,
    faults,
    outDir,
  };
  fs.writeFileSync(path.join(outDir, 'summary.json'), JSON.stringify(summary, null, 2));

  await admin.close().catch(() => undefined);
  for (const proxy of proxies) await proxy?.close();
  if (created && !o.keep) await created.drop();
  return summary;
}

/** No final reading when the run was interrupted (as in single mode). @param {Record<string, any>} finals @param {string[]} namespaces */
function interruptedFinals(finals, namespaces) {
  return namespaces.every((ns) => finals[ns]) ? finals : undefined;
}

module.exports = { runChaos, DEFAULTS, groupNamespaces };
