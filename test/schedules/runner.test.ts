/**
 * Schedules on one leader, on every database: each slot once, in order, due by the database's
 * clock; `overlap: 'skip'`; `cancel()` and `stop()` wait for the running job (bounded by
 * `stopTimeoutMs`); validation at `schedule()`.
 */
import { LeaderElector, LeaderElectorError, ValidationError } from 'gemstone-utils';
import { describeEachDatabase, sleep } from '../support/databases';
import { ns as freshNs } from '../support/rows';
import { blockEventLoop, waitFor } from '../elector/helpers';
import { aborted, gate, lessClaimLeftAtStop, runsOf, slotsOf } from './helpers';

const EVERY = 1000;

describeEachDatabase('schedules on one leader', (db) => {
  function elector(dataSource: Parameters<typeof runsOf>[0], extra: Partial<ConstructorParameters<typeof LeaderElector>[0]> = {}) {
    const errors: LeaderElectorError[] = [];
    const e = new LeaderElector({ dataSource, ns: freshNs(), expireSeconds: 3, intervalMs: 300, ...extra });
    e.on('error', (error) => errors.push(error));
    return { e, errors };
  }

  test('each slot runs once, in order, attempt 1, claimed no earlier than it came due by the database clock', async () => {
    const ds = await db.connect();
    const { e, errors } = elector(ds);
    const seen: number[] = [];
    e.schedule({ name: 'tick', everyMs: EVERY }, (run) => {
      expect(run.attempt).toBe(1);
      expect(run.ns).toBe(e.ns);
      expect(run.lease.term).toBe(e.term);
      seen.push(run.slot.getTime());
    });
    await e.start();
    try {
      await waitFor('four runs', () => seen.length >= 4, 20_000);
    } finally {
      await e.stop();
    }
    // One leader all along: consecutive slots, none twice.
    for (let i = 1; i < seen.length; i++) expect(seen[i]! - seen[i - 1]!).toBe(EVERY);
    const runs = lessClaimLeftAtStop(await runsOf(ds, e.ns, 'tick'), seen);
    expect(slotsOf(runs)).toEqual(seen);
    for (const run of runs) {
      expect(run).toMatchObject({ state: 'done', attempt: 1, candidateId: e.candidateId, error: null });
      expect(run.startedAt!.getTime()).toBeGreaterThanOrEqual(run.slot.getTime());
    }
    expect(errors).toEqual([]);
  });

  test("a job that throws: its slot is failed with the message, an 'error' event, and the next slot runs", async () => {
    const ds = await db.connect();
    const { e, errors } = elector(ds);
    const seen: number[] = [];
    e.schedule({ name: 'boom', everyMs: EVERY }, (run) => {
      seen.push(run.slot.getTime());
      if (seen.length === 1) throw new Error('the report server is down');
    });
    await e.start();
    try {
      await waitFor('two runs', () => seen.length >= 2, 20_000);
    } finally {
      await e.stop();
    }
    const runs = await runsOf(ds, e.ns, 'boom');
    expect(runs[0]).toMatchObject({ state: 'failed', attempt: 1, error: 'the report server is down' });
    expect(runs[1]).toMatchObject({ state: 'done' });
    expect(errors.map((error) => error.phase)).toEqual(['schedule']);
    expect(errors[0]!.message).toContain('the report server is down');
  });

  test("overlap 'skip': the slots that come due while the run runs are recorded skipped", async () => {
    const ds = await db.connect();
    const { e, errors } = elector(ds);
    const seen: number[] = [];
    let firstRanMs = 0;
    e.schedule({ name: 'slow', everyMs: EVERY, overlap: 'skip' }, async (run) => {
      seen.push(run.slot.getTime());
      if (seen.length === 1) {
        const started = performance.now();
        await sleep(2.5 * EVERY);
        firstRanMs = performance.now() - started;
      }
    });
    await e.start();
    try {
      await waitFor('three runs', () => seen.length >= 3, 20_000);
    } finally {
      await e.stop();
    }
    expect(firstRanMs).toBeGreaterThanOrEqual(2.5 * EVERY - 5);
    const runs = await runsOf(ds, e.ns, 'slow');
    const first = seen[0]!;
    const second = seen[1]!;
    // The first run outlasted two periods: at least one slot came due during it.
    expect(second - first).toBeGreaterThanOrEqual(2 * EVERY);
    const between = runs.filter((r) => r.slot.getTime() > first && r.slot.getTime() < second);
    expect(between.length).toBe((second - first) / EVERY - 1);
    for (const r of between) expect(r).toMatchObject({ state: 'skipped', attempt: 0 });
    expect(runs.filter((r) => r.state === 'done').map((r) => r.slot.getTime())).toEqual(seen);
    expect(errors).toEqual([]);
  });

  test("overlap 'wait' (default): the slots that come due during a long run run after it, in order", async () => {
    const ds = await db.connect();
    const { e } = elector(ds);
    const seen: number[] = [];
    e.schedule({ name: 'queue', everyMs: EVERY }, async (run) => {
      seen.push(run.slot.getTime());
      if (seen.length === 1) await sleep(2.5 * EVERY);
    });
    await e.start();
    try {
      await waitFor('four runs', () => seen.length >= 4, 20_000);
    } finally {
      await e.stop();
    }
    for (let i = 1; i < seen.length; i++) expect(seen[i]! - seen[i - 1]!).toBe(EVERY);
  });

  test('cancel() aborts the running job and resolves after it returned and its slot was recorded', async () => {
    const ds = await db.connect();
    const { e, errors } = elector(ds);
    let running: number | undefined;
    let returnedAt = 0;
    const schedule = e.schedule({ name: 'cancel-me', everyMs: EVERY }, async (run) => {
      running = run.slot.getTime();
      await aborted(run.lease.signal);
      // Still leading: only the schedule was cancelled.
      expect(e.isLeader).toBe(true);
      await sleep(200);
      returnedAt = performance.now();
    });
    await e.start();
    try {
      await waitFor('a job to run', () => running !== undefined, 20_000);
      expect(schedule.nextSlot()).toBeInstanceOf(Date);
      await schedule.cancel();
      const resolvedAt = performance.now();
      expect(returnedAt).toBeGreaterThan(0);
      expect(returnedAt).toBeLessThanOrEqual(resolvedAt);
      expect(schedule.nextSlot()).toBeNull();
      // The job returned: its slot is done, and nothing more is claimed.
      const runs = await runsOf(ds, e.ns, 'cancel-me');
      expect(runs.map((r) => [r.slot.getTime(), r.state])).toEqual([[running, 'done']]);
      // The name is free again.
      e.schedule({ name: 'cancel-me', everyMs: EVERY }, () => undefined);
    } finally {
      await e.stop();
    }
    expect(errors).toEqual([]);
  });

  test('run.transaction after cancel() commits nothing, though the lease is still live in the database', async () => {
    const ds = await db.connect();
    const { e, errors } = elector(ds);
    let running: number | undefined;
    let refused: unknown;
    let wrote = false;
    const schedule = e.schedule({ name: 'late-tx', everyMs: EVERY }, async (run) => {
      running = run.slot.getTime();
      await aborted(run.lease.signal);
      await run
        .transaction(async () => {
          wrote = true;
        })
        .catch((error: unknown) => {
          refused = error;
          throw error;
        });
    });
    await e.start();
    try {
      await waitFor('a job to run', () => running !== undefined, 20_000);
      await schedule.cancel();
      expect(e.isLeader).toBe(true);
      expect(refused).toBeDefined();
      expect(wrote).toBe(false);
      // Lost to the cancel, not failed: the slot stays running for the next leader to run again.
      expect((await runsOf(ds, e.ns, 'late-tx')).map((r) => [r.slot.getTime(), r.state])).toEqual([[running, 'running']]);
    } finally {
      await e.stop();
    }
    expect(errors).toEqual([]);
  });

  test('stop() aborts the running job and resolves after it returned; the slot it finished is done', async () => {
    const ds = await db.connect();
    const { e } = elector(ds);
    let running: number | undefined;
    let returnedAt = 0;
    e.schedule({ name: 'stop-me', everyMs: EVERY }, async (run) => {
      running = run.slot.getTime();
      await aborted(run.lease.signal);
      await sleep(200);
      returnedAt = performance.now();
    });
    await e.start();
    await waitFor('a job to run', () => running !== undefined, 20_000);
    await e.stop();
    const resolvedAt = performance.now();
    expect(returnedAt).toBeGreaterThan(0);
    expect(returnedAt).toBeLessThanOrEqual(resolvedAt);
    const runs = await runsOf(ds, e.ns, 'stop-me');
    expect(runs.map((r) => [r.slot.getTime(), r.state])).toEqual([[running, 'done']]);
  });

  test('cancel() of a job that ignores its signal resolves at stopTimeoutMs, reports it, and sends nothing after', async () => {
    const ds = await db.connect();
    const stopTimeoutMs = 500;
    const { e, errors } = elector(ds, { stopTimeoutMs });
    const release = gate();
    let running: number | undefined;
    let returned = false;
    const schedule = e.schedule({ name: 'stubborn', everyMs: EVERY }, async (run) => {
      running = run.slot.getTime();
      await release.promise;
      returned = true;
    });
    await e.start();
    try {
      await waitFor('a job to run', () => running !== undefined, 20_000);
      const started = performance.now();
      await schedule.cancel();
      expect(performance.now() - started).toBeGreaterThanOrEqual(stopTimeoutMs - 5);
      expect(errors.map((error) => error.phase)).toEqual(['stop']);
      release.open();
      await waitFor('the job to return', () => returned);
      await sleep(50);
      // Abandoned: its slot is left running, for the next leader.
      const runs = await runsOf(ds, e.ns, 'stubborn');
      expect(runs.map((r) => [r.slot.getTime(), r.state])).toEqual([[running, 'running']]);
    } finally {
      release.open();
      await e.stop();
    }
  });

  test('a leadership lost and won again while a job still runs: the new term waits for it at most stopTimeoutMs, then runs its slot again', async () => {
    const ds = await db.connect();
    const stopTimeoutMs = 800;
    const { e, errors } = elector(ds, { expireSeconds: 1, intervalMs: 200, stopTimeoutMs });
    const release = gate();
    const events: string[] = [];
    let first: number | undefined;
    // 1, unless a loaded machine ended the leadership while the first claim was on its way: then
    // the first run is the retake of that claim (attempt 2).
    let firstAttempt = 0;
    let demotedAt = 0;
    e.on('demoted', () => {
      demotedAt ||= performance.now();
    });
    let refused: unknown;
    let wrote = false;
    e.schedule({ name: 'sticky', everyMs: EVERY }, async (run) => {
      events.push(`start ${run.slot.getTime()} ${run.attempt}`);
      if (first === undefined) {
        first = run.slot.getTime();
        firstAttempt = run.attempt;
        // Ignores its signal, then tries to commit.
        await release.promise;
        await run
          .transaction(async () => {
            wrote = true;
          })
          .catch((error: unknown) => {
            refused = error;
          });
      }
      events.push(`end ${run.slot.getTime()} ${run.attempt}`);
    });
    await e.start();
    try {
      await waitFor('the first job to run', () => first !== undefined, 20_000);
      const term = e.term!;
      // Past the lease, locally and at the database: the leadership ends, the next tick wins a new term.
      blockEventLoop(1_300);
      await waitFor('a new term', () => (e.term ?? 0) > term, 10_000);
      // The new term waits for the old job as a hand-over does: stopTimeoutMs after the old
      // leadership ended it is abandoned, and its slot runs again (beside it).
      await waitFor('the slot to run again', () => events.includes(`start ${first} ${firstAttempt + 1}`), 10_000);
      expect(performance.now() - demotedAt).toBeGreaterThanOrEqual(stopTimeoutMs - 5);
      expect(events.slice(0, 2)).toEqual([`start ${first} ${firstAttempt}`, `start ${first} ${firstAttempt + 1}`]);
      const abandoned = errors.filter((error) => error.phase === 'schedule');
      expect(abandoned).toHaveLength(1);
      expect(abandoned[0]!.message).toContain(`stopTimeoutMs (${stopTimeoutMs} ms)`);
      release.open();
      await waitFor('the old job to return', () => events.includes(`end ${first} ${firstAttempt}`));
      // Its transaction is refused: nothing of the abandoned run commits.
      expect(refused).toBeInstanceOf(Error);
      expect(wrote).toBe(false);
    } finally {
      release.open();
      await e.stop();
    }
    const runs = await runsOf(ds, e.ns, 'sticky');
    expect(runs[0]).toMatchObject({ state: 'done', attempt: firstAttempt + 1 });
    expect(runs[0]!.slot.getTime()).toBe(first);
  });

  test('validation: options, job, a name already scheduled in the namespace', async () => {
    const ds = await db.connect();
    const { e } = elector(ds);
    const parameter = (fn: () => unknown) => {
      try {
        fn();
      } catch (error) {
        expect(error).toBeInstanceOf(ValidationError);
        return (error as ValidationError).parameter;
      }
      throw new Error('did not throw');
    };
    expect(parameter(() => e.schedule({ name: 'a', everyMs: 500 }, () => undefined))).toBe('options.everyMs');
    expect(parameter(() => e.schedule({ name: 'a', cron: '* * * * *', timeZone: 'Nowhere/Land' }, () => undefined))).toBe('options.timeZone');
    expect(parameter(() => e.schedule({ name: 'a', everyMs: 1000 }, 'job' as never))).toBe('job');
    const first = e.schedule({ name: 'a', everyMs: 1000 }, () => undefined);
    expect(parameter(() => e.schedule({ name: 'a', cron: '* * * * *' }, () => undefined))).toBe('options.name');
    await first.cancel();
    e.schedule({ name: 'a', cron: '* * * * *' }, () => undefined);
    await e.stop();
  });
});
