// A worker process running one LeaderElector with schedules on the built package (dist/), for the
// tests that kill, pause or signal the leader of a schedule. Configured by the JSON in
// ELECTOR_WORKER_CONFIG:
//   { url, ns, expireSeconds, intervalMs, handleSignals?, ledger, schedules: [{ name, catchUp }], everyMs, jobDelayMs? }
// Each job waits jobDelayMs before its transaction (holding no lock): a window for the test to
// pause the leader inside a job, whose transaction then meets the fence under a stale term.
// Every schedule's job writes one row (ns, name, slot, term, candidate_id) into the table `ledger`
// inside run.transaction: the row and the slot's `done` commit together or not at all. (On SQLite
// run.transaction waits for the shared connection itself, so no DataSource of its own is needed,
// unlike elector-worker.js's raw transactions — and one would break the point: the row must
// commit in the slot's own transaction.)
// It reports JSON lines on stdout: { event, t, ...fields }, `t` by the real wall clock (the
// process start plus the monotonic clock), `appNow` where the application's clock is shown (it may
// be skewed by skewed-clock.js). Reads "stop" on stdin: stops the elector, destroys the
// DataSource, exits 0.
'use strict';
const path = require('path');
const readline = require('readline');
const { initDb, LeaderElector } = require(path.join(__dirname, '..', '..', '..', 'dist', 'src', 'index.js'));

const config = JSON.parse(process.env.ELECTOR_WORKER_CONFIG || '{}');
const realNow = () => Math.round(performance.timeOrigin + performance.now());
const out = (event, fields = {}) => process.stdout.write(`${JSON.stringify({ event, t: realNow(), ...fields })}\n`);

async function main() {
  out('spawned', { pid: process.pid, appNow: Date.now() });
  const ds = await initDb(config.url);
  const p = ds.options.type === 'postgres' ? ['$1', '$2', '$3', '$4', '$5'] : ['?', '?', '?', '?', '?'];
  const insert = `INSERT INTO ${config.ledger} (ns, name, slot_ms, term, candidate_id) VALUES (${p.join(', ')})`;
  const elector = new LeaderElector({
    dataSource: ds,
    ns: config.ns,
    expireSeconds: config.expireSeconds,
    intervalMs: config.intervalMs,
    handleSignals: Boolean(config.handleSignals),
  });
  // Reported, never fatal: ticks and claims meet killed and paused peers' locks.
  elector.on('error', (error) => out('error', { phase: error.phase, message: error.message }));
  elector.on('elected', (lease) => out('elected', { term: lease.term }));
  elector.on('demoted', (lease, reason) => out('demoted', { term: lease.term, reason }));
  for (const { name, catchUp } of config.schedules) {
    elector.schedule({ name, everyMs: config.everyMs, catchUp, catchUpWindowMs: 3_600_000 }, async (run) => {
      const slot = run.slot.getTime();
      out('run', { name, slot, term: run.lease.term, attempt: run.attempt });
      if (config.jobDelayMs) await new Promise((resolve) => setTimeout(resolve, config.jobDelayMs));
      try {
        let wroteAt = 0;
        await run.transaction(async (manager) => {
          wroteAt = realNow();
          await manager.query(insert, [config.ns, name, slot, run.lease.term, elector.candidateId]);
        });
        // wroteAt: when its transaction ran the insert (this host's real clock), for a test that
        // tells a job written before a pause from one written after it.
        out('committed', { name, slot, term: run.lease.term, wroteAt });
      } catch (error) {
        out('rolled-back', { name, slot, term: run.lease.term, error: error.name });
        throw error;
      }
    });
  }
  await elector.start();
  out('ready', { candidateId: elector.candidateId, isLeader: elector.isLeader, appNow: Date.now() });

  readline.createInterface({ input: process.stdin }).on('line', async (line) => {
    if (line.trim() !== 'stop') return;
    await elector.stop();
    out('stopped-elector');
    await ds.destroy();
    process.exit(0);
  });
}

main().catch((error) => {
  out('fatal', { message: error && error.stack });
  process.exit(2);
});
