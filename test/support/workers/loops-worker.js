// A worker process running LeaderElectors and LeaderElectorGroups on the built package (dist/),
// beside the differential harness's schedules (test/differential/loops.ts). In a process of its
// own: on SQLite, better-sqlite3 waits for another connection's write lock synchronously, which in
// the harness's thread would stall the harness's own transactions with it.
// Configured by the JSON in ELECTOR_WORKER_CONFIG:
//   { url, expireSeconds, namespaces, loops: [{ kind: 'elector' | 'group', candidateId, intervalMs }] }
// (an elector campaigns for the first namespace, a group for all of them; the loops alternate
// between two DataSources). It reports as JSON lines on stdout ({ event, t, ...fields }): every
// callback and event of every leadership — `step` with `loop` (its index), `step` ('cb-started',
// 'elected', 'cb-stopped', 'demoted'), `ns`, `term`, `lid` (one number per Lease object: a term
// granted twice is two leaderships), `aborted` (its signal then) and a demotion's `reason` — the
// loops' errors, their ticks that answered after a lease's length (`slow-tick`), the moments the
// wall and the monotonic clock disagreed (`clock-step`, see watchClocks), and each stop
// (`stopping`, and `loop-stopped` or, for all of them, `stopped`). Commands on stdin: "restart <i>" (loop i stops, then starts again: a
// hand-over; 'restarted'), "rewind <ns> <term> <from>" (if the leader row still gives `term` to
// `from`, the row and the history go back to before that grant, as a failover that lost it leaves
// them: the next tick is granted `term` again; 'rewound' with `ok`), "resign <ns> <id>" (resign() from
// another DataSource, behind the holder's back; 'resigned'), "stop" (every loop stops; 'stopped',
// then exit 0). The round's own writes are made here, not in the harness's process, and on
// SQLite without the driver's busy wait (retried instead): a synchronous wait for a lock that a
// transaction of the same thread holds would stall both.
'use strict';
const { randomUUID } = require('crypto');
const path = require('path');
const readline = require('readline');
const { initDb, LeaderElector, LeaderElectorGroup, ElectionService } = require(path.join(__dirname, '..', '..', '..', 'dist', 'src', 'index.js'));

const config = JSON.parse(process.env.ELECTOR_WORKER_CONFIG || '{}');
const out = (event, fields = {}) => process.stdout.write(`${JSON.stringify({ event, t: Date.now(), ...fields })}\n`);

/** PostgreSQL's placeholders: $1, $2, … for ?, ?, …. */
function numbered(sql) {
  let n = 0;
  return sql.replace(/\?/g, () => `$${++n}`);
}

/**
 * The loops' local deadlines count by the monotonic and the wall clock both (the more pessimistic
 * wins), so when the two disagree for a moment a deadline passes early by that much, and a grant
 * answered within the lease by one clock may still be one the loop never starts. Seen on a
 * loaded virtual machine: the wall clock behind by 250-300 ms for a fraction of a second, then
 * caught up at once. Each disagreement over CLOCK_STEP_MS between two reads is reported
 * (`clock-step`, `ms`: wall minus monotonic); a blocked event loop moves both clocks alike.
 */
const CLOCK_STEP_MS = 40;
function watchClocks() {
  let wall = Date.now();
  let monotonic = performance.now();
  setInterval(() => {
    const [w, m] = [Date.now(), performance.now()];
    const step = w - wall - (m - monotonic);
    if (Math.abs(step) > CLOCK_STEP_MS) out('clock-step', { ms: Math.round(step) });
    [wall, monotonic] = [w, m];
  }, 25).unref();
}

async function main() {
  watchClocks();
  const sources = [await initDb(config.url), await initDb(config.url)];
  const admin = await initDb(config.url);
  const sqlite = admin.options.type === 'sqlite' || admin.options.type === 'better-sqlite3';
  if (sqlite) await admin.query('PRAGMA busy_timeout = 0');
  const service = new ElectionService(admin, { expireSeconds: config.expireSeconds });
  const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

  const ids = new WeakMap();
  let count = 0;
  const lidOf = (lease) => {
    let id = ids.get(lease);
    if (id === undefined) ids.set(lease, (id = ++count));
    return id;
  };
  const loops = config.loops.map((spec, i) => {
    const step = (name, lease, reason) =>
      out('step', { loop: i, step: name, ns: lease.ns, term: lease.term, lid: lidOf(lease), aborted: lease.signal.aborted, ...(reason ? { reason } : {}) });
    const common = {
      dataSource: sources[i % 2],
      candidateId: spec.candidateId,
      expireSeconds: config.expireSeconds,
      intervalMs: spec.intervalMs,
      onStartedLeading: (lease) => step('cb-started', lease),
      onStoppedLeading: (lease) => step('cb-stopped', lease),
    };
    const loop = spec.kind === 'elector' ? new LeaderElector({ ns: config.namespaces[0], ...common }) : new LeaderElectorGroup({ namespaces: config.namespaces, ...common });
    loop.on('elected', (lease) => step('elected', lease));
    loop.on('demoted', (lease, reason) => step('demoted', lease, reason));
    loop.on('error', (error) => out('error', { loop: i, message: String(error && error.message) }));
    // A tick whose answer came after the local deadline it armed grants nothing (the engine's
    // rule): a term it acquired at the database is led by nobody unless the next tick renews it.
    loop.on('tick', (tick) => {
      if (tick.durationSeconds * 1000 >= config.expireSeconds * 1000) out('slow-tick', { loop: i, ms: Math.round(tick.durationSeconds * 1000) });
      // Not an excuse: what a failed check prints, to show the ticks that came near a lease.
      else if (tick.durationSeconds * 1000 >= (config.expireSeconds * 1000) / 2) out('long-tick', { loop: i, ms: Math.round(tick.durationSeconds * 1000), outcome: tick.outcome ?? `acquired ${tick.acquired}` });
    });
    return loop;
  });
  /**
   * What a failover that lost the grant of `term` to `from` leaves: the transaction that granted
   * it never happened, so the leader row is back before it (another candidate's lapsed term - 1)
   * and the history has no row of `term`. Only if the row still gives `term` to `from`; in one
   * transaction (on SQLite retried while the write lock is busy), so no tick acquires in between.
   */
  async function rewind(ns, term, from) {
    const foreign = randomUUID();
    const q = (m, text, params) => m.query(admin.options.type === 'postgres' ? numbered(text) : text, params);
    for (let attempt = 0; ; attempt++) {
      try {
        return await admin.transaction(async (m) => {
          await q(m, 'UPDATE gemstone_election_leader SET leader_id = ?, term = ?, lease_expires_at = updated_at WHERE ns = ? AND term = ? AND leader_id = ?', [foreign, term - 1, ns, term, from]);
          const [row] = await q(m, 'SELECT leader_id, term FROM gemstone_election_leader WHERE ns = ?', [ns]);
          if (row.leader_id !== foreign) return false;
          await q(m, 'DELETE FROM gemstone_election_history WHERE ns = ? AND term = ?', [ns, term]);
          return true;
        });
      } catch (error) {
        if (attempt > 200 || !/locked|busy/i.test(String(error))) throw error;
        await sleep(20);
      }
    }
  }

  await Promise.all(loops.map((loop) => loop.start()));
  out('ready');
  readline.createInterface({ input: process.stdin }).on('line', (line) => {
    const [command, arg] = line.trim().split(/\s+/);
    if (command === 'restart') {
      const loop = loops[Number(arg)];
      void (async () => {
        out('stopping', { loop: Number(arg) });
        await loop.stop();
        out('loop-stopped', { loop: Number(arg) });
        await new Promise((resolve) => setTimeout(resolve, 200));
        await loop.start();
        out('restarted', { loop: Number(arg) });
      })();
    } else if (command === 'rewind') {
      const [, ns, term, from] = line.trim().split(/\s+/);
      void rewind(ns, Number(term), from)
        .then((ok) => out('rewound', { ns, term: Number(term), ok }))
        .catch((error) => out('fatal', { message: String(error && error.stack) }));
    } else if (command === 'resign') {
      const [, ns, id] = line.trim().split(/\s+/);
      void service
        .resign(id, { ns })
        .then((ok) => out('resigned', { ns, ok }))
        // Refused while SQLite's write lock is busy: then no term changes hands.
        .catch((error) => out('resigned', { ns, ok: false, message: String(error && error.message) }));
    } else if (command === 'stop') {
      void (async () => {
        loops.forEach((_, i) => out('stopping', { loop: i }));
        await Promise.all(loops.map((loop) => loop.stop()));
        out('stopped');
        await Promise.all([...sources, admin].map((ds) => ds.destroy()));
        process.exit(0);
      })();
    }
  });
}

main().catch((error) => {
  out('fatal', { message: String(error && error.stack) });
  process.exit(1);
});
