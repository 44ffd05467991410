// @ts-check
'use strict';
/**
 * One chaos run: a fresh database (or the one given), the ledger, K worker processes each behind
 * its own TCP proxy, the fault injector for `durationS`, then a clean stop, the checker, the
 * summary and the timeline — all written to `outDir`.
 */
const { spawn } = require('child_process');
const crypto = require('crypto');
const fs = require('fs');
const path = require('path');
const db = require('./database');
const { check } = require('./checker');
const { faultsFor, inject, rng, sh } = require('./faults');
const { ChaosProxy } = require('./proxy');
const { renderTimeline } = require('./timeline');

/** Defaults of a run; `npm run chaos -- --help` lists the flags. */
const DEFAULTS = Object.freeze({
  workers: 5,
  durationS: 60,
  leaseS: 2,
  workMs: 100,
  slackMs: 2000,
  clockToleranceMs: 5,
  ns: 'chaos',
});

/**
 * @typedef {{ db?: import('./database').Kind, url?: string, workers?: number, durationS?: number, leaseS?: number,
 *   workMs?: number, slackMs?: number, clockToleranceMs?: number, seed?: number, faults?: string[], dbRestart?: boolean,
 *   out?: string, keep?: boolean, unfenced?: boolean, log?: (line: string) => void }} RunOptions
 */

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
  const seed = o.seed ?? crypto.randomInt(2 ** 31);
  const random = rng(seed);
  const leaseMs = o.leaseS * 1000;
  const tickMaxMs = Math.round((leaseMs / 3) * 1.1); // the elector's default period, +10% jitter
  const outDir = o.out ?? path.join(db.tmpDir(), `${kind}-${new Date().toISOString().replace(/[:.]/g, '-')}`);
  const logDir = path.join(outDir, 'workers');
  fs.mkdirSync(logDir, { recursive: true });

  const created = o.url ? undefined : await db.createDatabase(kind, outDir);
  const url = /** @type {string} */ (o.url ?? created?.url);
  say(`chaos: ${kind}, ${o.workers} workers, lease ${o.leaseS} s, ${o.durationS} s, seed ${seed}, output ${outDir}`);

  // The library's tables (as the application would create them), then the harness's ledger.
  const { initDb } = require('gemstone-utils');
  const setup = await initDb(url);
  await setup.destroy();
  let admin = await db.connectAdmin(url);
  await db.installLedger(admin);

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
        CHAOS_LEASE_SECONDS: String(o.leaseS),
        CHAOS_WORK_MS: String(o.workMs),
        CHAOS_LOG: `${base}.jsonl`,
        CHAOS_CONTROL: `${base}.control.json`,
        CHAOS_UNFENCED: o.unfenced ? '1' : '0',
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

  /** @type {import('./checker').Fault[]} */
  const faults = [];
  const faultLog = path.join(outDir, 'faults.jsonl');
  const runStart = Date.now();
  let stopAt = runStart;
  try {
    for (let slot = 0; slot < o.workers; slot++) spawnWorker(slot);

    /** @type {import('./faults').FaultContext} */
    const ctx = {
      kind,
      workers: o.workers,
      leaseMs,
      random,
      leaderSlot: async () => {
        const row = await db.readLeader(admin, o.ns);
        if (!row?.live) return undefined;
        const slot = slots.findIndex((s) => s.candidateId === row.leaderId);
        return slot >= 0 ? slot : undefined;
      },
      signal: (slot, signal) => {
        slots[slot].child.kill(signal);
      },
      stall: (slot, where, ms) => {
        fs.writeFileSync(slots[slot].control, JSON.stringify({ where, ms }));
        slots[slot].child.kill('SIGUSR2');
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
    const faultEnd = runStart + o.durationS * 1000 - (leaseMs + tickMaxMs + 500); // leave time to recover
    // Faults start once a first leader holds the lease (workers take a second or two to load).
    for (const settle = Date.now() + 15_000; Date.now() < settle && (await ctx.leaderSlot().catch(() => undefined)) === undefined; ) await sleep(200);
    // Ctrl-C (or SIGTERM): stop injecting, then shut down, check and report what ran so far.
    let interrupted = false;
    const interrupt = () => {
      interrupted = true;
      say('chaos: interrupted — stopping the workers and checking what ran so far');
    };
    process.once('SIGINT', interrupt);
    process.once('SIGTERM', interrupt);
    const pause = async (/** @type {number} */ ms) => {
      for (const until = Date.now() + ms; !interrupted && Date.now() < until; ) await sleep(Math.min(200, until - Date.now()));
    };
    while (types.length && Date.now() < faultEnd && !interrupted) {
      const type = types[Math.floor(random() * types.length)];
      const fault = await inject(type, ctx);
      faults.push(fault);
      fs.appendFileSync(faultLog, `${JSON.stringify(fault)}\n`);
      say(`chaos: +${((fault.start - runStart) / 1000).toFixed(1)} s ${fault.type}: ${fault.detail ?? ''}`);
      await pause(Math.max(0, Math.min(faultEnd - Date.now(), 300 + random() * 1500)));
    }
    await pause(Math.max(0, runStart + o.durationS * 1000 - Date.now()));
    process.removeListener('SIGINT', interrupt);
    process.removeListener('SIGTERM', interrupt);
  } finally {
    stopAt = Date.now();
    for (const proxy of proxies) proxy?.heal();
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
  const result = check({ ledger, events, faults, ns: o.ns, leaseMs, tickMaxMs, slackMs: o.slackMs, clockToleranceMs: o.clockToleranceMs, runStart, stopAt });
  if (unexpectedExits.length) {
    result.checks.push({ id: 'e2', name: 'no worker exited on its own', ok: false, detail: unexpectedExits.join('; '), violations: unexpectedExits });
    result.ok = false;
  }

  const slotOfCandidate = new Map();
  for (const e of events) if (e.ev === 'start') slotOfCandidate.set(e.candidateId, e.slot);
  const svg = renderTimeline({
    title: `gemstone-utils chaos: ${kind}, ${o.workers} workers, lease ${o.leaseS} s, ${Math.round((stopAt - runStart) / 1000)} s, seed ${seed} — ${result.ok ? 'PASS' : 'FAIL'}`,
    workers: o.workers,
    runStart,
    stopAt,
    leaderships: result.leaderships,
    gaps: result.gaps,
    faults,
    slotOf: (id) => slotOfCandidate.get(id),
    writes: ledger.filter((r) => r.kind === 'write'),
    fenced: events.filter((e) => e.ev === 'action-fenced'),
  });
  fs.writeFileSync(path.join(outDir, 'timeline.svg'), svg);
  fs.writeFileSync(path.join(outDir, 'ledger.json'), JSON.stringify(ledger));
  const summary = {
    ok: result.ok,
    kind,
    seed,
    workers: o.workers,
    leaseS: o.leaseS,
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

module.exports = { runChaos, DEFAULTS };
