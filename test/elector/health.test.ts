/**
 * `elector.health()` in every state a probe meets: not started, a fresh follower, a leader,
 * stopped, the database out of reach (a network cut; on SQLite a transaction held open on the
 * shared connection), a blocked event loop (read synchronously before any timer has run), and
 * the recovery to ok.
 */
import type { DataSource, QueryRunner } from 'typeorm';
import { initDb, LeaderElector } from 'gemstone-utils';
import { describeEachDatabase, TestDatabase } from '../support/databases';
import { ns as freshNs } from '../support/rows';
import { blockEventLoop, recordingElector, waitFor } from './helpers';
import { TcpProxy } from './tcp-proxy';

const EXPIRE = 2;
const LEASE_MS = EXPIRE * 1000;
const INTERVAL = 300;
/** A noisy shared machine: added to upper bounds. */
const SLACK_MS = 3_000;

/** Cuts the elector's database off, and back on: a network cut, or on SQLite an open transaction. */
interface Blockade {
  dataSource: DataSource;
  block(): Promise<void>;
  unblock(): Promise<void>;
  close(): Promise<void>;
}

async function blockade(db: TestDatabase): Promise<Blockade> {
  if (db.kind === 'sqlite') {
    const dataSource = await db.connect();
    let runner: QueryRunner | undefined;
    return {
      dataSource,
      // The library's calls wait for an application transaction on the shared connection to end.
      block: async () => {
        runner = dataSource.createQueryRunner();
        await runner.startTransaction();
      },
      unblock: async () => {
        await runner?.rollbackTransaction();
        await runner?.release();
        runner = undefined;
      },
      close: async () => undefined,
    };
  }
  const target = new URL(db.url());
  const proxy = await new TcpProxy(target.hostname, Number(target.port)).listen();
  const dataSource = db.track(await initDb({ ...db.options(), url: proxy.rewrite(db.url()) } as never));
  return {
    dataSource,
    block: async () => proxy.partition(),
    unblock: async () => proxy.heal(),
    close: () => proxy.close(),
  };
}

describeEachDatabase('LeaderElector.health()', (db) => {
  let ds: DataSource;
  const electors: LeaderElector[] = [];
  beforeAll(async () => {
    ds = await db.connect();
  });
  afterEach(async () => {
    await Promise.all(electors.splice(0).map((e) => e.stop()));
  });

  function elector(dataSource: DataSource, ns: string) {
    const made = recordingElector(dataSource, { ns, expireSeconds: EXPIRE, intervalMs: INTERVAL });
    electors.push(made.elector);
    return made;
  }

  test('not started, leader, fresh follower, stopped', async () => {
    const ns = freshNs();
    const a = elector(ds, ns).elector;
    const b = elector(ds, ns).elector;
    expect(a.health()).toEqual({
      ok: false,
      role: 'stopped',
      lastRenewedAt: null,
      lastError: null,
      problem: expect.stringMatching(/not running/),
    });

    const before = Date.now();
    await a.start();
    await b.start();
    const after = Date.now();
    const leader = a.health();
    expect(leader).toEqual({ ok: true, role: 'leader', lastRenewedAt: expect.any(Date), lastError: null, problem: null });
    expect(leader.lastRenewedAt!.getTime()).toBeGreaterThanOrEqual(before);
    expect(leader.lastRenewedAt!.getTime()).toBeLessThanOrEqual(after);
    const follower = b.health();
    expect(follower).toEqual({ ok: true, role: 'follower', lastRenewedAt: expect.any(Date), lastError: null, problem: null });
    expect(follower.lastRenewedAt!.getTime()).toBeGreaterThanOrEqual(leader.lastRenewedAt!.getTime());

    // Ticks keep renewing it.
    await waitFor('a renewal', () => (a.health().lastRenewedAt?.getTime() ?? 0) > leader.lastRenewedAt!.getTime(), INTERVAL * 1.1 + SLACK_MS);
    expect(a.health().ok).toBe(true);

    await a.stop();
    const stopped = a.health();
    expect(stopped).toMatchObject({ ok: false, role: 'stopped', lastError: null, problem: expect.stringMatching(/not running/) });
    // The last success is still reported after the stop.
    expect(stopped.lastRenewedAt).toBeInstanceOf(Date);
    await waitFor('the follower to take over', () => b.health().role === 'leader', INTERVAL * 1.1 + SLACK_MS);
    expect(b.health().ok).toBe(true);
  });

  test('database out of reach: ok for up to one lease after the last success, then not ok with the error; ok again once it answers', async () => {
    const cut = await blockade(db);
    const made = elector(cut.dataSource, freshNs());
    const { elector: e } = made;
    try {
      await e.start();
      expect(e.health()).toMatchObject({ ok: true, role: 'leader' });

      await cut.block();
      const lastSuccess = e.health().lastRenewedAt!.getTime();
      await waitFor('health to turn not ok', () => !e.health().ok, LEASE_MS + SLACK_MS, 5);
      const wentBadAt = Date.now();
      // Not before a lease has passed since the last success was sent, and not long after.
      expect(wentBadAt - lastSuccess).toBeGreaterThanOrEqual(LEASE_MS - 20);
      expect(wentBadAt - lastSuccess).toBeLessThanOrEqual(LEASE_MS + 1_500);
      const bad = e.health();
      expect(bad.role).toBe('follower'); // the local deadline demoted it
      expect(bad.lastRenewedAt!.getTime()).toBeGreaterThanOrEqual(lastSuccess);
      expect(bad.problem).toMatch(/no tick has succeeded for longer than the lease \(2000 ms\)/);
      // The hanging (or failing) elect is the last error.
      await waitFor('the tick error to be reported by health()', () => e.health().lastError !== null, SLACK_MS + 6_000);
      expect(e.health().lastError!.message).toMatch(/elect (has not answered within the lease|failed)/);
      expect(e.health().ok).toBe(false);

      await cut.unblock();
      await waitFor('health to recover', () => e.health().ok, LEASE_MS + INTERVAL * 3 + SLACK_MS + 6_000);
      const recovered = e.health();
      expect(recovered.lastError).toBeNull();
      expect(recovered.problem).toBeNull();
      expect(recovered.lastRenewedAt!.getTime()).toBeGreaterThan(lastSuccess);
      await waitFor('leadership to come back', () => e.health().role === 'leader', LEASE_MS + INTERVAL * 3 + SLACK_MS);
    } finally {
      await cut.unblock();
      await e.stop();
      await cut.close();
    }
  });

  test('a read that meets the lease boundary agrees with itself: a leader is ok, a read that finds the ticks stale finds the leadership over', async () => {
    // The injected monotonic clock crosses the boundary after the first `real` calls of one
    // health() read (a lease and more ahead), wherever in the read that falls.
    let script: { real: number } | undefined;
    const clock = () => {
      if (!script) return performance.now();
      if (script.real > 0) {
        script.real -= 1;
        return performance.now();
      }
      return performance.now() + LEASE_MS * 100;
    };
    for (let real = 0; real <= 4; real += 1) {
      const { elector: e, log } = recordingElector(ds, { ns: freshNs(), expireSeconds: EXPIRE, intervalMs: INTERVAL, clock });
      electors.push(e);
      await e.start();
      expect(e.health()).toMatchObject({ ok: true, role: 'leader' });
      script = { real };
      const read = e.health();
      script = undefined;
      if (read.role === 'leader') {
        expect(read).toMatchObject({ ok: true, problem: null });
      } else {
        // This read ended the leadership on its own deadline and says so.
        expect(read).toMatchObject({ ok: false, role: 'follower', problem: expect.stringMatching(/renewal is overdue past its local deadline/) });
        expect(log.filter((r) => r.kind === 'demoted')).toEqual([{ kind: 'demoted', term: expect.any(Number), reason: 'lease-expired-locally' }]);
      }
      await e.stop();
    }
  });

  test('event loop blocked past the lease: health() read synchronously right after says not ok, then recovers', async () => {
    const ns = freshNs();
    const { elector: leader, log } = elector(ds, ns);
    const { elector: follower } = elector(ds, ns);
    await leader.start();
    await follower.start();
    expect(leader.health()).toMatchObject({ ok: true, role: 'leader' });
    expect(follower.health()).toMatchObject({ ok: true, role: 'follower' });

    blockEventLoop(LEASE_MS + 200);
    // No timer and no I/O callback has run since the loop was blocked.
    const leaderHealth = leader.health();
    const followerHealth = follower.health();
    expect(leaderHealth).toMatchObject({ ok: false, role: 'follower', problem: expect.stringMatching(/renewal is overdue past its local deadline/) });
    expect(followerHealth).toMatchObject({ ok: false, role: 'follower', problem: expect.stringMatching(/no tick has succeeded for longer than the lease/) });
    // Reading it ended the overdue leadership on the spot, as isLeader does.
    expect(log.filter((r) => r.kind === 'demoted')).toEqual([{ kind: 'demoted', term: expect.any(Number), reason: 'lease-expired-locally' }]);

    await waitFor('both to recover', () => leader.health().ok && follower.health().ok, INTERVAL * 3 + SLACK_MS);
    await waitFor('a leader again', () => leader.health().role === 'leader' || follower.health().role === 'leader', LEASE_MS + INTERVAL * 3 + SLACK_MS);
  });
});
