/**
 * Schedules across leaders, on every database: a leader lost with a job in flight leaves its slot
 * running, and the next leader runs it again (attempt 2) and catches up the slots that came due
 * meanwhile per `catchUp`; `run.transaction` rolls the job's writes back when the leadership ends
 * before its commit, and the next leader's run commits them once.
 */
import type { DataSource } from 'typeorm';
import { ElectionService, LeaderElector, LeaderElectorError, ScheduledRun, ScheduledRunInfo } from 'gemstone-utils';
import { describeEachDatabase, query, sleep } from '../support/databases';
import { ns as freshNs } from '../support/rows';
import { waitFor } from '../elector/helpers';
import { aborted, gate, runsOf, slotsOf } from './helpers';

const EVERY = 1000;
const EXPIRE = 3;

describeEachDatabase('schedules across leaders', (db) => {
  let dsA: DataSource;
  let dsB: DataSource;

  beforeAll(async () => {
    dsA = await db.connect();
    // A second process where the database is shared; one DataSource for both where it is private.
    dsB = db.shared ? await db.connect() : dsA;
  });

  const consecutive = (runs: readonly ScheduledRunInfo[]) => {
    const slots = slotsOf(runs);
    for (let i = 1; i < slots.length; i++) expect(slots[i]! - slots[i - 1]!).toBe(EVERY);
  };

  test('failover: the slot the lost leader left running runs again (attempt 2); missed slots per catchUp', async () => {
    const ns = freshNs();
    const errors: LeaderElectorError[] = [];
    const a = new LeaderElector({ dataSource: dsA, ns, expireSeconds: EXPIRE, intervalMs: 300, stopTimeoutMs: 300 });
    // B's lease is long: a job B runs is never left in flight by a leadership of B's own that a
    // loaded machine let lapse (it would run again, as the next attempt, and blur what is checked).
    const b = new LeaderElector({ dataSource: dsB, ns, expireSeconds: 10, intervalMs: 300 });
    b.on('error', (error) => errors.push(error));
    // Leaderships that ended other than by stop(): none is expected (each would make a slot run
    // again as its next attempt); named here so that a failure says which.
    const lost: string[] = [];
    const events: string[] = [];
    for (const [elector, by] of [[a, 'a'], [b, 'b']] as const) {
      elector.on('demoted', (lease, reason) => {
        events.push(`${by} demoted ${lease.term} ${reason}`);
        if (reason !== 'stopped') lost.push(`${by} term ${lease.term}: ${reason}`);
      });
      elector.on('elected', (lease) => events.push(`${by} elected ${lease.term}`));
      elector.on('error', (error) => events.push(`${by} error ${error.phase}: ${error.message}`));
      elector.on('scheduleRun', (event) => events.push(`${by} ${event.name} ${event.slot.getTime()} ${event.state} ${event.attempt}`));
    }
    const errorsA: LeaderElectorError[] = [];
    a.on('error', (error) => errorsA.push(error));
    const hang = gate();
    let hungSlot: number | undefined;
    let hungReturned = false;
    const ranBy = new Map<string, Array<{ slot: number; attempt: number; by: string }>>();
    const job = (by: string) => async (run: ScheduledRun) => {
      const list = ranBy.get(run.name) ?? [];
      ranBy.set(run.name, list);
      list.push({ slot: run.slot.getTime(), attempt: run.attempt, by });
      // A's second run of 'all' hangs, ignoring its signal: the leader is lost with it in flight.
      if (by === 'a' && run.name === 'all' && list.length === 2) {
        hungSlot = run.slot.getTime();
        await hang.promise;
        hungReturned = true;
      }
    };
    const window = 3_600_000;
    for (const [elector, by] of [[a, 'a'], [b, 'b']] as const) {
      elector.schedule({ name: 'all', everyMs: EVERY, catchUp: 'all', catchUpWindowMs: window }, job(by));
      elector.schedule({ name: 'latest', everyMs: EVERY, catchUp: 'latest', catchUpWindowMs: window }, job(by));
      elector.schedule({ name: 'none', everyMs: EVERY, catchUp: 'none', catchUpWindowMs: window }, job(by));
    }
    try {
      await a.start();
      // A start resolves after its first tick, which a loaded machine can make fail (retried).
      await waitFor('A to lead', () => a.isLeader, 20_000);
      await waitFor("A's 'all' job to hang", () => hungSlot !== undefined, 20_000);
      await b.start();
      expect(b.isLeader).toBe(false);
      // A's stop gives up on the hung job at its bound and does not vacate: the lease runs out.
      await a.stop();
      const stoppedA = performance.now();
      await waitFor('B to lead', () => b.isLeader, 2 * EXPIRE * 1000 + 5_000);
      // The lease outlived A's stop: the slots of at least its remaining part came due with nobody leading.
      const gapMs = performance.now() - stoppedA;
      await waitFor('B to run two new slots of each', () => ['all', 'latest', 'none'].every((n) => (ranBy.get(n) ?? []).filter((r) => r.by === 'b' && r.attempt === 1).length >= 2), 20_000);
      // A's job returns now: its run was abandoned with the stop, nothing is recorded for it.
      hang.open();
      await waitFor("A's hung job to return", () => hungReturned);
      await sleep(50);
      await b.stop();

      expect(lost).toEqual([]);
      /**
       * The runs of `name` but one B claimed as its stop began: the leadership ended while the
       * claim was on its way, so the slot stays running for the next leader, not run here (a
       * loaded machine makes that moment likelier). At most one, B's, newer than every slot run.
       */
      const settledRuns = (runs: readonly ScheduledRunInfo[], name: string) => {
        const ran = (ranBy.get(name) ?? []).map((r) => r.slot);
        const running = runs.filter((r) => r.state === 'running');
        expect(running.map((r) => ({ by: r.candidateId === b.candidateId ? 'b' : 'a', ran: ran.includes(r.slot.getTime()), newest: r.slot.getTime() > Math.max(...ran) }))).toEqual(
          running.length === 0 ? [] : [{ by: 'b', ran: false, newest: true }],
        );
        return runs.filter((r) => r.state !== 'running');
      };
      const all = await runsOf(dsA, ns, 'all');
      consecutive(all);
      const hung = all.find((r) => r.slot.getTime() === hungSlot)!;
      expect(hung).toMatchObject({ state: 'done', attempt: 2, candidateId: b.candidateId });
      expect(settledRuns(all, 'all').filter((r) => r.state !== 'done')).toEqual([]);
      // Every slot ran exactly once to done; only the hung one twice.
      const allRuns = ranBy.get('all')!;
      expect(allRuns.filter((r) => r.slot === hungSlot).map((r) => [r.by, r.attempt])).toEqual([['a', 1], ['b', 2]]);
      const repeated = allRuns.filter((r) => r.slot !== hungSlot && allRuns.filter((o) => o.slot === r.slot).length > 1);
      expect({ repeated, hungSlot, rows: repeated.length === 0 ? [] : all.map((r) => [r.slot.getTime(), r.state, r.attempt, r.term, r.candidateId === b.candidateId ? 'b' : 'a']), events: repeated.length === 0 ? [] : events }).toEqual({ repeated: [], hungSlot, rows: [], events: [] });

      for (const name of ['latest', 'none'] as const) {
        const runs = await runsOf(dsA, ns, name);
        consecutive(runs);
        const byA = (ranBy.get(name) ?? []).filter((r) => r.by === 'a').map((r) => r.slot);
        const byB = (ranBy.get(name) ?? []).filter((r) => r.by === 'b');
        // A slot A claimed just as it stopped (not run) is run again by B as attempt 2: B's first
        // new slot is its first attempt 1.
        const lastA = Math.max(...byA);
        const firstNewB = Math.min(...byB.filter((r) => r.attempt === 1).map((r) => r.slot));
        expect(settledRuns(runs, name).filter((r) => r.state !== 'done' && r.state !== 'missed')).toEqual([]);
        const done = runs.filter((r) => r.state === 'done').map((r) => r.slot.getTime());
        expect(done).toEqual([...new Set([...byA, ...byB.map((r) => r.slot)])].sort((x, y) => x - y));
        const missed = runs.filter((r) => r.state === 'missed');
        for (const r of missed) {
          expect(r.attempt).toBe(0);
          expect(r.slot.getTime()).toBeGreaterThan(lastA);
          expect(r.slot.getTime()).toBeLessThan(firstNewB);
        }
        if (name === 'none') {
          // Nothing of the leaderless time ran: B's first new run is a slot that came due after it led.
          expect(missed.length).toBeGreaterThanOrEqual(Math.floor(gapMs / EVERY) - 1);
        } else {
          // At least two slots came due with nobody leading (the lease outlived A's stop): the newest ran.
          expect(missed.length).toBeGreaterThanOrEqual(1);
        }
      }
      // No schedule error. (A tick slower than its lease on a loaded machine reports one, phase
      // tick: not what this test is about.)
      expect(errors.filter((error) => error.phase !== 'tick')).toEqual([]);
      // A's stop said what it gave up on.
      const stopErrors = errorsA.filter((error) => error.phase !== 'tick');
      // With each message and cause, so that an unexpected one says what it was.
      expect(stopErrors.map((error) => ({ phase: error.phase, message: error.message, cause: String((error as { cause?: unknown }).cause) }))).toEqual([
        { phase: 'stop', message: expect.stringContaining('the scheduled jobs returning'), cause: expect.any(String) },
      ]);
    } finally {
      hang.open();
      await a.stop();
      await b.stop();
    }
  });

  test('run.transaction: writes roll back when the leadership ends before the commit; the next run commits them once', async () => {
    const ns = freshNs();
    const table = `sched_side_${Math.random().toString(36).slice(2, 10)}`;
    await query(dsA, `CREATE TABLE ${table} (slot VARCHAR(40) PRIMARY KEY, attempt INTEGER NOT NULL)`);
    const service = new ElectionService(dsA);
    const a = new LeaderElector({ dataSource: dsA, ns, expireSeconds: 2, intervalMs: 300 });
    const b = new LeaderElector({ dataSource: dsB, ns, expireSeconds: 2, intervalMs: 300 });
    // The held transaction makes ticks wait or fail (reported, retried): not what this test is about.
    a.on('error', () => undefined);
    b.on('error', () => undefined);
    let target: number | undefined;
    let rolledBack: unknown;
    const job = async (run: ScheduledRun) => {
      const first = target === undefined;
      if (first) target = run.slot.getTime();
      await run.transaction(async (manager) => {
        await manager.query(`INSERT INTO ${table} (slot, attempt) VALUES (${dsA.driver.options.type === 'postgres' ? '$1, $2' : '?, ?'})`, [
          run.slot.toISOString(),
          run.attempt,
        ]);
        if (first) {
          // Held open until the lease has run out: the leader's own ticks wait behind this
          // transaction (or fail), so its local deadline passes and then the database's.
          await aborted(run.lease.signal);
          await waitFor('the lease to run out at the database', async () => (await service.getLeader({ ns, session: manager })) === null, 10_000, 50);
        }
      }).catch((error: unknown) => {
        if (first) rolledBack = error;
        throw error;
      });
    };
    a.schedule({ name: 'tx', everyMs: EVERY, catchUp: 'none' }, job);
    b.schedule({ name: 'tx', everyMs: EVERY, catchUp: 'none' }, job);
    try {
      await a.start();
      await b.start();
      await waitFor('the first run to roll back', () => rolledBack !== undefined, 20_000);
      expect((rolledBack as Error).name).toBe('NotLeaderError');
      await waitFor('the slot to be done', async () => (await runsOf(dsA, ns, 'tx')).some((r) => r.slot.getTime() === target && r.state === 'done'), 20_000, 100);
      // One row, written by the attempt that recorded the slot done. That is attempt 2 unless the
      // next leadership too ended before its commit (a CI run saw attempt 3): then a later
      // attempt, and still one row.
      const rows = await query<{ slot: string; attempt: number }>(dsA, `SELECT slot, attempt FROM ${table} WHERE slot = '${new Date(target!).toISOString()}'`);
      const run = (await runsOf(dsA, ns, 'tx')).find((r) => r.slot.getTime() === target)!;
      expect(run.state).toBe('done');
      expect(run.attempt).toBeGreaterThanOrEqual(2);
      expect(rows.map((r) => Number(r.attempt))).toEqual([run.attempt]);
    } finally {
      await a.stop();
      await b.stop();
      await query(dsA, `DROP TABLE ${table}`);
    }
  });
});
