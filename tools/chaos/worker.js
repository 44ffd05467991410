// @ts-check
'use strict';
/**
 * One chaos worker: a LeaderElector with a short lease, doing leader-only work through the
 * fencing pattern — in one transaction `assertLeader(id, { ns, term, session })`, then append
 * (worker, term, seq) to the ledger. Every step goes to a JSON-lines log, written synchronously
 * so a SIGKILL loses nothing that happened before it.
 *
 * Environment: CHAOS_URL (through this worker's proxy), CHAOS_SLOT, CHAOS_INCARNATION,
 * CHAOS_CANDIDATE_ID, CHAOS_NS, CHAOS_LEASE_SECONDS, CHAOS_WORK_MS, CHAOS_LOG, CHAOS_CONTROL,
 * CHAOS_APP_TX (SQLite: the elector shares its DataSource with application transactions),
 * CHAOS_PRIORITY (the elector's priority, default 0), CHAOS_ELIGIBLE ('0': observe, never lead),
 * CHAOS_NAMESPACES (group mode: a JSON array of namespaces; the worker runs a LeaderElectorGroup
 * over them and makes its fenced writes per namespace it leads, each with that lease's term),
 * CHAOS_BALANCE ('1': the group balances its namespaces with the other workers),
 * CHAOS_SCHEDULE_MS (a schedule every so many ms whose job writes a ledger row in
 * `run.transaction`; none without it), CHAOS_SCHEDULE_NAMESPACES (group mode: in how many of the
 * namespaces, the first ones; default all).
 *
 * The loop's callbacks and events are logged per leadership (onStartedLeading, 'elected',
 * onStoppedLeading, 'demoted', each with whether the lease's signal had aborted), and each leader
 * work item as it starts (`work`: its lease's signal and the loop's last successful tick), for the
 * checker's (n) and (o).
 *
 * CHAOS_GUARDED ('1'): the run's guarded ledger (`chaos_guarded`, guarded for the namespace) takes
 * each action's row first, and half of the actions skip `assertLeader` (never a stalled one): the
 * database must refuse every one of those, so only fenced actions commit.
 *
 * A stall order the runner writes to CHAOS_CONTROL (`{ where, ms, armedAt }`) makes the next fenced action block
 * its whole process (like a long GC pause) just before `assertLeader` or just after it.
 */
const fs = require('fs');
const { initDb, LeaderElector, LeaderElectorGroup, ElectionService, NotLeaderError } = require('gemstone-utils');
const { kindOfUrl, ledgerInsert, jobInsert, guardedInsert, isGuardRefusal } = require('./database');
const { SCHEDULE, ledgerJob } = require('./scheduled-job');
const { opRecorder } = require('./op-recorder');

const env = process.env;
const url = /** @type {string} */ (env.CHAOS_URL);
const slot = Number(env.CHAOS_SLOT);
const incarnation = Number(env.CHAOS_INCARNATION);
const candidateId = /** @type {string} */ (env.CHAOS_CANDIDATE_ID);
const ns = env.CHAOS_NS || 'chaos';
const leaseSeconds = Number(env.CHAOS_LEASE_SECONDS || 2);
const workMs = Number(env.CHAOS_WORK_MS || 100);
const logFile = /** @type {string} */ (env.CHAOS_LOG);
const controlFile = env.CHAOS_CONTROL;
/** Sabotage for the harness's own test: skip assertLeader, so the checker must find stale writes. */
const unfenced = env.CHAOS_UNFENCED === '1';
/** The guarded ledger: every action writes it first; half of them skip the fence (see the header). */
const guarded = env.CHAOS_GUARDED === '1';
/**
 * SQLite only: one DataSource (one connection) for the elector and the application, as a small
 * app has it, and the app keeps running its own transactions that roll back at random and writes
 * outside any transaction, while the elector ticks.
 */
const appTransactions = env.CHAOS_APP_TX === '1';
/** busy_timeout of the app's connection in CHAOS_APP_TX mode (see `main`). */
const APP_BUSY_TIMEOUT_MS = 20_000;
const kind = kindOfUrl(url);
const priority = Number(env.CHAOS_PRIORITY || 0);
const eligible = env.CHAOS_ELIGIBLE !== '0';
/** @type {string[] | undefined} group mode: the namespaces of the worker's LeaderElectorGroup */
const namespaces = env.CHAOS_NAMESPACES ? JSON.parse(env.CHAOS_NAMESPACES) : undefined;
const balance = env.CHAOS_BALANCE === '1';
/** The period of the schedule each namespace runs (0: none). */
const scheduleMs = Number(env.CHAOS_SCHEDULE_MS || 0);
/** The namespaces that run it. */
const scheduled = namespaces ? namespaces.slice(0, Number(env.CHAOS_SCHEDULE_NAMESPACES || namespaces.length)) : [ns];
/** The operation history for the linearizability checker (CHAOS_OPS_LOG; none without it). */
const ops = opRecorder(env.CHAOS_OPS_LOG, { process: `w${slot}-${incarnation}`, candidateId, slot });

/** @param {string} ev @param {Record<string, unknown>} [fields] */
function log(ev, fields = {}) {
  fs.appendFileSync(logFile, `${JSON.stringify({ t: Date.now(), ev, slot, incarnation, ...fields })}\n`);
}

/** @param {unknown} error */
function describe(error) {
  const e = /** @type {{ message?: string, cause?: { message?: string, code?: string } }} */ (error ?? {});
  const cause = e.cause?.message ? ` <- ${e.cause.code ? `${e.cause.code} ` : ''}${e.cause.message}` : '';
  return `${e.message ?? String(error)}${cause}`.slice(0, 300);
}

const sleep = (/** @type {number} */ ms) => new Promise((resolve) => setTimeout(resolve, ms));

/** @type {{ where: 'before-fence' | 'in-fence', ms: number, until: number } | null} */
let armedStall = null;
/** An armed stall is dropped if no action comes soon (this worker lost leadership meanwhile): the injector's fault window is over by then. */
const { STALL_ARM_MS } = require('./faults');
/** `armedAt` of the last order read from CHAOS_CONTROL: each order arms once. */
let lastOrder = 0;

/**
 * Reads a stall order (`{ where, ms, armedAt }`) the runner wrote to CHAOS_CONTROL. Polled at each
 * fenced action rather than signalled: a signal reaching a worker that was just restarted, before
 * it could install a handler, would kill it (SIGUSR2's default action) instead of stalling it.
 */
function readStallOrder() {
  if (!controlFile) return;
  let order;
  try {
    order = JSON.parse(fs.readFileSync(controlFile, 'utf8'));
  } catch (error) {
    if (/** @type {{ code?: string }} */ (error).code !== 'ENOENT') log('control-error', { message: describe(error) });
    return;
  }
  if (order.armedAt === lastOrder) return;
  lastOrder = order.armedAt;
  if (Date.now() <= order.armedAt + STALL_ARM_MS) armedStall = { where: order.where, ms: order.ms, until: order.armedAt + STALL_ARM_MS };
}

/** Blocks the event loop (timers, the elector, everything) if a stall is armed for `where`. */
function maybeStall(/** @type {'before-fence' | 'in-fence'} */ where, /** @type {number} */ seq, /** @type {string | undefined} */ actionNs) {
  readStallOrder();
  if (armedStall && Date.now() > armedStall.until) {
    log('stall-dropped', { where: armedStall.where });
    armedStall = null;
  }
  if (armedStall?.where !== where) return false;
  const { ms } = armedStall;
  armedStall = null;
  log('stall', { where, ms, seq, ...(actionNs === undefined ? {} : { ns: actionNs }) });
  Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, ms);
  log('stall-end', { where, seq, ...(actionNs === undefined ? {} : { ns: actionNs }) });
  return true;
}

/** initDb through the proxy, retried: the worker may start during a partition. */
async function connect() {
  for (let attempt = 0; ; attempt++) {
    try {
      return await initDb(url, { createTables: false });
    } catch (error) {
      log('connect-error', { attempt, message: describe(error) });
      await sleep(250);
    }
  }
}

async function main() {
  log('start', { pid: process.pid, candidateId, priority, eligible });
  ops.note('start', { candidateId, slot, namespaces: namespaces ?? [ns] });
  const electorDs = await connect();
  // SQLite: by default the fenced work gets a DataSource of its own (a second connection; the
  // database write lock orders the two). With CHAOS_APP_TX it shares the elector's connection.
  const workDs = kind === 'sqlite' && !appTransactions ? await connect() : electorDs;
  if (appTransactions) {
    // The app's own writes wait for another process's write lock inside the driver (busy_timeout;
    // the library's never do). A faulted worker holds that lock for up to ~4 s (stalled inside
    // its fence, or SIGSTOPped), and the writers queued behind it take their turns after it:
    // initDb's default of 5 s is too tight for that, so this app picks a longer one.
    await workDs.query(`PRAGMA busy_timeout = ${APP_BUSY_TIMEOUT_MS}`);
  }
  const service = new ElectionService(workDs, { expireSeconds: leaseSeconds });
  const insert = ledgerInsert(kind);
  const guardedRow = guarded ? guardedInsert(kind) : '';

  // The loop's callbacks and events per leadership, for the checker's (n) and (o): each Lease
  // object is one leadership (a term granted twice is two), numbered in the order first seen, and
  // each step records whether its signal had aborted.
  /** @type {WeakMap<object, number>} */
  const leaseIds = new WeakMap();
  let leaseCount = 0;
  /** @param {import('gemstone-utils').Lease} lease */
  const idOf = (lease) => {
    let id = leaseIds.get(lease);
    if (id === undefined) leaseIds.set(lease, (id = ++leaseCount));
    return id;
  };
  /** @param {import('gemstone-utils').Lease} lease */
  const leaseTag = (lease) => ({ ...(namespaces ? { ns: lease.ns } : {}), term: lease.term, lid: idOf(lease), aborted: lease.signal.aborted });
  /** The leadership each onStartedLeading began last, by `ns#term`. @type {Map<string, number>} */
  const startedLid = new Map();
  /**
   * Wall time of this loop's last tick that succeeded (single mode: that acquired or renewed):
   * the local deadline in force after it starts before the tick was sent, so it ends no later
   * than this + the lease. (o) judges each leader work item's start against that bound.
   */
  let tickAt = 0;
  const callbacks = {
    onStartedLeading: (/** @type {import('gemstone-utils').Lease} */ lease) => {
      startedLid.set(`${lease.ns}#${lease.term}`, idOf(lease));
      log('cb-started', leaseTag(lease));
    },
    onStoppedLeading: (/** @type {import('gemstone-utils').Lease} */ lease) => log('cb-stopped', leaseTag(lease)),
  };

  // Every tick's duration, for check (d): a slow machine's ticks widen its leaderless bound.
  const logTick = (/** @type {{ durationSeconds: number, error: unknown }} */ tick) => log('tick', { ms: Math.round(tick.durationSeconds * 1000), failed: tick.error !== null });
  // Group mode: every event names its namespace (the checker splits the logs by it).
  const group = namespaces ? new LeaderElectorGroup({ dataSource: electorDs, namespaces, candidateId, expireSeconds: leaseSeconds, priority, eligible, balance, ...callbacks }) : undefined;
  const single = namespaces ? undefined : new LeaderElector({ dataSource: electorDs, ns, candidateId, expireSeconds: leaseSeconds, priority, eligible, ...callbacks });
  const elector = /** @type {import('events').EventEmitter & { start(): Promise<void>, stop(): Promise<void> }} */ (group ?? single);
  if (group) {
    group.on('elected', (lease) => log('elected', leaseTag(lease)));
    group.on('demoted', (lease, reason) => log('demoted', { ...leaseTag(lease), reason }));
    group.on('leader', (/** @type {string} */ leaderNs, /** @type {string | null} */ leaderId, /** @type {number | null} */ term) => log('leader', { ns: leaderNs, leaderId, term }));
    group.on('tick', (tick) => {
      if (tick.error === null) tickAt = Date.now();
      logTick(tick);
    });
  } else if (single) {
    single.on('elected', (lease) => log('elected', leaseTag(lease)));
    single.on('demoted', (lease, reason) => log('demoted', { ...leaseTag(lease), reason }));
    single.on('leader', (leaderId, term) => log('leader', { leaderId, term }));
    single.on('tick', (tick) => {
      if (tick.outcome === 'acquired' || tick.outcome === 'renewed') tickAt = Date.now();
      logTick(tick);
    });
  }
  /**
   * A leader work item starts with `lease` (logged before anything else of it runs). A write gets
   * the leadership's own Lease (one never started is reported as such); a scheduled job gets a
   * lease of its own whose signal also aborts when its schedule is cancelled, so it is matched to
   * the leadership its onStartedLeading began last under that term.
   * @param {import('gemstone-utils').Lease} lease @param {'write' | 'job'} what
   */
  const workStarts = (lease, what) => {
    const lid = leaseIds.get(lease) ?? (what === 'job' ? startedLid.get(`${lease.ns}#${lease.term}`) : undefined);
    log('work', { ...(namespaces ? { ns: lease.ns } : {}), term: lease.term, lid, aborted: lease.signal.aborted, what, tickAt });
  };
  elector.on('error', (error) => log('error', { message: describe(error) }));
  ops.follow(elector, namespaces ? undefined : ns);
  if (scheduleMs) {
    const job = ledgerJob({ insert: jobInsert(kind), candidateId, slot, log, ops, describe, started: (run) => workStarts(run.lease, 'job') });
    // catchUp 'all': every slot that came due while nobody led is run, so each slot between the first and the last is claimed.
    const options = { name: SCHEDULE, everyMs: scheduleMs, catchUp: /** @type {const} */ ('all') };
    for (const scheduleNs of scheduled) {
      if (group) group.schedule(scheduleNs, options, job);
      else single?.schedule(options, job);
    }
  }

  let seq = 0;
  let running = true;

  /**
   * @param {{ ns?: string, term: number }} lease
   * @param {number} decidedAt wall clock just before `runIfLeader` checked leadership
   */
  async function fencedAppend(lease, decidedAt) {
    return appWork(() => fencedAppendNow(lease, decidedAt));
  }

  /** @param {{ ns?: string, term: number }} lease @param {number} decidedAt */
  async function fencedAppendNow(lease, decidedAt) {
    const startedAt = Date.now();
    const mySeq = ++seq;
    // Group mode: the lease's own namespace, in the fence and in the write (and in every log line).
    const actionNs = namespaces ? /** @type {string} */ (lease.ns) : ns;
    const tag = namespaces ? { ns: actionNs } : {};
    log('action-start', { ...tag, term: lease.term, seq: mySeq, decidedAt, at: startedAt });
    const runner = workDs.createQueryRunner();
    ops.writeInvoked(actionNs, lease.term, mySeq);
    try {
      await runner.connect();
      await runner.startTransaction();
      const stalled = maybeStall('before-fence', mySeq, namespaces ? actionNs : undefined);
      // Guarded mode: code that forgot the fence, half of the time (a stalled action keeps it: the
      // checker expects its fence's outcome).
      const skipped = guarded && !unfenced && !stalled && Math.random() < 0.5;
      if (skipped) log('fence-skipped', { ...tag, term: lease.term, seq: mySeq });
      if (!unfenced && !skipped) await service.assertLeader(candidateId, { ns: actionNs, term: lease.term, session: runner });
      if (!skipped) maybeStall('in-fence', mySeq, namespaces ? actionNs : undefined);
      if (guarded) await runner.query(guardedRow, [actionNs, lease.term, candidateId, slot, mySeq]);
      await runner.query(insert, [actionNs, lease.term, candidateId, slot, mySeq]);
      await runner.commitTransaction();
      ops.writeReturned(mySeq, 'committed');
      log('action-commit', { ...tag, term: lease.term, seq: mySeq });
    } catch (error) {
      if (runner.isTransactionActive) await runner.rollbackTransaction().catch(() => undefined);
      if (error instanceof NotLeaderError) {
        ops.writeReturned(mySeq, 'refused', { current: error.term, leaderId: error.leaderId });
        log('action-fenced', { ...tag, term: lease.term, seq: mySeq, current: error.term, leaderId: error.leaderId });
      } else if (guarded && isGuardRefusal(error)) {
        // No effect: nothing of the transaction committed (not a lease observation either).
        ops.writeReturned(mySeq, 'guard-refused');
        log('action-guard-refused', { ...tag, term: lease.term, seq: mySeq });
      } else {
        ops.writeReturned(mySeq, 'error');
        log('action-error', { ...tag, term: lease.term, seq: mySeq, message: describe(error) });
      }
    } finally {
      await runner.release().catch(() => undefined);
    }
  }

  // The application's transactions on a shared SQLite connection take turns (two transactions of
  // one connection would nest); the elector is not part of that queue — it must cope by itself.
  /** @type {Promise<unknown>} */
  let appQueue = Promise.resolve();
  /** @template T @param {() => Promise<T>} work @returns {Promise<T>} */
  function appWork(work) {
    const result = appQueue.then(work);
    appQueue = result.catch(() => undefined);
    return result;
  }
  const ROLLBACK = new Error('the app rolls back');
  let appCommits = 0;
  let appRollbacks = 0;
  async function appNoise() {
    while (running) {
      const roll = Math.random();
      await appWork(async () => {
        if (roll < 0.2) {
          // A write outside any transaction (what save() of one row amounts to).
          await workDs.query('INSERT INTO chaos_app (worker, note) VALUES (?, ?)', [slot, 'autocommit']);
          return;
        }
        await workDs
          .transaction(async (manager) => {
            await manager.query('INSERT INTO chaos_app (worker, note) VALUES (?, ?)', [slot, 'in transaction']);
            await sleep(Math.random() * 40); // the app awaits something with its transaction open
            await manager.query('UPDATE chaos_app SET note = ? WHERE worker = ? AND id = (SELECT MAX(id) FROM chaos_app WHERE worker = ?)', ['updated', slot, slot]);
            if (roll < 0.6) throw ROLLBACK;
          })
          .then(() => appCommits++)
          .catch((error) => {
            if (error === ROLLBACK) appRollbacks++;
            else log('app-error', { message: describe(error) });
          });
      });
      await sleep(Math.random() * 20);
    }
  }

  const stop = async () => {
    if (!running) return;
    running = false;
    log('stopping', { appCommits, appRollbacks });
    ops.note('stopping');
    await elector.stop();
    ops.note('stopped');
    log('stopped');
    await Promise.allSettled([electorDs.destroy(), workDs === electorDs ? undefined : workDs.destroy()]);
    process.exit(0);
  };
  process.on('SIGTERM', () => void stop());

  await elector.start();
  log('started', group ? { leases: group.leases.size } : { isLeader: single?.isLeader });
  if (appTransactions) void appNoise();
  while (running) {
    if (group) {
      // One fenced write per namespace this worker leads, each under its own lease's term.
      // The group's own word decides (isLeader ends a leadership past its deadline on the spot),
      // and the work runs with the lease it names now: (o) checks that lease was live.
      for (const leaseNs of namespaces ?? []) {
        if (!running) break;
        const decidedAt = Date.now();
        if (!group.isLeader(leaseNs)) continue;
        const lease = /** @type {import('gemstone-utils').Lease} */ (group.lease(leaseNs));
        workStarts(lease, 'write');
        await fencedAppend(lease, decidedAt);
      }
    } else if (single) {
      const decidedAt = Date.now();
      await single.runIfLeader((lease) => {
        workStarts(lease, 'write');
        return fencedAppend(lease, decidedAt);
      });
    }
    await sleep(workMs);
  }
}

// Workers run in their own process group; if the runner dies without stopping them (SIGKILL),
// they must not run on forever.
const runner = process.ppid;
setInterval(() => {
  if (process.ppid !== runner) process.exit(3);
}, 1000).unref();

process.on('unhandledRejection', (error) => {
  log('unhandled-rejection', { message: describe(error) });
});
main().catch((error) => {
  log('fatal', { message: describe(error) });
  process.exit(1);
});
