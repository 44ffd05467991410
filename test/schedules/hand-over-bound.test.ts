/**
 * A leadership that ends by a hand-over — an elector's for a preferred candidate, a group's
 * rebalancing (`balance: true`), a group's `remove(ns)` — waits for its running scheduled job at
 * most `stopTimeoutMs`, as `stop()` does, on every database: a job that ignores `run.lease.signal`
 * is then abandoned (`'error'`, phase `schedule`) and the hand-over goes on. The abandoned job's
 * later `run.transaction` commits nothing, and the next leader runs its slot again, once.
 * (A demotion that is no hand-over: runner.test.ts, "a leadership lost and won again".)
 */
import type { DataSource } from 'typeorm';
import { ElectionService, LeaderElector, LeaderElectorError, LeaderElectorGroup, LeaderElectorGroupError, ScheduledRun } from 'gemstone-utils';
import { describeEachDatabase, query, sleep } from '../support/databases';
import { ns as freshNs } from '../support/rows';
import { waitFor } from '../elector/helpers';
import { gate, runsOf } from './helpers';

const EVERY = 1000;
/** Long: no lease runs out during a test, so whoever leads next got the lease by a hand-over. */
const EXPIRE_SECONDS = 30;
const INTERVAL_MS = 300;
const STOP_TIMEOUT_MS = 1000;
/** Generous for a loaded machine; without the bound the hand-over never happens (the ticks renew the lease). */
const HAND_OVER_WAIT_MS = 15_000;

describeEachDatabase('hand-overs wait for a scheduled job at most stopTimeoutMs', (db) => {
  let dsA: DataSource;
  let dsB: DataSource;
  let table: string;

  beforeAll(async () => {
    dsA = await db.connect();
    // A second process where the database is shared; one DataSource for both where it is private.
    dsB = db.shared ? await db.connect() : dsA;
    table = `handover_side_${Math.random().toString(36).slice(2, 10)}`;
    await query(dsA, `CREATE TABLE ${table} (ns VARCHAR(100) NOT NULL, slot VARCHAR(40) NOT NULL, attempt INTEGER NOT NULL, by_whom VARCHAR(10) NOT NULL)`);
  });

  /** The side table's rows of one slot: what the runs of it committed through run.transaction. */
  const written = async (ns: string, slot: number) =>
    (await query<{ attempt: number; by_whom: string }>(dsA, `SELECT attempt, by_whom FROM ${table} WHERE ns = ? AND slot = ?`, [ns, new Date(slot).toISOString()])).map(
      (r) => [Number(r.attempt), r.by_whom],
    );

  /**
   * A schedule's job on one side: every run writes a row through run.transaction. The first run
   * on side `a` ignores its signal until released, then tries the same.
   */
  function jobs() {
    const release = gate();
    const runs: Array<{ by: string; ns: string; slot: number; attempt: number }> = [];
    const late = { returned: false, refused: undefined as unknown, wrote: false };
    let stuck = false;
    const job = (by: string) => async (run: ScheduledRun) => {
      runs.push({ by, ns: run.ns, slot: run.slot.getTime(), attempt: run.attempt });
      const ignoring = by === 'a' && !stuck;
      if (ignoring) {
        stuck = true;
        await release.promise;
      }
      try {
        await run.transaction(async (manager) => {
          if (ignoring) late.wrote = true;
          const params = dsA.options.type === 'postgres' ? '$1, $2, $3, $4' : '?, ?, ?, ?';
          await manager.query(`INSERT INTO ${table} (ns, slot, attempt, by_whom) VALUES (${params})`, [run.ns, run.slot.toISOString(), run.attempt, by]);
        });
      } catch (error) {
        if (!ignoring) throw error;
        late.refused = error;
      } finally {
        if (ignoring) late.returned = true;
      }
    };
    return { job, release, runs, late, stuckRun: () => runs.find((r) => r.by === 'a') };
  }

  test('a hand-over to a preferred candidate goes on stopTimeoutMs after its job ignored the signal; the job commits nothing after', async () => {
    const ns = freshNs();
    const a = new LeaderElector({ dataSource: dsA, ns, expireSeconds: EXPIRE_SECONDS, intervalMs: INTERVAL_MS, stopTimeoutMs: STOP_TIMEOUT_MS });
    const b = new LeaderElector({ dataSource: dsB, ns, expireSeconds: EXPIRE_SECONDS, intervalMs: INTERVAL_MS, priority: 1 });
    const errorsA: LeaderElectorError[] = [];
    const errorsB: LeaderElectorError[] = [];
    a.on('error', (error) => errorsA.push(error));
    b.on('error', (error) => errorsB.push(error));
    let handedOverAt = 0;
    a.on('demoted', (_lease, reason) => {
      if (reason === 'handed-over') handedOverAt = performance.now();
    });
    const j = jobs();
    a.schedule({ name: 'stuck', everyMs: EVERY }, j.job('a'));
    b.schedule({ name: 'stuck', everyMs: EVERY }, j.job('b'));
    try {
      await a.start();
      expect(a.isLeader).toBe(true);
      await waitFor("A's job to run", () => j.stuckRun() !== undefined, 20_000);
      // B outranks A: A's next tick hands over.
      await b.start();
      await waitFor('A to hand over', () => handedOverAt > 0, 10_000);
      await waitFor('B to lead', () => b.isLeader, HAND_OVER_WAIT_MS);
      // The hand-over waited for the job, as long as the bound.
      expect(performance.now() - handedOverAt).toBeGreaterThanOrEqual(STOP_TIMEOUT_MS - 5);
      expect(errorsA.map((error) => error.phase)).toEqual(['schedule']);
      expect(errorsA[0]!.message).toContain(`stopTimeoutMs (${STOP_TIMEOUT_MS} ms)`);
      // The abandoned job goes on: its transaction is refused, nothing of it commits.
      j.release.open();
      await waitFor('the abandoned job to return', () => j.late.returned);
      expect(j.late.refused).toBeInstanceOf(Error);
      expect(j.late.wrote).toBe(false);
      const slot = j.stuckRun()!.slot;
      await waitFor('B to run the slot again', () => j.runs.some((r) => r.by === 'b' && r.slot === slot), 20_000);
      await waitFor('its run to commit', async () => (await written(ns, slot)).length > 0, 10_000, 50);
      await sleep(100);
      expect(await written(ns, slot)).toEqual([[2, 'b']]);
      const run = (await runsOf(dsA, ns, 'stuck')).find((r) => r.slot.getTime() === slot);
      expect(run).toMatchObject({ state: 'done', attempt: 2, candidateId: b.candidateId });
      expect(errorsB).toEqual([]);
    } finally {
      j.release.open();
      await a.stop();
      await b.stop();
    }
  });

  test("a group's rebalancing gives a namespace away stopTimeoutMs after its job ignored the signal", async () => {
    const names = [freshNs(), freshNs()];
    const options = { namespaces: names, balance: true, expireSeconds: EXPIRE_SECONDS, intervalMs: INTERVAL_MS, stopTimeoutMs: STOP_TIMEOUT_MS };
    const a = new LeaderElectorGroup({ dataSource: dsA, ...options });
    const b = new LeaderElectorGroup({ dataSource: dsB, ...options });
    const errorsA: LeaderElectorGroupError[] = [];
    const errorsB: LeaderElectorGroupError[] = [];
    a.on('error', (error) => errorsA.push(error));
    b.on('error', (error) => errorsB.push(error));
    let given: string | undefined;
    let givenAt = 0;
    a.on('demoted', (lease, reason) => {
      if (reason !== 'handed-over' || given !== undefined) return;
      given = lease.ns;
      givenAt = performance.now();
    });
    const j = new Map(names.map((ns) => [ns, jobs()]));
    for (const ns of names) {
      a.schedule(ns, { name: 'stuck', everyMs: EVERY }, j.get(ns)!.job('a'));
      b.schedule(ns, { name: 'stuck', everyMs: EVERY }, j.get(ns)!.job('b'));
    }
    try {
      await a.start();
      expect(names.every((ns) => a.isLeader(ns))).toBe(true);
      await waitFor("A's jobs to run", () => names.every((ns) => j.get(ns)!.stuckRun() !== undefined), 20_000);
      // B joins: A's share is one namespace now, and it gives the other away.
      await b.start();
      await waitFor('A to give a namespace away', () => given !== undefined, 10_000);
      const ns = given!;
      const kept = names.find((n) => n !== ns)!;
      await waitFor('B to lead it', () => b.isLeader(ns), HAND_OVER_WAIT_MS);
      expect(performance.now() - givenAt).toBeGreaterThanOrEqual(STOP_TIMEOUT_MS - 5);
      expect(a.isLeader(kept)).toBe(true);
      expect(errorsA.map((error) => [error.phase, error.namespace])).toEqual([['schedule', ns]]);
      const stuck = j.get(ns)!;
      stuck.release.open();
      await waitFor('the abandoned job to return', () => stuck.late.returned);
      expect(stuck.late.refused).toBeInstanceOf(Error);
      expect(stuck.late.wrote).toBe(false);
      const slot = stuck.stuckRun()!.slot;
      await waitFor('B to run the slot again', () => stuck.runs.some((r) => r.by === 'b' && r.slot === slot), 20_000);
      await waitFor('its run to commit', async () => (await written(ns, slot)).length > 0, 10_000, 50);
      await sleep(100);
      expect(await written(ns, slot)).toEqual([[2, 'b']]);
      expect(errorsB).toEqual([]);
    } finally {
      for (const ns of names) j.get(ns)!.release.open();
      await a.stop();
      await b.stop();
    }
  });

  test('remove(ns) resolves stopTimeoutMs after its job ignored the signal, and vacates the lease', async () => {
    const [ns, other] = [freshNs(), freshNs()];
    const a = new LeaderElectorGroup({ dataSource: dsA, namespaces: [ns, other], expireSeconds: EXPIRE_SECONDS, intervalMs: INTERVAL_MS, stopTimeoutMs: STOP_TIMEOUT_MS });
    const errors: LeaderElectorGroupError[] = [];
    a.on('error', (error) => errors.push(error));
    const j = jobs();
    a.schedule(ns, { name: 'stuck', everyMs: EVERY }, j.job('a'));
    try {
      await a.start();
      await waitFor("the job to run", () => j.stuckRun() !== undefined, 20_000);
      const started = performance.now();
      const removed = await Promise.race([a.remove(ns).then(() => true), sleep(HAND_OVER_WAIT_MS).then(() => false)]);
      expect(removed).toBe(true);
      expect(performance.now() - started).toBeGreaterThanOrEqual(STOP_TIMEOUT_MS - 5);
      expect(await new ElectionService(dsA).getLeader({ ns })).toBeNull();
      expect(a.isLeader(other)).toBe(true);
      expect(errors.map((error) => [error.phase, error.namespace])).toEqual([['schedule', ns]]);
      j.release.open();
      await waitFor('the abandoned job to return', () => j.late.returned);
      expect(j.late.refused).toBeInstanceOf(Error);
      expect(j.late.wrote).toBe(false);
      await sleep(100);
      expect(await written(ns, j.stuckRun()!.slot)).toEqual([]);
      // Left for the next leader of the namespace.
      expect((await runsOf(dsA, ns, 'stuck')).map((r) => r.state)).toEqual(['running']);
    } finally {
      j.release.open();
      await a.stop();
    }
  });
});
