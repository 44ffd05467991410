// Every loop of the library under churn in one process, then stopped, its DataSources destroyed,
// and a few tick intervals waited: what a user's shutdown (`await elector.stop(); await
// dataSource.destroy()`) must survive. Run in a process of its own so that an unhandled rejection
// is seen as Node sees it (not through a test runner's handlers).
//
// Usage (from the repo root): node -r ./test/support/typeorm-line.js test/support/children/after-stop.js '<json>'
//   json: { options: DataSourceOptions (no entities, no logger), kind, shared, url }
// Prints one JSON line (see what `run` returns). AFTER_STOP_STACKS=1 records the stack of every
// statement, to find which code sent one.
'use strict';
const { performance } = require('perf_hooks');
const { randomUUID } = require('crypto');
const { initDb, ElectionService, LeaderElector, LeaderElectorGroup, watch, LISTEN_APPLICATION_NAME } = require('gemstone-utils');
const { instrumentElector } = require('gemstone-utils/metrics');
const { Registry } = require('prom-client');

const config = JSON.parse(process.argv[2]);
const EXPIRE = 3;
const INTERVAL = 200;
/** Long enough for every timer a loop could have left (ticks, polls, retries, probes) to fire. */
const AFTER_MS = 2_500;
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));
async function until(predicate, timeoutMs = 10_000) {
  const started = now();
  while (!predicate()) {
    if (now() - started > timeoutMs) throw new Error(`timed out waiting for ${predicate}`);
    await sleep(5);
  }
}
const now = () => performance.now();

/** Every statement sent through a DataSource's logger: [at, DataSource name, text, error]. */
const statements = [];
function recordingLogger(name) {
  return {
    logQuery: (query) => {
      if (!(releasing && /^COMMIT/.test(query))) {
        statements.push({ at: now(), ds: name, text: String(query).slice(0, 160), ...(process.env.AFTER_STOP_STACKS ? { stack: new Error().stack } : {}) });
      }
    },
    logQueryError: (error, query) =>
      statements.push({
        at: now(),
        ds: name,
        text: String(query).slice(0, 160),
        error: String((error && error.message) || error),
        ...(process.env.AFTER_STOP_STACKS ? { stack: new Error().stack } : {}),
      }),
    logQuerySlow() {},
    logSchemaBuild() {},
    logMigration() {},
    log() {},
  };
}

const unhandled = [];
process.on('unhandledRejection', (reason) => unhandled.push({ at: now(), error: String((reason && reason.stack) || reason) }));
process.on('uncaughtException', (error) => unhandled.push({ at: now(), error: `uncaught: ${String((error && error.stack) || error)}` }));

/** 'error' events of every loop: [at, loop, phase, message]. */
const errors = [];
const demotions = [];
function observe(name, loop) {
  loop.on('error', (error) => errors.push({ at: now(), loop: name, phase: error.phase, message: String(error.message).slice(0, 300) }));
  loop.on('demoted', (lease, reason) => demotions.push({ loop: name, ns: lease.ns, reason }));
  return loop;
}

const sources = new Map();
async function connect(name) {
  if (!config.shared && sources.size > 0) return [...sources.values()][0];
  const dataSource = await initDb({ ...config.options, logger: recordingLogger(name) });
  sources.set(name, dataSource);
  return dataSource;
}

/** Candidate rows expired a day ago and history rows of terms ended a day ago: work for the loops' prunes. */
async function seedPrunable(dataSource, rows, prefix = `prunable-${randomUUID().slice(0, 8)}`) {
  const kind = config.kind;
  const ago = kind === 'postgres' ? "clock_timestamp() - interval '1 day'" : kind === 'mariadb' ? 'UTC_TIMESTAMP(6) - INTERVAL 1 DAY' : "strftime('%Y-%m-%d %H:%M:%f', 'now', '-1 day')";
  const p = kind === 'postgres' ? (() => { let i = 0; return () => `$${++i}`; }) : () => () => '?';
  for (let done = 0; done < rows; done += 250) {
    const n = Math.min(250, rows - done);
    let next = p();
    const candidates = Array.from({ length: n }, () => `(${next()}, ${next()}, ${ago}, ${ago})`).join(', ');
    await dataSource.query(
      `INSERT INTO gemstone_election_candidate (ns, candidate_id, last_heartbeat_at, expires_at) VALUES ${candidates}`,
      Array.from({ length: n }, () => [prefix, randomUUID()]).flat(),
    );
    next = p();
    const history = Array.from({ length: n }, () => `(${next()}, ${next()}, ${next()}, ${ago}, ${ago}, 'resigned')`).join(', ');
    await dataSource.query(
      `INSERT INTO gemstone_election_history (ns, term, leader_id, acquired_at, ended_at, end_reason) VALUES ${history}`,
      Array.from({ length: n }, (_, i) => [prefix, done + i + 1, randomUUID()]).flat(),
    );
  }
  return prefix;
}

/**
 * Makes the late elector's work wait on its DataSource `d` while its stop runs, so that its bounded
 * stop gives up on it: PostgreSQL and MariaDB, another connection locks the rows its prune deletes;
 * SQLite, a transaction held open on `d`'s shared connection (a read: other connections write on).
 * Returns the function that lets go.
 */
async function hold(d, prefix) {
  const own = config.kind === 'sqlite' ? d : await connect('x');
  const runner = own.createQueryRunner();
  await runner.connect();
  // READ COMMITTED: the held rows only, no gap locks on live rows next to them (MariaDB).
  await runner.startTransaction(config.kind === 'sqlite' ? undefined : 'READ COMMITTED');
  if (config.kind === 'sqlite') await runner.query('SELECT 1 AS held');
  else await runner.query(`SELECT candidate_id FROM gemstone_election_candidate WHERE ns = ${config.kind === 'postgres' ? '$1' : '?'} FOR UPDATE`, [prefix]);
  return async () => {
    releasing = true;
    await runner.commitTransaction();
    releasing = false;
    await runner.release();
  };
}
/** The test's own COMMIT of {@link hold} on `d` is not the library's. */
let releasing = false;

/** Consumes a watch in the background; `done` settles when its loop ended. */
function consume(name, iterable, { breakAfter } = {}) {
  const seen = [];
  const done = (async () => {
    for await (const change of iterable) {
      seen.push([change.leaderId, change.term]);
      if (breakAfter && breakAfter()) break;
    }
  })().then(
    () => ({ name, endedAt: now(), seen: seen.length }),
    (error) => {
      errors.push({ at: now(), loop: name, phase: 'watch', message: String(error && error.message) });
      return { name, endedAt: now(), seen: seen.length };
    },
  );
  return done;
}

async function listenerConnections() {
  if (config.kind !== 'postgres') return null;
  const { Client } = require('pg');
  const client = new Client({ connectionString: config.url });
  await client.connect();
  try {
    const { rows } = await client.query(
      'SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = current_database() AND application_name = $1 AND pid <> pg_backend_pid()',
      [LISTEN_APPLICATION_NAME],
    );
    return rows[0].n;
  } finally {
    await client.end();
  }
}

async function run() {
  const ns = `lifecycle-${randomUUID().slice(0, 8)}`;
  const groupNs = Array.from({ length: 8 }, (_, i) => `${ns}-g${i}`);
  const retention = { candidateRetentionSeconds: 60, historyRetentionSeconds: 60 };
  const a = await connect('a');
  const b = await connect('b');
  const c = await connect('c');
  await seedPrunable(a, 1500);
  const registry = new Registry();

  const elector = (name, dataSource, priority, extra = {}) => {
    const e = observe(
      name,
      new LeaderElector({
        dataSource,
        ns,
        expireSeconds: EXPIRE,
        intervalMs: INTERVAL,
        priority,
        ...retention,
        // Leader work that lasts until the lease ends: stop and hand-over wait for it.
        onStartedLeading: (lease) => new Promise((resolve) => lease.signal.addEventListener('abort', () => setTimeout(resolve, 5), { once: true })),
        ...extra,
      }),
    );
    instrumentElector(e, { registry });
    return e;
  };
  const group = (name, dataSource, namespaces) =>
    observe(name, new LeaderElectorGroup({ dataSource, namespaces, balance: true, expireSeconds: EXPIRE, intervalMs: INTERVAL, ...retention }));

  // Observers first, so they see the churn.
  const aborter = new AbortController();
  const watched = [
    consume('watch-abort', watch({ dataSource: a, ns, pollMs: 100, signal: aborter.signal })),
  ];
  const returned = new ElectionService(c).watch({ ns: groupNs[0], pollMs: 100 });
  watched.push(consume('watch-return', returned));
  // A watch on a DataSource of its own, ended by `break` during the churn: nothing of it may run after.
  const w = await connect('w');
  let breakNow = false;
  const broken = consume('watch-break', new ElectionService(w).watch({ ns, pollMs: 100 }), { breakAfter: () => breakNow });

  const e1 = elector('e1', a, 0);
  const e2 = elector('e2', b, 1);
  const e3 = elector('e3', c, 2);
  const g1 = group('g1', a, groupNs);
  const g2 = group('g2', b, groupNs.slice(0, 6));
  await Promise.all([e1.start(), g1.start()]);
  await sleep(INTERVAL);
  // Higher priorities join: e1 hands over to e2, then e2 to e3; the groups rebalance.
  await Promise.all([e2.start(), g2.start()]);
  await sleep(3 * INTERVAL);
  await registry.metrics();
  await e3.start();
  await sleep(3 * INTERVAL);
  // Someone resigns the leader behind its back; a namespace comes and goes; the leader restarts.
  const service = new ElectionService(a);
  const leader = await service.getLeader({ ns });
  if (leader) await service.resign(leader.leaderId, { ns });
  await Promise.all([g2.add(`${ns}-extra`), g1.remove(groupNs[7])]);
  breakNow = true;
  await e3.stop();
  await sleep(INTERVAL);
  await Promise.all([e3.start(), g1.add(groupNs[7])]);
  await sleep(2 * INTERVAL);
  await registry.metrics();

  // Stops the loops above at once, wherever each one is.
  const stopMain = async () => {
    const stops = [e1, e2, e3, g1, g2].map((loop) => loop.stop());
    aborter.abort();
    await Promise.all([...stops, returned.return()]);
    return Promise.all([...watched, broken]);
  };
  // One DataSource for everything (`:memory:`): the hold below would hold up every loop on it,
  // so the others stop first.
  const ended = config.shared ? undefined : await stopMain();

  // A late elector on a DataSource of its own (where there can be one), whose first tick starts a
  // prune of many batches; its work then waits (see `hold`) past its stop's bound, which abandons it.
  const d = await connect('d');
  const dName = config.shared ? 'd' : 'a';
  // Sorted before every live row: MariaDB's prune meets the held lock before any other row.
  const prefix = await seedPrunable(d, 10_500, `0-prunable-${randomUUID().slice(0, 8)}`);
  const late = elector('e4', d, -1, { stopTimeoutMs: 1_000 });
  let release = async () => undefined;
  if (config.kind !== 'sqlite') release = await hold(d, prefix);
  await late.start();
  if (config.kind === 'sqlite') release = await hold(d, prefix);
  // Stopped while its prune's statement waits for the held rows.
  else await until(() => statements.some((s) => s.ds === dName && /^\s*DELETE FROM/i.test(s.text)));

  const stopping = now();
  const [lateStoppedAt, endedHere] = await Promise.all([late.stop().then(() => now()), ended ?? stopMain()]);
  const stoppedAt = now();
  await release();
  // Abandoned work that goes on would now run on live DataSources (and be logged).
  await sleep(3 * INTERVAL);
  for (const dataSource of sources.values()) await dataSource.destroy();
  await sleep(AFTER_MS);

  const after = (from, ds) => statements.filter((s) => s.at > from && s.ds !== 'x' && (ds === undefined || s.ds === ds));
  const watches = ended ?? endedHere;
  const breakEnd = watches.find((e) => e.name === 'watch-break');
  return {
    statements: statements.length,
    leaderStatements: statements.filter((s) => /gemstone_election_leader/.test(s.text)).length,
    pruneStatements: statements.filter((s) => /^\s*DELETE FROM \S*gemstone_election_(candidate|history)/i.test(s.text)).length,
    stopMs: Math.round(stoppedAt - stopping),
    afterStop: after(stoppedAt),
    // The late elector's DataSource: nothing after its own stop resolved.
    afterLateStop: after(lateStoppedAt, dName),
    // The broken watch's DataSource: nothing after its loop ended.
    afterBreak: config.shared ? after(breakEnd.endedAt, 'w') : [],
    watched: watches.map((e) => ({ name: e.name, seen: e.seen })),
    demotions,
    errors,
    errorsAfterStop: errors.filter((e) => e.at > stoppedAt),
    unhandled,
    listenerConnections: await listenerConnections(),
  };
}

run().then(
  (report) => process.stdout.write(`${JSON.stringify({ ok: true, report })}\n`),
  (error) => {
    process.stdout.write(`${JSON.stringify({ ok: false, error: String((error && error.stack) || error), unhandled, errors })}\n`);
    process.exitCode = 1;
  },
);
