// @ts-check
'use strict';
/**
 * The fault injector: one fault at a time, chosen at random (seeded), aimed at the current leader
 * more often than not — that is where faults bite. Each fault returns the span it was active.
 */
const { execSync } = require('child_process');

/** Every fault type; which ones apply depends on the database (see {@link faultsFor}). */
const FAULT_TYPES = ['kill', 'pause', 'stall-before-fence', 'stall-in-fence', 'conn-kill', 'partition-cut', 'partition-hang', 'delay', 'db-restart'];

/**
 * The faults that make sense for a database: SQLite has no server connections to kill or
 * partition; a database restart only when asked (it disturbs everything else on the server).
 * @param {import('./database').Kind} kind @param {{ dbRestart: boolean, only?: string[] }} options
 */
function faultsFor(kind, { dbRestart, only }) {
  const everywhere = ['kill', 'pause', 'stall-before-fence', 'stall-in-fence'];
  let types = kind === 'sqlite' ? everywhere : [...everywhere, 'conn-kill', 'partition-cut', 'partition-hang', 'delay'];
  if (dbRestart && kind !== 'sqlite') types.push('db-restart');
  if (only && only.length) types = types.filter((t) => only.includes(t));
  return types;
}

/**
 * The fault that opens every run: one that certainly costs the leader its lease (a SIGKILL, else a
 * pause longer than the lease), so no seed can yield a run where leadership never changes hands.
 * Undefined when the allowed faults include neither.
 * @param {string[]} types
 */
function leaderCostingFault(types) {
  return ['kill', 'pause'].find((t) => types.includes(t));
}

/**
 * Draws fault types from a shuffled bag, refilled when empty: every allowed type runs once before
 * any runs twice, so a short run still covers the types it was given. The first bag leaves out the
 * types the schedule already ran (`done`: the opening fault, the guaranteed stalls).
 * @param {string[]} types @param {() => number} random
 */
function faultBag(types, random) {
  /** @type {string[]} */
  let bag = [];
  let first = true;
  return (/** @type {string[]} */ done = []) => {
    if (!bag.length) {
      bag = first ? types.filter((t) => !done.includes(t)) : [];
      first = false;
      if (!bag.length) bag = [...types];
      for (let i = bag.length - 1; i > 0; i--) {
        const j = Math.floor(random() * (i + 1));
        [bag[i], bag[j]] = [bag[j], bag[i]];
      }
    }
    return /** @type {string} */ (bag.pop());
  };
}

/** A small seeded PRNG (mulberry32): the fault schedule of a run can be replayed by its seed. */
function rng(seed) {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const sleep = (/** @type {number} */ ms) => new Promise((resolve) => setTimeout(resolve, ms));

/** How long a worker keeps a stall order for its next fenced action (worker.js drops it after). */
const STALL_ARM_MS = 500;

/** The stalls a run's schedule guarantees (when its faults allow them): (f) and (i) need both. */
const GUARANTEED_STALLS = ['stall-in-fence', 'stall-before-fence'];

/**
 * @typedef {{
 *   kind: import('./database').Kind,
 *   workers: number,
 *   leaseMs: number,
 *   random: () => number,
 *   leaderSlot: () => Promise<number | undefined>,
 *   signal: (slot: number, signal: NodeJS.Signals) => void,
 *   stall: (slot: number, where: 'before-fence' | 'in-fence', ms: number) => number,
 *   stallStarted: (slot: number, where: 'before-fence' | 'in-fence', armedAt: number, timeoutMs: number) => Promise<import('./checker').WorkerEvent | undefined>,
 *   actionOutcome: (stall: import('./checker').WorkerEvent, timeoutMs: number) => Promise<import('./checker').WorkerEvent | undefined>,
 *   tickMaxMs: number,
 *   workMs: number,
 *   killAndRestart: (slot: number, downMs: number) => Promise<void>,
 *   proxy: (slot: number) => import('./proxy').ChaosProxy | undefined,
 *   killConnections: (slots: number[]) => Promise<number>,
 *   restartDatabase: () => Promise<void>,
 * }} FaultContext
 */

/**
 * Runs one fault of `type`; resolves to what happened, once it is over (healed). `atLeader` aims it
 * at the current leader whenever there is one, instead of at random.
 * @param {string} type @param {FaultContext} ctx @param {{ atLeader?: boolean }} [options]
 * @returns {Promise<import('./checker').Fault>}
 */
async function inject(type, ctx, { atLeader = false } = {}) {
  const between = (/** @type {number} */ lo, /** @type {number} */ hi) => lo + (hi - lo) * ctx.random();
  const leader = await ctx.leaderSlot().catch(() => undefined);
  // Stalls aim at the leader: only a leader runs fenced actions.
  const aimAtLeader = leader !== undefined && (atLeader || type.startsWith('stall') || ctx.random() < 0.6);
  const slot = aimAtLeader ? /** @type {number} */ (leader) : Math.floor(ctx.random() * ctx.workers);
  const target = `${slot === leader ? 'leader ' : ''}w${slot}`;
  const start = Date.now();
  switch (type) {
    case 'kill': {
      await ctx.killAndRestart(slot, between(200, 1000));
      return { type, slot, start, end: Date.now(), detail: `SIGKILL ${target}, restarted` };
    }
    case 'pause': {
      const ms = between(1.3, 2.5) * ctx.leaseMs;
      ctx.signal(slot, 'SIGSTOP');
      await sleep(ms);
      ctx.signal(slot, 'SIGCONT');
      return { type, slot, start, end: Date.now(), detail: `SIGSTOP ${target} for ${Math.round(ms)} ms` };
    }
    case 'stall-before-fence':
    case 'stall-in-fence': {
      // Long enough for another worker to take over, had nothing held the lease: lease + 2 ticks + 0.5 s.
      const ms = Math.round(ctx.leaseMs + 2 * ctx.tickMaxMs + 500);
      const where = type === 'stall-before-fence' ? 'before-fence' : 'in-fence';
      const armedAt = ctx.stall(slot, where, ms);
      // The worker takes the order at its next fenced action, within its arming window; a worker
      // that is not leading (any more) has none, and the order lapses.
      const stall = await ctx.stallStarted(slot, where, armedAt, STALL_ARM_MS + ctx.workMs + 1000);
      if (!stall) return { type, slot, start, end: Date.now(), detail: `${target}: no fenced action to stall ${where} (order lapsed)`, took: false };
      // Over when the stalled action is: its outcome is what (f) judges.
      const outcome = await ctx.actionOutcome(stall, ms + 15_000);
      const place = where === 'before-fence' ? 'before assertLeader' : 'after assertLeader, before its write';
      return { type, slot, start, end: Date.now(), detail: `${target} blocks ${ms} ms ${place} (seq ${stall.seq}): ${outcome ? outcome.ev : 'no outcome'}`, took: true };
    }
    case 'conn-kill': {
      const all = ctx.random() < 0.3;
      const slots = all ? [...Array(ctx.workers).keys()] : [slot];
      const killed = await ctx.killConnections(slots);
      return { type, slot: all ? null : slot, start, end: Date.now(), detail: `${killed} connections of ${all ? 'all workers' : target}` };
    }
    case 'partition-cut':
    case 'partition-hang':
    case 'delay': {
      const proxy = ctx.proxy(slot);
      if (!proxy) throw new Error(`chaos: no proxy for worker ${slot}`);
      const ms = between(1, 2.5) * ctx.leaseMs;
      let detail = `${type === 'partition-cut' ? 'cut' : type === 'partition-hang' ? 'hang' : ''} ${target} for ${Math.round(ms)} ms`;
      if (type === 'partition-cut') proxy.cut();
      else if (type === 'partition-hang') proxy.hang();
      else {
        const delay = Math.round(between(50, 400));
        proxy.delay(delay);
        detail = `delay ${target} by ${delay} ms each way for ${Math.round(ms)} ms`;
      }
      await sleep(ms);
      proxy.heal();
      return { type, slot, start, end: Date.now(), detail };
    }
    case 'db-restart': {
      await ctx.restartDatabase();
      return { type, slot: null, start, end: Date.now(), detail: 'database server restarted' };
    }
    default:
      throw new Error(`chaos: unknown fault ${type}`);
  }
}

/** Runs a shell command (the database restart), failing loudly. @param {string} command */
function sh(command) {
  // Its output goes to stderr: stdout carries the run's JSON summary.
  execSync(command, { stdio: ['ignore', 2, 2], shell: '/bin/bash', timeout: 120_000 });
}

module.exports = { FAULT_TYPES, GUARANTEED_STALLS, STALL_ARM_MS, faultBag, faultsFor, inject, leaderCostingFault, rng, sh };
