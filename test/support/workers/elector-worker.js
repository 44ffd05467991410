// A worker process running one LeaderElector on the built package (dist/), for the tests that
// kill, pause or signal it. Configured by the JSON in ELECTOR_WORKER_CONFIG:
//   { url, ns, expireSeconds, intervalMs, handleSignals?, listenErrors?, ledgerEveryMs?, statusEveryMs? }
// It reports everything as JSON lines on stdout: { event, t (epoch ms), ...fields }.
// With ledgerEveryMs it does leader work: a fenced insert into `elector_ledger` — assertLeader
// with the lease's term, then the insert, in one transaction — via runIfLeader. After a
// demotion that it did not ask for ('lost' or 'lease-expired-locally') it deliberately tries one
// more write under the stale term, as a buggy application would, and reports whether the fence
// rejected it.
// Reads commands on stdin: "stop" (stop the elector, destroy the DataSource, exit 0), "restart"
// or "restart <ms>" (stop the elector and start it again, after <ms>: a hand-over, the process and
// its DataSource stay).
// No handler for unhandled rejections or uncaught exceptions: an escaped error crashes it, and the
// tests notice.
'use strict';
const path = require('path');
const readline = require('readline');
const { initDb, LeaderElector, ElectionService } = require(path.join(__dirname, '..', '..', '..', 'dist', 'src', 'index.js'));

const config = JSON.parse(process.env.ELECTOR_WORKER_CONFIG || '{}');
const out = (event, fields = {}) => process.stdout.write(`${JSON.stringify({ event, t: Date.now(), ...fields })}\n`);

async function main() {
  out('spawned', { pid: process.pid });
  const ds = await initDb(config.dataSource ?? config.url);
  // TypeORM runs every QueryRunner of a SQLite DataSource on one connection, so the application's
  // transactions would interleave with the elector's: leader work gets a DataSource of its own.
  const sqlite = ds.options.type === 'sqlite' || ds.options.type === 'better-sqlite3';
  const workDs = sqlite && config.ledgerEveryMs ? await initDb(config.dataSource ?? config.url) : ds;
  out('initialized');
  const service = new ElectionService(workDs);
  const placeholders = ds.options.type === 'postgres' ? ['$1', '$2', '$3'] : ['?', '?', '?'];
  const insert = `INSERT INTO elector_ledger (term, candidate_id, seq) VALUES (${placeholders.join(', ')})`;
  let seq = 0;
  // One fenced write at a time. On SQLite the work DataSource is one connection with one shared
  // QueryRunner, and two transactions begun in the same moment both send BEGIN (TypeORM counts
  // the nesting only once BEGIN has answered): the second fails with "cannot start a transaction
  // within a transaction" and its rollback ends the first. After a SIGSTOP that lands between a
  // leader-work write's start and its BEGIN, the stale write of the demotion would meet exactly
  // that, and be refused by the collision instead of the fence the tests check.
  let writes = Promise.resolve();

  function fencedWrite(elector, term) {
    const write = writes.then(async () => {
      const n = ++seq;
      await workDs.transaction(async (session) => {
        await service.assertLeader(elector.candidateId, { ns: config.ns, term, session });
        await session.query(insert, [term, elector.candidateId, n]);
      });
      return n;
    });
    writes = write.then(
      () => undefined,
      () => undefined,
    );
    return write;
  }

  const elector = new LeaderElector({
    dataSource: ds,
    ns: config.ns,
    expireSeconds: config.expireSeconds,
    intervalMs: config.intervalMs,
    handleSignals: Boolean(config.handleSignals),
    onStartedLeading: (lease) => out('started', { term: lease.term }),
    onStoppedLeading: (lease) => out('stopped', { term: lease.term, reason: lease.signal.reason && lease.signal.reason.reason }),
    logger: { error: (message, error) => out('logged-error', { message, phase: error && error.phase }) },
  });
  elector.on('elected', (lease) => out('elected', { term: lease.term }));
  elector.on('leader', (leaderId, term) => out('leader', { leaderId, term }));
  elector.on('demoted', (lease, reason) => {
    out('demoted', { term: lease.term, reason });
    if (config.ledgerEveryMs && reason !== 'stopped') {
      fencedWrite(elector, lease.term).then(
        (n) => out('stale-write', { term: lease.term, outcome: 'committed', seq: n }),
        (error) => out('stale-write', { term: lease.term, outcome: 'rejected', name: error.name, message: error.message }),
      );
    }
  });
  if (config.ticks) {
    elector.on('tick', (tick) => {
      if (tick.outcome === 'acquired' || tick.outcome === 'renewed') {
        // databaseNow: the database's clock during the tick's statement (see AckedLease in test/ha/patroni-support.ts).
        out('tick', { outcome: tick.outcome, term: tick.term, durationMs: Math.round(tick.durationSeconds * 1000), databaseNow: tick.clockSkew ? tick.clockSkew.databaseNow.getTime() : null });
      }
    });
  }
  if (config.listenErrors) elector.on('error', (error) => out('error', { message: error.message, phase: error.phase }));

  await elector.start();
  out('ready', { candidateId: elector.candidateId, isLeader: elector.isLeader, pid: process.pid });

  if (config.ledgerEveryMs) {
    let busy = false;
    setInterval(() => {
      if (busy) return;
      busy = true;
      elector
        .runIfLeader(async (lease) => {
          out('work', { term: lease.term });
          const n = await fencedWrite(elector, lease.term);
          out('work-done', { term: lease.term, seq: n });
        })
        .catch((error) => out('work-failed', { name: error.name, message: error.message }))
        .finally(() => {
          busy = false;
        });
    }, config.ledgerEveryMs);
  }
  if (config.statusEveryMs) {
    setInterval(() => out('status', { isLeader: elector.isLeader, term: elector.term, leaderId: elector.leaderId }), config.statusEveryMs);
  }

  readline.createInterface({ input: process.stdin }).on('line', async (line) => {
    const [command, pause] = line.trim().split(/\s+/);
    if (command === 'restart') {
      await elector.stop();
      // "restart <ms>": stay out that long first, so that another candidate takes the lease.
      if (Number(pause) > 0) await new Promise((resolve) => setTimeout(resolve, Number(pause)));
      await elector.start();
      out('restarted', { isLeader: elector.isLeader });
      return;
    }
    if (line.trim() !== 'stop') return;
    await elector.stop();
    out('stopped-elector');
    if (workDs !== ds) await workDs.destroy();
    await ds.destroy();
    process.exit(0);
  });
}

main().catch((error) => {
  out('fatal', { message: error && error.stack });
  process.exit(2);
});
