/**
 * `watch`: the current state first, then every change in term order, never a state twice; an
 * expiry is reported although nobody writes; the watch ends cleanly on abort and break and leaves
 * nothing running behind it.
 */
import type { DataSource } from 'typeorm';
import { ElectionService, LeaderChange, ValidationError, watch } from 'gemstone-utils';
import { describeEachDatabase, query, sleep, uuid } from '../support/databases';
import { ns as freshNs } from '../support/rows';
import { runNode } from '../support/children/spawn';
import { waitFor } from '../elector/helpers';
import { collect, expectWellOrdered } from './watch-support';

/** Poll period of the watchers under test: short, so a paced test needs no long waits. */
const POLL_MS = 100;

describeEachDatabase('watch', (db) => {
  let ds: DataSource;
  let svc: ElectionService;

  beforeAll(async () => {
    ds = await db.connect();
    svc = new ElectionService(ds);
  });

  test('yields the current state first, then every change in term order: elect, resign, unregister, expiry; renewals yield nothing', async () => {
    const ns = freshNs();
    const [a, b] = [uuid(), uuid()];
    const short = new ElectionService(ds, { expireSeconds: 1.5 });
    const controller = new AbortController();
    const watched = collect(svc.watch({ ns, pollMs: POLL_MS, signal: controller.signal }));

    await watched.waitForState(null, null);
    await svc.elect(a, { ns });
    await watched.waitForState(a, 1);
    expect(await svc.resign(a, { ns })).toBe(true);
    await watched.waitForState(null, 1);
    await svc.elect(b, { ns });
    await watched.waitForState(b, 2);
    await svc.unregisterCandidate(b, { ns });
    await watched.waitForState(null, 2);
    await short.elect(a, { ns });
    await watched.waitForState(a, 3);
    // Nobody writes: the lease runs out and the watch reports the vacancy by itself.
    await watched.waitForState(null, 3);
    await svc.elect(b, { ns });
    await watched.waitForState(b, 4);
    for (let i = 0; i < 3; i++) {
      await sleep(2 * POLL_MS);
      expect(await svc.elect(b, { ns })).toBe(b); // renewal: same state
    }
    await sleep(3 * POLL_MS);
    controller.abort();
    expect(await watched.ended).toEqual({});

    expect(watched.states()).toEqual([
      [null, null],
      [a, 1],
      [null, 1],
      [b, 2],
      [null, 2],
      [a, 3],
      [null, 3],
      [b, 4],
    ]);
    expectWellOrdered(watched.changes);
    for (const change of watched.changes) {
      expect(change.ns).toBe(ns);
      expect(change.at).toBeInstanceOf(Date);
      expect(Number.isNaN(change.at.getTime())).toBe(false);
    }
    // The expiry is dated at the lease's end (database clock), not when the watch noticed it.
    const expired = watched.changes[6]!;
    const acquired = watched.changes[5]!;
    expect(expired.at.getTime() - acquired.at.getTime()).toBeGreaterThanOrEqual(1_400);
    expect(expired.at.getTime() - acquired.at.getTime()).toBeLessThanOrEqual(1_600);
  });

  test('a watch started mid-term yields that term first; a second watcher on the same namespace sees the same states', async () => {
    const ns = freshNs();
    const [a, b] = [uuid(), uuid()];
    await svc.elect(a, { ns });
    await svc.resign(a, { ns });
    await svc.elect(b, { ns });
    const controller = new AbortController();
    const first = collect(svc.watch({ ns, pollMs: POLL_MS, signal: controller.signal }));
    const second = collect(watch({ ns, dataSource: ds, pollMs: POLL_MS, signal: controller.signal }));
    await first.waitForState(b, 2);
    await second.waitForState(b, 2);
    await svc.resign(b, { ns });
    await first.waitForState(null, 2);
    await second.waitForState(null, 2);
    controller.abort();
    await Promise.all([first.ended, second.ended]);
    expect(first.states()).toEqual([
      [b, 2],
      [null, 2],
    ]);
    expect(second.states()).toEqual(first.states());
  });

  test('metadata: the leader’s candidate metadata, null for a vacancy and a leader without any, also in states filled in from the history', async () => {
    const ns = freshNs();
    const [a, b] = [uuid(), uuid()];
    await svc.elect(a, { ns });
    await query(ds, 'UPDATE gemstone_election_candidate SET metadata = ? WHERE ns = ? AND candidate_id = ?', [JSON.stringify({ host: 'alpha', pid: 7 }), ns, a]);
    const controller = new AbortController();
    const watched = collect(svc.watch({ ns, pollMs: 300, signal: controller.signal }));
    await watched.waitForState(a, 1);
    // Usually all between two reads: then the watch learns of term 3 first and fills in the rest.
    await svc.resign(a, { ns });
    await svc.elect(b, { ns });
    await svc.resign(b, { ns });
    await svc.elect(a, { ns });
    await watched.waitForState(a, 3);
    controller.abort();
    expect(await watched.ended).toEqual({});
    expect(watched.states()).toEqual([
      [a, 1],
      [null, 1],
      [b, 2],
      [null, 2],
      [a, 3],
    ]);
    const alpha = { host: 'alpha', pid: 7 };
    expect(watched.changes.map((c) => c.metadata)).toEqual([alpha, null, null, null, alpha]);
  });

  /**
   * What a failover that lost term 1's grant to its first holder and granted term 1 to `to` leaves
   * behind: the leader row and term 1's history row name `to` (the library's second grant
   * overwrites the history row of the term).
   */
  const regrant = async (ns: string, to: string) => {
    await query(ds, 'UPDATE gemstone_election_leader SET leader_id = ? WHERE ns = ?', [to, ns]);
    await query(ds, 'UPDATE gemstone_election_history SET leader_id = ? WHERE ns = ? AND term = 1', [to, ns]);
  };

  test('a term granted twice: the second holder is a change, yielded after the first; its renewals yield nothing', async () => {
    const ns = freshNs();
    const [a, b] = [uuid(), uuid()];
    await svc.elect(a, { ns });
    expect(await svc.elect(b, { ns })).toBe(a); // b registered, following
    const controller = new AbortController();
    const watched = collect(svc.watch({ ns, pollMs: POLL_MS, signal: controller.signal }));
    await watched.waitForState(a, 1);
    await regrant(ns, b);
    expect((await svc.getLeader({ ns }))?.leaderId).toBe(b);
    await watched.waitForState(b, 1);
    for (let i = 0; i < 3; i++) {
      await sleep(2 * POLL_MS);
      expect(await svc.elect(b, { ns })).toBe(b); // renewal: same state
    }
    expect(await svc.resign(b, { ns })).toBe(true);
    await watched.waitForState(null, 1);
    controller.abort();
    expect(await watched.ended).toEqual({});
    expect(watched.states()).toEqual([
      [a, 1],
      [b, 1],
      [null, 1],
    ]);
    expectWellOrdered(watched.changes);
  });

  test('a term granted twice whose second holder left before the next read: the watch yields that holder from the history', async () => {
    const ns = freshNs();
    const [a, b, c] = [uuid(), uuid(), uuid()];
    await svc.elect(a, { ns });
    await svc.elect(b, { ns });
    await svc.elect(c, { ns });
    const controller = new AbortController();
    const watched = collect(svc.watch({ ns, pollMs: POLL_MS, signal: controller.signal }));
    await watched.waitForState(a, 1);
    // Term 1 granted again, to b, and resigned by b, in one transaction: no read sees b leading.
    const runner = ds.createQueryRunner();
    await runner.connect();
    try {
      await runner.startTransaction();
      const pg = ds.options.type === 'postgres';
      await runner.query(`UPDATE gemstone_election_leader SET leader_id = ${pg ? '$1' : '?'} WHERE ns = ${pg ? '$2' : '?'}`, [b, ns]);
      await runner.query(`UPDATE gemstone_election_history SET leader_id = ${pg ? '$1' : '?'} WHERE ns = ${pg ? '$2' : '?'} AND term = 1`, [b, ns]);
      expect(await svc.resign(b, { ns, session: runner })).toBe(true);
      await runner.commitTransaction();
    } finally {
      await runner.release();
    }
    // The next read finds the vacancy after term 1, or already term 2: either way b's term 1 is in between.
    await svc.elect(c, { ns });
    await watched.waitForState(c, 2);
    controller.abort();
    expect(await watched.ended).toEqual({});
    expect(watched.states()).toEqual([
      [a, 1],
      [b, 1],
      [null, 1],
      [c, 2],
    ]);
    expectWellOrdered(watched.changes);
  });

  if (db.kind === 'postgres') {
    test('PostgreSQL: a term granted twice arrives by NOTIFY, long before the next poll', async () => {
      const ns = freshNs();
      const [a, b] = [uuid(), uuid()];
      // Neither the poll nor the lease's end (a reread) comes within the wait below: only the NOTIFY can.
      const long = new ElectionService(ds, { expireSeconds: 120 });
      await long.elect(a, { ns });
      const controller = new AbortController();
      const watched = collect(long.watch({ ns, pollMs: 60_000, signal: controller.signal }));
      await watched.waitForState(a, 1);
      await regrant(ns, b);
      const [{ schema }] = await query<{ schema: string }>(ds, 'SELECT current_schema() AS schema');
      const payload = JSON.stringify({ schema, table: 'gemstone_election_leader', ns, leaderId: b, term: 1 });
      await query(ds, 'SELECT pg_notify(?, ?)', ['gemstone_election', payload]);
      await watched.waitForState(b, 1, 10_000);
      controller.abort();
      expect(await watched.ended).toEqual({});
      expect(watched.states()).toEqual([
        [a, 1],
        [b, 1],
      ]);
    });
  }

  test('an expiry is reported at the lease end although the poll is a minute away', async () => {
    const ns = freshNs();
    const a = uuid();
    const short = new ElectionService(ds, { expireSeconds: 1.5 });
    await short.elect(a, { ns });
    const controller = new AbortController();
    const started = performance.now();
    const watched = collect(svc.watch({ ns, pollMs: 60_000, signal: controller.signal }));
    await watched.waitForState(a, 1);
    await watched.waitForState(null, 1, 10_000);
    // The lease lasted 1.5 s from before the watch started; a generous bound on a shared machine.
    expect(performance.now() - started).toBeLessThan(6_000);
    controller.abort();
    expect(await watched.ended).toEqual({});
  });

  if (db.kind === 'postgres') {
    test('PostgreSQL: changes arrive by NOTIFY, long before the next poll', async () => {
      const ns = freshNs();
      const [a, b] = [uuid(), uuid()];
      await svc.elect(a, { ns });
      const controller = new AbortController();
      const watched = collect(svc.watch({ ns, pollMs: 60_000, signal: controller.signal }));
      await watched.waitForState(a, 1);
      // The first read answered: LISTEN was set up before it.
      const began = performance.now();
      await svc.resign(a, { ns });
      await watched.waitForState(null, 1, 10_000);
      await svc.elect(b, { ns });
      await watched.waitForState(b, 2, 10_000);
      expect(performance.now() - began).toBeLessThan(10_000);
      controller.abort();
      expect(await watched.ended).toEqual({});
      expect(watched.states()).toEqual([
        [a, 1],
        [null, 1],
        [b, 2],
      ]);
    });

    test('PostgreSQL: all watchers of a DataSource share one LISTEN connection, released when the last one ends', async () => {
      const own = await db.connect();
      const listeners = async () => {
        const [row] = await query<{ n: string }>(
          ds,
          "SELECT count(*) AS n FROM pg_stat_activity WHERE datname = current_database() AND application_name = 'gemstone-utils listener'",
        );
        return Number(row!.n);
      };
      const before = await listeners();
      const service = new ElectionService(own);
      const ns = freshNs();
      const watches = [service.watch({ ns, pollMs: POLL_MS }), service.watch({ ns: freshNs(), pollMs: POLL_MS }), service.watch({ ns, pollMs: POLL_MS })];
      await Promise.all(watches.map((w) => w.next()));
      expect(await listeners()).toBe(before + 1);
      await watches[0]!.return();
      await watches[1]!.return();
      expect(await listeners()).toBe(before + 1);
      await watches[2]!.return();
      await waitFor('the LISTEN connection to close', async () => (await listeners()) === before);
    });
  }

  test('abort ends the loop without an error, also while it waits; an already aborted signal yields nothing', async () => {
    const ns = freshNs();
    const controller = new AbortController();
    const watched = collect(svc.watch({ ns, pollMs: POLL_MS, signal: controller.signal }));
    await watched.waitForState(null, null);
    await sleep(POLL_MS);
    controller.abort();
    expect(await watched.ended).toEqual({});
    expect(watched.states()).toEqual([[null, null]]);

    const aborted = AbortSignal.abort();
    const never = collect(svc.watch({ ns, pollMs: POLL_MS, signal: aborted }));
    expect(await never.ended).toEqual({});
    expect(never.changes).toEqual([]);
  });

  test('break ends it; return() resolves a pending next() as done; next() after the end is done', async () => {
    const ns = freshNs();
    const a = uuid();
    await svc.elect(a, { ns });
    const seen: LeaderChange[] = [];
    for await (const change of svc.watch({ ns, pollMs: POLL_MS })) {
      seen.push(change);
      break;
    }
    expect(seen.map((c) => [c.leaderId, c.term])).toEqual([[a, 1]]);

    const w = svc.watch({ ns, pollMs: POLL_MS });
    expect((await w.next()).value).toMatchObject({ leaderId: a, term: 1 });
    const pending = w.next(); // nothing changes: it waits
    await sleep(2 * POLL_MS);
    await w.return();
    expect(await pending).toEqual({ value: undefined, done: true });
    expect(await w.next()).toEqual({ value: undefined, done: true });
  });

  test('bad options are refused before anything runs', () => {
    const bad: Array<[unknown, string]> = [
      [{ pollMs: 0 }, 'options.pollMs'],
      [{ pollMs: Number.NaN }, 'options.pollMs'],
      [{ pollMs: '100' }, 'options.pollMs'],
      [{ ns: '' }, 'options.ns'],
      [{ signal: {} }, 'options.signal'],
      [{ onError: 1 }, 'options.onError'],
      [{ namespace: 'x' }, 'options.namespace'],
      [{ session: ds.manager }, 'options.session'],
      ['x', 'options'],
    ];
    for (const [options, parameter] of bad) {
      expect(() => svc.watch(options as never)).toThrow(ValidationError);
      try {
        svc.watch(options as never);
      } catch (error) {
        expect((error as ValidationError).parameter).toBe(parameter);
      }
    }
    expect(() => watch({ dataSource: {} as never })).toThrow(ValidationError);
  });

  if (db.shared) {
    test.each(['break', 'abort'])('a process that stops watching by %s exits by itself (no timer or connection left behind)', async (mode) => {
      const ns = freshNs();
      const result = await runNode(['test/support/children/watch-exits.js', db.url(), ns, mode], { timeoutMs: 30_000 });
      expect(result.stderr).toBe('');
      expect(JSON.parse(result.stdout)).toEqual({ ok: true, changes: [['leader', 1]] });
      expect(result.code).toBe(0);
    });
  }
});
