/**
 * The runs of schedules as the database keeps them: a slot is claimed only by the live leader
 * under its term and only once due by the database clock; one term at a time runs it; a later
 * term runs a slot whose leader was lost again, up to `maxAttempts`, then abandons it; finishing
 * is fenced and commits with the job's writes or not at all; missed and skipped slots are
 * recorded once.
 */
import type { DataSource } from 'typeorm';
import { DEFAULT_SQLITE_WAIT_MS, ElectionService, NotLeaderError, SqliteTransactionOpenError, ValidationError } from 'gemstone-utils';
import { describeEachDatabase, inCallerTransaction, query, uuid } from '../support/databases';
import { ns as freshNs, plainUtcMs } from '../support/rows';
import { decideFence, type LeaseRow } from '../../dist/src/election/decision';
import { createRunsStore } from '../../dist/src/schedules/store';
import { databaseNow, leaderOf, pastSlot, runsStoreOf } from './support';

/** The stored row of one slot, read behind the store's back. */
async function rowOf(ds: DataSource, ns: string, name: string): Promise<Record<string, unknown>[]> {
  return query(ds, 'SELECT state, attempt, term, candidate_id, error, started_at, finished_at FROM gemstone_election_run WHERE ns = ? AND name = ?', [ns, name]);
}

describeEachDatabase('runs store', (db) => {
  let ds: DataSource;
  let service: ElectionService;

  beforeAll(async () => {
    ds = await db.connect();
    service = new ElectionService(ds);
    await query(ds, 'CREATE TABLE sched_job_writes (ns varchar(255) NOT NULL, note varchar(64) NOT NULL)');
  });

  test('the leader claims a due slot once: attempt 1, then "running" for the same term', async () => {
    const ns = freshNs();
    const who = await leaderOf(service, ns);
    const slot = await pastSlot(ds);
    const store = runsStoreOf(ds);
    const first = await store.claim({ ns, name: 'nightly', slot }, who, 3);
    expect(first).toMatchObject({ claimed: true, attempt: 1 });
    expect(first.databaseNow.getTime()).toBeGreaterThanOrEqual(slot.getTime());
    expect(await store.claim({ ns, name: 'nightly', slot }, who, 3)).toMatchObject({ claimed: false, why: 'running', state: 'running' });
    const [row] = await rowOf(ds, ns, 'nightly');
    expect(row).toMatchObject({ state: 'running', attempt: 1, candidate_id: who.candidateId, finished_at: null, error: null });
    expect(Number(row!.term)).toBe(who.term);
    expect(row!.started_at).not.toBeNull();
    const [info] = await service.getRuns({ ns });
    expect(info).toEqual({
      ns, name: 'nightly', slot, state: 'running', attempt: 1, term: who.term, candidateId: who.candidateId,
      startedAt: expect.any(Date), finishedAt: null, error: null,
    });
  });

  test('refused without writing: a follower, a stale term, no leader row, an expired lease', async () => {
    const ns = freshNs();
    const who = await leaderOf(service, ns);
    const follower = uuid();
    await service.elect(follower, { ns });
    const slot = await pastSlot(ds);
    const store = runsStoreOf(ds);
    expect(await store.claim({ ns, name: 'job', slot }, { candidateId: follower, term: who.term }, 3)).toMatchObject({ claimed: false, why: 'not-leader' });
    expect(await store.claim({ ns, name: 'job', slot }, { candidateId: who.candidateId, term: who.term + 1 }, 3)).toMatchObject({ claimed: false, why: 'not-leader' });
    expect(await store.claim({ ns: freshNs(), name: 'job', slot }, who, 3)).toMatchObject({ claimed: false, why: 'not-leader' });

    // A stale term: the same candidate leads again under a newer one.
    await service.resign(who.candidateId, { ns });
    const again = await service.electOutcome(who.candidateId, { ns });
    expect(again.term).toBe(who.term + 1);
    expect(await store.claim({ ns, name: 'job', slot }, who, 3)).toMatchObject({ claimed: false, why: 'not-leader' });

    // An expired lease: nobody took over, but the lease ran out by the database clock.
    const short = new ElectionService(ds, { expireSeconds: 1 });
    const spaceB = freshNs();
    const lapsing = await leaderOf(short, spaceB);
    while ((await short.getLeader({ ns: spaceB })) !== null) await new Promise((resolve) => setTimeout(resolve, 100));
    expect(await store.claim({ ns: spaceB, name: 'job', slot }, lapsing, 3)).toMatchObject({ claimed: false, why: 'not-leader' });

    expect(await rowOf(ds, ns, 'job')).toEqual([]);
    expect(await rowOf(ds, spaceB, 'job')).toEqual([]);
  });

  test('a slot later than the database clock is not due; it is claimed once the clock reaches it', async () => {
    const ns = freshNs();
    const who = await leaderOf(service, ns);
    const now = await databaseNow(ds);
    const slot = new Date(now.getTime() + 1500);
    const store = runsStoreOf(ds);
    const early = await store.claim({ ns, name: 'soon', slot }, who, 3);
    expect(early).toMatchObject({ claimed: false, why: 'not-due' });
    expect(early.databaseNow.getTime()).toBeLessThan(slot.getTime());
    expect(await rowOf(ds, ns, 'soon')).toEqual([]);
    let answer = early;
    while (!answer.claimed && answer.why === 'not-due') {
      await new Promise((resolve) => setTimeout(resolve, 100));
      await service.elect(who.candidateId, { ns }); // keep the lease
      answer = await store.claim({ ns, name: 'soon', slot }, who, 3);
    }
    expect(answer).toMatchObject({ claimed: true, attempt: 1 });
    expect(answer.databaseNow.getTime()).toBeGreaterThanOrEqual(slot.getTime());
  });

  test('a later term runs a slot whose leader was lost again (attempt + 1), and abandons it after maxAttempts', async () => {
    const ns = freshNs();
    const store = runsStoreOf(ds);
    const slot = await pastSlot(ds);
    const key = { ns, name: 'flaky', slot };
    const attempts: unknown[] = [];
    for (let i = 0; i < 3; i++) {
      const who = await leaderOf(service, ns);
      attempts.push(await store.claim(key, who, 3));
      await service.resign(who.candidateId, { ns }); // the leader is lost mid-run
    }
    expect(attempts).toEqual([1, 2, 3].map((attempt) => expect.objectContaining({ claimed: true, attempt })));
    const fourth = await leaderOf(service, ns);
    expect(await store.claim(key, fourth, 3)).toMatchObject({ claimed: false, why: 'abandoned', state: 'abandoned' });
    expect(await store.claim(key, fourth, 3)).toMatchObject({ claimed: false, why: 'final', state: 'abandoned' });
    const [row] = await rowOf(ds, ns, 'flaky');
    expect(row).toMatchObject({ state: 'abandoned', attempt: 3 });
    expect(row!.finished_at).not.toBeNull();
  });

  test('retake: a run left running under this very term is run again (attempt + 1), abandoned after maxAttempts; without it, "running"', async () => {
    const ns = freshNs();
    const store = runsStoreOf(ds);
    const slot = await pastSlot(ds);
    const key = { ns, name: 'retaken', slot };
    const who = await leaderOf(service, ns);
    expect(await store.claim(key, who, 2)).toMatchObject({ claimed: true, attempt: 1 });
    // An earlier leadership of this term left it running: only a retake runs it again.
    expect(await store.claim(key, who, 2)).toMatchObject({ claimed: false, why: 'running' });
    expect(await store.claim(key, who, 2, true)).toMatchObject({ claimed: true, attempt: 2 });
    expect(await store.claim(key, who, 2, true)).toMatchObject({ claimed: false, why: 'abandoned', state: 'abandoned' });
    expect(await store.claim(key, who, 2, true)).toMatchObject({ claimed: false, why: 'final', state: 'abandoned' });
    // A retake is still fenced: a stale term retakes nothing.
    const other = { ns, name: 'stale', slot };
    expect(await store.claim(other, who, 3)).toMatchObject({ claimed: true, attempt: 1 });
    expect(await store.claim(other, { ...who, term: who.term - 1 }, 3, true)).toMatchObject({ claimed: false, why: 'not-leader' });
    const [row] = await rowOf(ds, ns, 'stale');
    expect(row).toMatchObject({ state: 'running', attempt: 1 });
  });

  test('finish marks the run done or failed; a finished slot is never claimed again', async () => {
    const ns = freshNs();
    const who = await leaderOf(service, ns);
    const store = runsStoreOf(ds);
    const slot = await pastSlot(ds);
    await store.claim({ ns, name: 'ok', slot }, who, 3);
    await store.finish({ ns, name: 'ok', slot }, who, 'done');
    await store.claim({ ns, name: 'bad', slot }, who, 3);
    const long = `boom ${'é'.repeat(3000)}`;
    await store.finish({ ns, name: 'bad', slot }, who, 'failed', long);
    const runs = await service.getRuns({ ns });
    expect(runs.map((r) => [r.name, r.state, r.error?.length ?? null])).toEqual([
      ['bad', 'failed', 2000],
      ['ok', 'done', null],
    ]);
    expect(runs[0]!.error).toBe(long.slice(0, 2000));
    for (const run of runs) expect(run.finishedAt!.getTime()).toBeGreaterThanOrEqual(run.startedAt!.getTime());
    expect(await store.claim({ ns, name: 'ok', slot }, who, 3)).toMatchObject({ claimed: false, why: 'final', state: 'done' });
    // Finishing twice: the row is no longer running under the term.
    await expect(store.finish({ ns, name: 'ok', slot }, who, 'done')).rejects.toBeInstanceOf(NotLeaderError);
  });

  test("a failed run's error is stored readable everywhere: NUL and lone surrogates replaced; none given is null", async () => {
    const ns = freshNs();
    const who = await leaderOf(service, ns);
    const store = runsStoreOf(ds);
    const slot = await pastSlot(ds);
    for (const name of ['nul', 'none']) await store.claim({ ns, name, slot }, who, 3);
    await store.finish({ ns, name: 'nul', slot }, who, 'failed', 'a\u0000b\ud800c');
    await store.finish({ ns, name: 'none', slot }, who, 'failed');
    const runs = await service.getRuns({ ns });
    expect(runs.map((r) => [r.name, r.state, r.error])).toEqual([
      ['none', 'failed', null],
      ['nul', 'failed', 'a\ufffdb\ufffdc'],
    ]);
  });

  test("finish inside the caller's transaction commits with the job's writes, or rolls back with them", async () => {
    const ns = freshNs();
    const who = await leaderOf(service, ns);
    const store = runsStoreOf(ds);
    const slot = await pastSlot(ds);
    const key = { ns, name: 'tx', slot };
    await store.claim(key, who, 3);

    const failure = new Error('the job failed after its write');
    const rolledBack = await inCallerTransaction(ds, async (runner) => {
      await runner.query(db.kind === 'postgres' ? 'INSERT INTO sched_job_writes VALUES ($1, $2)' : 'INSERT INTO sched_job_writes VALUES (?, ?)', [ns, 'first']);
      await store.finish(key, who, 'done', undefined, runner);
      throw failure;
    }).catch((e: unknown) => e);
    expect(rolledBack).toBe(failure);
    expect(await rowOf(ds, ns, 'tx')).toEqual([expect.objectContaining({ state: 'running', finished_at: null })]);
    expect(await query(ds, 'SELECT note FROM sched_job_writes WHERE ns = ?', [ns])).toEqual([]);

    await inCallerTransaction(ds, async (runner) => {
      await runner.query(db.kind === 'postgres' ? 'INSERT INTO sched_job_writes VALUES ($1, $2)' : 'INSERT INTO sched_job_writes VALUES (?, ?)', [ns, 'second']);
      await store.finish(key, who, 'done', undefined, runner.manager);
    });
    expect(await rowOf(ds, ns, 'tx')).toEqual([expect.objectContaining({ state: 'done' })]);
    expect(await query(ds, 'SELECT note FROM sched_job_writes WHERE ns = ?', [ns])).toEqual([{ note: 'second' }]);
  });

  test("finish under a stale term throws NotLeaderError and writes nothing, nor lets the job's writes commit", async () => {
    const ns = freshNs();
    const store = runsStoreOf(ds);
    const slot = await pastSlot(ds);
    const key = { ns, name: 'stale', slot };
    const old = await leaderOf(service, ns);
    await store.claim(key, old, 3);
    await service.resign(old.candidateId, { ns });
    const next = await leaderOf(service, ns);
    const before = await rowOf(ds, ns, 'stale');

    const error = await inCallerTransaction(ds, async (runner) => {
      await runner.query(db.kind === 'postgres' ? 'INSERT INTO sched_job_writes VALUES ($1, $2)' : 'INSERT INTO sched_job_writes VALUES (?, ?)', [ns, 'stale']);
      await store.finish(key, old, 'done', undefined, runner);
    }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(NotLeaderError);
    expect(error).toMatchObject({ ns, candidateId: old.candidateId, leaderId: next.candidateId, term: next.term });
    const own = await store.finish(key, old, 'failed', 'late').catch((e: unknown) => e);
    expect(own).toBeInstanceOf(NotLeaderError);
    expect(await rowOf(ds, ns, 'stale')).toEqual(before);
    expect(await query(ds, 'SELECT note FROM sched_job_writes WHERE ns = ?', [ns])).toEqual([]);
  });

  test('concurrent claims of one slot from two connections: exactly one wins, every time', async () => {
    const other = db.shared ? await db.connect() : ds;
    const ns = freshNs();
    const who = await leaderOf(service, ns);
    const slot = await pastSlot(ds);
    const stores = [runsStoreOf(ds), runsStoreOf(other)];
    for (let i = 0; i < 8; i++) {
      const key = { ns, name: `race-${i}`, slot };
      const answers = await Promise.all(stores.map((store) => store.claim(key, who, 3)));
      expect(answers.filter((a) => a.claimed)).toEqual([expect.objectContaining({ attempt: 1 })]);
      expect(answers.filter((a) => !a.claimed)).toEqual([expect.objectContaining({ why: 'running' })]);
    }
    // Two leaders' claims race across a hand-over: never both.
    const key = { ns, name: 'handover', slot };
    await service.resign(who.candidateId, { ns });
    const next = await leaderOf(service, ns);
    const answers = await Promise.all([stores[0]!.claim(key, who, 3), stores[1]!.claim(key, next, 3)]);
    expect(answers.map((a) => (a.claimed ? 'claimed' : a.why))).toEqual(['not-leader', 'claimed']);
  });

  test('record: missed and skipped slots are final at once, idempotent, and leave existing rows as they are', async () => {
    const ns = freshNs();
    const who = await leaderOf(service, ns);
    const store = runsStoreOf(ds);
    const base = (await pastSlot(ds, 3_600_000)).getTime();
    const keys = Array.from({ length: 150 }, (_, i) => ({ ns, name: 'every-second', slot: new Date(base + i * 1000) }));
    await store.claim(keys[149]!, who, 3);
    await store.record(keys, who, 'missed');
    await store.record(keys.slice(0, 10), who, 'skipped'); // already recorded: unchanged
    const runs = await service.getRuns({ ns, limit: 1000 });
    expect(runs).toHaveLength(150);
    expect(runs[0]).toMatchObject({ state: 'running', attempt: 1 });
    expect(new Set(runs.slice(1).map((r) => `${r.state}:${r.attempt}:${r.startedAt}`))).toEqual(new Set(['missed:0:null']));
    expect(runs.slice(1).every((r) => r.finishedAt !== null && r.term === who.term && r.candidateId === who.candidateId)).toBe(true);
    expect(await store.claim(keys[0]!, who, 3)).toMatchObject({ claimed: false, why: 'final', state: 'missed' });

    const follower = uuid();
    const refused = await store.record([{ ns, name: 'other', slot: keys[0]!.slot }], { candidateId: follower, term: who.term }, 'skipped').catch((e: unknown) => e);
    expect(refused).toBeInstanceOf(NotLeaderError);
    expect(await rowOf(ds, ns, 'other')).toEqual([]);
  });

  /** The leader row of `ns` as decideFence takes it (undefined: none), read behind the store's back. */
  async function leaseRowOf(ns: string): Promise<LeaseRow | undefined> {
    const [row] = await query(ds, 'SELECT leader_id, term FROM gemstone_election_leader WHERE ns = ?', [ns]);
    if (!row) return undefined;
    const leaderId = row.leader_id === null ? null : String(row.leader_id);
    const leaseExpiresAt = leaderId === null ? null : await plainUtcMs(ds, db.kind, 'gemstone_election_leader', 'lease_expires_at', ns);
    return { leaderId, term: Number(row.term), leaseExpiresAt };
  }

  test('claim, finish and record answer every leader row as decideFence does: its outcome, and its NotLeaderError fields; a refused record writes nothing', async () => {
    const store = runsStoreOf(ds);
    const slot = await pastSlot(ds);
    const short = new ElectionService(ds, { expireSeconds: 1 });
    /** Each state of the leader row, reached by the election's own calls: the namespace and who asks. */
    const states: Record<string, () => Promise<{ ns: string; who: { candidateId: string; term: number } }>> = {
      'no row': async () => ({ ns: freshNs(), who: { candidateId: uuid(), term: 1 } }),
      vacant: async () => {
        const ns = freshNs();
        const who = await leaderOf(service, ns);
        await service.resign(who.candidateId, { ns });
        return { ns, who };
      },
      'live other candidate': async () => {
        const ns = freshNs();
        const other = await leaderOf(service, ns);
        return { ns, who: { candidateId: uuid(), term: other.term } };
      },
      'own lease expired': async () => {
        const ns = freshNs();
        const who = await leaderOf(short, ns);
        while ((await short.getLeader({ ns })) !== null) await new Promise((resolve) => setTimeout(resolve, 100));
        return { ns, who };
      },
      'own live lease under another term': async () => {
        const ns = freshNs();
        const who = await leaderOf(service, ns);
        return { ns, who: { candidateId: who.candidateId, term: who.term + 1 } };
      },
      'own live lease under the term': async () => {
        const ns = freshNs();
        return { ns, who: await leaderOf(service, ns) };
      },
    };
    const seen: Record<string, string> = {};
    for (const [state, reach] of Object.entries(states)) {
      const { ns, who } = await reach();
      const row = await leaseRowOf(ns);
      const verdict = decideFence(row, (await databaseNow(ds)).getTime(), who.candidateId, who.term);
      seen[state] = verdict.branch;
      // Keys enough for two of the general path's INSERTs: a refused record writes none of them.
      const keys = Array.from({ length: 150 }, (_, i) => ({ ns, name: 'fenced', slot: new Date(slot.getTime() - i * 1000) }));
      const claimed = await store.claim(keys[0]!, who, 3);
      const finished = await store.finish(keys[0]!, who, 'done').then(() => 'finished', (e: unknown) => e);
      const recorded = await store.record(keys.slice(1), who, 'missed').then(() => 'recorded', (e: unknown) => e);
      if (verdict.pass) {
        expect([state, claimed]).toEqual([state, expect.objectContaining({ claimed: true, attempt: 1 })]);
        expect([state, finished, recorded]).toEqual([state, 'finished', 'recorded']);
        const rows = await rowOf(ds, ns, 'fenced');
        expect(rows.map((r) => r.state).sort()).toEqual(['done', ...Array(149).fill('missed')]);
        continue;
      }
      expect([state, claimed]).toEqual([state, expect.objectContaining({ claimed: false, why: 'not-leader' })]);
      for (const error of [finished, recorded]) {
        expect(error).toBeInstanceOf(NotLeaderError);
        const { ns: errorNs, candidateId, leaderId, term } = error as NotLeaderError;
        expect({ state, errorNs, candidateId, leaderId, term }).toEqual({ state, errorNs: ns, candidateId: who.candidateId, leaderId: verdict.leaderId, term: verdict.term });
      }
      expect([state, await rowOf(ds, ns, 'fenced')]).toEqual([state, []]);
    }
    // Every branch of the reference was reached, each by the state meant to reach it.
    expect(seen).toEqual({
      'no row': 'A1',
      vacant: 'A2',
      'live other candidate': 'A2',
      'own lease expired': 'A2',
      'own live lease under another term': 'A3',
      'own live lease under the term': 'A',
    });
  });

  test('lookBack: the newest recorded slot and the running ones, oldest first', async () => {
    const ns = freshNs();
    const who = await leaderOf(service, ns);
    const store = runsStoreOf(ds);
    expect(await store.lookBack(ns, 'hourly')).toEqual({ newest: null, unfinished: [], databaseNow: expect.any(Date) });
    const base = (await pastSlot(ds, 600_000)).getTime();
    const [a, b, c] = [0, 1, 2].map((i) => ({ ns, name: 'hourly', slot: new Date(base + i * 60_000) }));
    await store.claim(b!, who, 3);
    await store.claim(a!, who, 3);
    await store.record([c!], who, 'skipped');
    const seen = await store.lookBack(ns, 'hourly');
    expect(seen.newest).toEqual(c!.slot);
    expect(seen.unfinished).toEqual([a, b]);
    expect(seen.databaseNow.getTime()).toBeGreaterThan(c!.slot.getTime());
  });

  test('bad arguments are ValidationErrors naming the parameter, before any statement', async () => {
    const store = runsStoreOf(ds);
    const who = { candidateId: uuid(), term: 1 };
    const slot = new Date();
    const cases: Array<[() => Promise<unknown>, string]> = [
      [() => store.claim({ ns: '', name: 'x', slot }, who, 3), 'key.ns'],
      [() => store.claim({ ns: 'n', name: 'x'.repeat(101), slot }, who, 3), 'key.name'],
      [() => store.claim({ ns: 'n', name: 'x', slot: new Date(NaN) }, who, 3), 'key.slot'],
      [() => store.claim({ ns: 'n', name: 'x', slot }, { candidateId: 'nope', term: 1 }, 3), 'who.candidateId'],
      [() => store.claim({ ns: 'n', name: 'x', slot }, { candidateId: who.candidateId } as never, 3), 'who.term'],
      [() => store.claim({ ns: 'n', name: 'x', slot }, who, 0), 'maxAttempts'],
      [() => store.claim({ ns: 'n', name: 'x', slot }, who, 3, 'yes' as never), 'retake'],
      [() => store.finish({ ns: 'n', name: 'x', slot }, who, 'skipped' as never), 'state'],
      [() => store.record([{ ns: 'n', name: 'x', slot }, { ns: 'm', name: 'x', slot }], who, 'missed'), 'keys[1].ns'],
      [() => store.lookBack('n', ''), 'name'],
    ];
    for (const [call, parameter] of cases) {
      const error = await call().catch((e: unknown) => e);
      expect(error).toBeInstanceOf(ValidationError);
      expect((error as ValidationError).parameter).toBe(parameter);
    }
  });
});

describeEachDatabase(
  'runs store: sqliteWaitMs',
  (db) => {
    test('a call without session waits sqliteWaitMs for a transaction held open on the shared connection, then throws SqliteTransactionOpenError having written nothing', async () => {
      const ds = await db.connect();
      expect(() => createRunsStore(ds, { sqliteWaitMs: -1 })).toThrow(expect.objectContaining({ name: 'ValidationError', parameter: 'options.sqliteWaitMs' }));
      const service = new ElectionService(ds);
      const ns = freshNs();
      const who = await leaderOf(service, ns);
      const slot = await pastSlot(ds);
      const store = createRunsStore(ds, { sqliteWaitMs: 200 });
      const runner = ds.createQueryRunner();
      await runner.startTransaction();
      try {
        const startedAt = Date.now();
        const error = await store.claim({ ns, name: 'waits', slot }, who, 3).catch((e: unknown) => e);
        const waited = Date.now() - startedAt;
        expect(error).toBeInstanceOf(SqliteTransactionOpenError);
        expect(String((error as Error).message)).toMatch(/more than 200 ms/);
        // The option's wait, not the default's: the timer fires no earlier than asked.
        expect(waited).toBeGreaterThanOrEqual(190);
        expect(waited).toBeLessThan(DEFAULT_SQLITE_WAIT_MS);
      } finally {
        await runner.commitTransaction();
        await runner.release();
      }
      expect(await rowOf(ds, ns, 'waits')).toEqual([]);
      expect(await store.claim({ ns, name: 'waits', slot }, who, 3)).toMatchObject({ claimed: true, attempt: 1 });
    });
  },
  { kinds: ['sqlite'] },
);
