/**
 * The LeaderElector in one process, on every database: one leader among several electors, callbacks
 * and events in order, runIfLeader, loss of leadership, the local deadline, error reporting.
 */
import type { DataSource } from 'typeorm';
import { ElectionService, initDb, LeaderElector, LeadershipEndedError, stopOnSignals } from 'gemstone-utils';
import { describeEachDatabase, query, sleep, uuid } from '../support/databases';
import { ns as freshNs } from '../support/rows';
import { blockEventLoop, kinds, recordingElector, waitFor } from './helpers';

/** Short leases keep the file fast; ticks well inside them. */
const EXPIRE = 2;
const INTERVAL = 300;

describeEachDatabase('LeaderElector', (db) => {
  let ds: DataSource;
  let svc: ElectionService;
  const running: LeaderElector[] = [];

  beforeAll(async () => {
    ds = await db.connect();
    svc = new ElectionService(ds);
  });
  afterEach(async () => {
    await Promise.all(running.splice(0).map((e) => e.stop()));
  });

  function make(options: Parameters<typeof recordingElector>[1] = {}) {
    const made = recordingElector(ds, { expireSeconds: EXPIRE, intervalMs: INTERVAL, ...options });
    running.push(made.elector);
    return made;
  }

  async function leaderRow(ns: string) {
    const [row] = await query<{ leader_id: string | null; term: number | string }>(
      ds,
      'SELECT leader_id, term FROM gemstone_election_leader WHERE ns = ?',
      [ns],
    );
    return row ? { leaderId: row.leader_id, term: Number(row.term) } : undefined;
  }

  test('several electors: exactly one leader, everyone observes it, runIfLeader runs only on the leader', async () => {
    const ns = freshNs();
    // A lease of 10 s (ticks every 300 ms): a leader stays one through every sample below even
    // when a tick takes seconds on a loaded machine (with the file's 2 s lease, a tick that came
    // back after the local deadline left no leader at one sample, beside two busy loops).
    const long = { ns, expireSeconds: 10 };
    const all = [make(long), make(long), make(long)];
    await Promise.all(all.map((a) => a.elector.start()));
    // Over a few ticks, never two leaders at once.
    for (let i = 0; i < 8; i++) {
      expect(all.filter((a) => a.elector.isLeader)).toHaveLength(1);
      await sleep(INTERVAL / 2);
    }
    const leader = all.find((a) => a.elector.isLeader)!;
    const row = await leaderRow(ns);
    expect(row).toEqual({ leaderId: leader.elector.candidateId, term: 1 });
    expect(leader.elector.term).toBe(1);
    await waitFor('every elector to observe the leader', () => all.every((a) => a.elector.leaderId === leader.elector.candidateId));

    const ran: string[] = [];
    const results = await Promise.all(
      all.map((a) =>
        a.elector.runIfLeader((lease) => {
          ran.push(a.elector.candidateId);
          expect(lease.signal.aborted).toBe(false);
          return `term ${lease.term}`;
        }),
      ),
    );
    expect(ran).toEqual([leader.elector.candidateId]);
    expect(results.filter((r) => r !== undefined)).toEqual(['term 1']);
    for (const a of all.filter((x) => x !== leader)) {
      expect(a.elector.term).toBeNull();
      expect(a.elector.lease).toBeNull();
      expect(kinds(a.log, 'started', 'stopped', 'elected', 'demoted')).toEqual([]);
    }
  });

  test('callbacks and events in order; the signal aborts before onStoppedLeading; stop() vacates the lease', async () => {
    const ns = freshNs();
    const { elector, log } = make({ ns });
    await elector.start();
    expect(elector.isLeader).toBe(true);
    const lease = elector.lease!;
    expect(lease).toMatchObject({ ns, candidateId: elector.candidateId, term: 1 });
    await elector.stop();

    expect(kinds(log, 'started', 'elected', 'leader', 'stopped', 'demoted')).toEqual(['started', 'elected', 'leader', 'stopped', 'demoted', 'leader']);
    expect(log.find((r) => r.kind === 'started')).toEqual({ kind: 'started', term: 1, aborted: false, isLeader: true });
    expect(log.find((r) => r.kind === 'stopped')).toEqual({ kind: 'stopped', term: 1, aborted: true, isLeader: false, reason: 'stopped' });
    expect(log.find((r) => r.kind === 'demoted')).toEqual({ kind: 'demoted', term: 1, reason: 'stopped' });
    expect(log.filter((r) => r.kind === 'newLeader')).toEqual([
      { kind: 'newLeader', leaderId: elector.candidateId, term: 1 },
      { kind: 'newLeader', leaderId: null, term: null },
    ]);
    expect(lease.signal.reason).toBeInstanceOf(LeadershipEndedError);
    expect(elector.isLeader).toBe(false);
    expect(await leaderRow(ns)).toEqual({ leaderId: null, term: 1 });
    expect(await svc.listCandidates({ ns })).toEqual([]);
    expect(log.filter((r) => r.kind === 'error')).toEqual([]);
  });

  test('onStoppedLeading and demoted never fire for an elector that never led', async () => {
    const ns = freshNs();
    const leader = make({ ns });
    await leader.elector.start();
    const follower = make({ ns });
    await follower.elector.start();
    await sleep(INTERVAL * 2);
    expect(follower.elector.isLeader).toBe(false);
    await follower.elector.stop();
    expect(kinds(follower.log, 'started', 'stopped', 'elected', 'demoted')).toEqual([]);
    expect(follower.log.filter((r) => r.kind === 'leader')).toEqual([{ kind: 'leader', leaderId: leader.elector.candidateId, term: 1 }]);
    // the follower's unregister left the leader alone
    expect(leader.elector.isLeader).toBe(true);
    expect(await leaderRow(ns)).toEqual({ leaderId: leader.elector.candidateId, term: 1 });
  });

  test('stop() on the leader hands over within one tick; the new term is higher', async () => {
    // A lease much longer than a tick plus the margin: a follower that only took over once the
    // lease ran out (no hand-over) is far outside the bound.
    const expireSeconds = 8;
    const ns = freshNs();
    const a = make({ ns, expireSeconds });
    await a.elector.start();
    const b = make({ ns, expireSeconds });
    await b.elector.start();
    expect(b.elector.isLeader).toBe(false);
    const stopped = performance.now();
    await a.elector.stop();
    // One tick of the follower, plus a loaded machine's margin; the lease has 7.6 s or more to run.
    const bound = INTERVAL * 1.1 + 2_000;
    expect(bound).toBeLessThan(expireSeconds * 1000 - INTERVAL * 1.1);
    await waitFor('the follower to take over', () => b.elector.isLeader, expireSeconds * 1000 + 2_000);
    expect(performance.now() - stopped).toBeLessThan(bound);
    expect(b.elector.term).toBe(2);
    expect(kinds(b.log, 'started', 'elected')).toEqual(['started', 'elected']);
  });

  test('leadership taken away in the database: demoted with reason "lost", once, and the new leader observed', async () => {
    const ns = freshNs();
    const { elector, log } = make({ ns });
    await elector.start();
    const lease = elector.lease!;
    // Someone else resigns it for us and takes it (as after an expiry the elector did not notice).
    // One transaction, so that on PostgreSQL the elector cannot re-elect in between.
    const other = uuid();
    await ds.transaction(async (session) => {
      expect(await svc.resign(elector.candidateId, { ns, session })).toBe(true);
      expect(await svc.elect(other, { ns, session })).toBe(other);
    });
    await waitFor('the elector to notice', () => !elector.isLeader, INTERVAL * 1.1 + 2_000);
    expect(lease.signal.aborted).toBe(true);
    expect((lease.signal.reason as LeadershipEndedError).reason).toBe('lost');
    await waitFor('the new leader to be observed', () => elector.leaderId === other);
    expect(log.filter((r) => r.kind === 'stopped')).toHaveLength(1);
    expect(log.filter((r) => r.kind === 'demoted')).toEqual([{ kind: 'demoted', term: 1, reason: 'lost' }]);
    expect(log.filter((r) => r.kind === 'newLeader').at(-1)).toEqual({ kind: 'newLeader', leaderId: other, term: 2 });
    await sleep(INTERVAL * 2);
    expect(elector.isLeader).toBe(false);
  });

  test('event loop blocked past the deadline: isLeader is false at once, before any timer runs', async () => {
    const ns = freshNs();
    const { elector, log } = make({ ns });
    await elector.start();
    const lease = elector.lease!;
    blockEventLoop(EXPIRE * 1000 + 100);
    // Still synchronous: no timer or I/O callback can have run since the block.
    const demotedBefore = log.some((r) => r.kind === 'demoted');
    expect(demotedBefore).toBe(false);
    expect(elector.isLeader).toBe(false);
    expect(lease.signal.aborted).toBe(true);
    expect(log.filter((r) => r.kind === 'demoted')).toEqual([{ kind: 'demoted', term: 1, reason: 'lease-expired-locally' }]);
    expect(await elector.runIfLeader(() => 'ran')).toBeUndefined();
    // The loop carries on and leads again (nobody else competes).
    await waitFor('leadership to come back', () => elector.isLeader, INTERVAL * 1.1 + 3_000);
    expect(log.filter((r) => r.kind === 'stopped')).toHaveLength(1);
  });

  test('injected clock: the deadline is the clock before the last successful elect plus the lease', async () => {
    const ns = freshNs();
    let offset = 0;
    const clock = () => performance.now() + offset;
    const { elector, log } = make({ ns, clock, intervalMs: 400 });
    const before = clock();
    await elector.start();
    const after = clock();
    expect(elector.isLeader).toBe(true);
    // Just short of the lease measured from before start(): still leader.
    offset = EXPIRE * 1000 - (clock() - before) - 60;
    expect(elector.isLeader).toBe(true);
    // Past the lease measured from after start() (the elect was sent earlier): not leader.
    offset = EXPIRE * 1000 - (performance.now() - after) + 1;
    expect(elector.isLeader).toBe(false);
    expect(log.filter((r) => r.kind === 'demoted')).toEqual([{ kind: 'demoted', term: 1, reason: 'lease-expired-locally' }]);
  });

  test('a throwing callback or listener is reported as an error and the loop carries on; without a listener it is logged', async () => {
    const ns = freshNs();
    const { elector, log } = make({
      ns,
      onStartedLeading: () => {
        throw new Error('boom in onStartedLeading');
      },
      onNewLeader: () => Promise.reject(new Error('async boom')) as unknown as void,
    });
    elector.on('elected', () => {
      throw new Error('boom in a listener');
    });
    await elector.start();
    await waitFor('the errors', () => log.filter((r) => r.kind === 'error').length >= 3);
    const messages = log.flatMap((r) => (r.kind === 'error' ? [r.error.message] : []));
    expect(messages.some((m) => m.includes('onStartedLeading threw') && m.includes('boom in onStartedLeading'))).toBe(true);
    expect(messages.some((m) => m.includes('async boom'))).toBe(true);
    expect(messages.some((m) => m.includes('boom in a listener'))).toBe(true);
    await sleep(INTERVAL * 2);
    expect(elector.isLeader).toBe(true);

    const logged: unknown[] = [];
    const quiet = new LeaderElector({
      dataSource: ds,
      ns: freshNs(),
      expireSeconds: EXPIRE,
      intervalMs: INTERVAL,
      logger: { error: (_message, error) => logged.push(error) },
      onStartedLeading: () => {
        throw new Error('nobody listens');
      },
    });
    running.push(quiet);
    await quiet.start();
    expect(quiet.listenerCount('error')).toBe(0);
    await waitFor('the error to be logged', () => logged.length > 0);
    expect(String((logged[0] as Error).message)).toContain('nobody listens');
    expect(quiet.isLeader).toBe(true);
  });

  // A second DataSource on the same data (so not on :memory:, where it would be another
  // database) whose logger counts the follower's transactions. Not registered at all there, so
  // CI shows nothing skipped.
  /** A prune's DELETE (the loop's candidate and history pruning). */
  const PRUNE_DELETE = /^DELETE FROM \S*gemstone_election_(candidate\S* WHERE .*expires_at <|history\S* WHERE .*ended_at <)/is;

  if (db.shared) test('one transaction per tick, jittered, for a follower', async () => {
    const begins: number[] = [];
    let inTransaction = false;
    const counting = db.track(
      await initDb(
        db.options({
          logging: ['query'],
          logger: {
            // A transaction starts with BEGIN, or is a single statement outside one (autocommit).
            logQuery: (q: string) => {
              const text = q.trim();
              // Preludes, not transactions: MySQL sets the own transactions' isolation level just
              // before START TRANSACTION; PostgreSQL's default isolation (and whether the
              // connection reaches the server directly) and the MySQL/MariaDB server version are
              // looked up once per DataSource.
              if (/^(SET TRANSACTION ISOLATION LEVEL|SHOW transaction_isolation|SELECT current_setting\('transaction_isolation'\)|SELECT VERSION\(\) AS version$|SELECT @@wsrep_on AS wsrep$)/i.test(text)) return;
              // The LISTEN connection's delivery check: one NOTIFY per connection, not a tick.
              if (/^SELECT pg_notify\(CAST\(\$1 AS text\), CAST\(\$2 AS text\)\) AS probe, inet_server_addr\(\)/.test(text)) return;
              // The loop's candidate and history pruning (its own statements or transactions, not a tick's).
              if (PRUNE_DELETE.test(text)) {
                if (inTransaction) begins.pop();
                return;
              }
              if (/^(START TRANSACTION|BEGIN)/i.test(text)) {
                begins.push(performance.now());
                inTransaction = true;
              } else if (/^(COMMIT|ROLLBACK)/i.test(text)) {
                inTransaction = false;
              } else if (!inTransaction) {
                begins.push(performance.now());
              }
            },
            // A BEGIN that failed (SQLite: the leader's DataSource held the write lock) started
            // nothing: the library retries it, and only the attempt that began counts. A failed
            // sqlite3 program (BEGIN IMMEDIATE, its statements, COMMIT as one text) of a prune had
            // its count taken back already by its DELETE (ci4 at 784c9ae: one tick fewer).
            logQueryError: (_error: unknown, q: string) => {
              if (/^(START TRANSACTION|BEGIN)/i.test(q.trim())) {
                if (!q.split(';\n').some((statement) => PRUNE_DELETE.test(statement.trim()))) begins.pop();
                inTransaction = false;
              }
            },
            logQuerySlow: () => undefined,
            logSchemaBuild: () => undefined,
            logMigration: () => undefined,
            log: () => undefined,
          },
        } as never),
      ),
    );
    const ns = freshNs();
    const leader = make({ ns });
    await leader.elector.start();
    const follower = recordingElector(counting, { ns, expireSeconds: EXPIRE, intervalMs: INTERVAL });
    running.push(follower.elector);
    // Ten ticks (the first is start()'s), then the stop, called as the tenth is reported: no tick
    // is in flight then, so every transaction but the stop's unregister belongs to a reported tick.
    const TICKS = 10;
    const outcomes: string[] = [];
    let stopping: Promise<void> | undefined;
    follower.elector.on('tick', (tick) => {
      outcomes.push(tick.outcome);
      if (outcomes.length === TICKS) stopping = follower.elector.stop();
    });
    begins.length = 0;
    await follower.elector.start();
    await waitFor('ten ticks', () => stopping !== undefined, 60_000);
    await stopping;
    expect(follower.log.filter((r) => r.kind === 'error')).toEqual([]);
    expect(outcomes).toEqual(Array(TICKS).fill('follower'));
    // One transaction per tick, and one for stop()'s unregister.
    expect(begins).toHaveLength(TICKS + 1);
    // A tick starts no earlier than the interval less its 10% jitter after the one before (a
    // busy machine may only delay it), and the gaps differ: jittered, not a fixed period.
    const gaps = begins.slice(1, TICKS).map((t, i) => t - begins[i]!);
    expect(Math.min(...gaps)).toBeGreaterThanOrEqual(INTERVAL * 0.9 - 5);
    expect(Math.max(...gaps) - Math.min(...gaps)).toBeGreaterThan(2);
  });

  test('stopOnSignals stops several electors on a signal (exit: false leaves the process alone) and can be removed', async () => {
    const ns = freshNs();
    const a = make({ ns });
    const b = make({ ns });
    await a.elector.start();
    await b.elector.start();
    const before = process.listenerCount('SIGUSR2');
    const remove = stopOnSignals([a.elector, b.elector], { signals: ['SIGUSR2'], exit: false });
    expect(process.listenerCount('SIGUSR2')).toBe(before + 1);
    // Emitted, not sent: jest's sandboxed `process` does not install OS signal handlers (a real
    // SIGUSR2 would end the test runner). The process test sends a real SIGTERM.
    process.emit('SIGUSR2', 'SIGUSR2');
    // Both unregistered, the lease vacated.
    await waitFor('both electors to stop', async () => (await svc.listCandidates({ ns })).length === 0, 5_000);
    expect(await leaderRow(ns)).toEqual({ leaderId: null, term: 1 });
    expect(a.elector.running || b.elector.running).toBe(false);
    expect(a.log.filter((r) => r.kind === 'demoted')).toEqual([{ kind: 'demoted', term: 1, reason: 'stopped' }]);
    await waitFor('the handler to be removed', () => process.listenerCount('SIGUSR2') === before, 2_000);
    remove(); // harmless twice
    expect(process.listenerCount('SIGUSR2')).toBe(before);
  });

  test('await using / Symbol.asyncDispose stops the elector and vacates its lease', async () => {
    const ns = freshNs();
    const { elector } = make({ ns });
    await elector.start();
    expect(elector.isLeader).toBe(true);
    await elector[Symbol.asyncDispose]();
    expect(elector.isLeader).toBe(false);
    expect(elector.running).toBe(false);
    expect(await leaderRow(ns)).toEqual({ leaderId: null, term: 1 });
  });

  test('start() rejects a DataSource that is not initialized, and stop() before start() is harmless', async () => {
    const { DataSource: DataSourceClass } = await import('typeorm');
    const fresh = new DataSourceClass(db.options());
    const elector = new LeaderElector({ dataSource: fresh, expireSeconds: EXPIRE, intervalMs: INTERVAL });
    await expect(elector.stop()).resolves.toBeUndefined();
    await expect(elector.start()).rejects.toMatchObject({ name: 'ValidationError', parameter: 'options.dataSource' });
    expect(elector.running).toBe(false);
  });
});
