/**
 * `stop()` settles within `stopTimeoutMs` whatever the database does: a leader behind a frozen
 * network (every byte dropped, statements hang) ends its leadership at once, `stop()` resolves at
 * the bound with an `'error'` saying what it abandoned, and another elector takes over once the
 * lease has run out at the database. A stop whose `onStoppedLeading` never settles resolves at
 * the bound too, without vacating the lease.
 */
import type { DataSource } from 'typeorm';
import { ElectionService, initDb, LeaderElector } from 'gemstone-utils';
import { describeEachDatabase } from '../support/databases';
import { ns as freshNs } from '../support/rows';
import { recordingElector, waitFor } from './helpers';
import { TcpProxy } from './tcp-proxy';

const EXPIRE = 3;
const STOP_TIMEOUT = 1_000;
/** A loaded shared machine: timers and round trips run late. */
const SLACK = 700;

describeEachDatabase(
  'LeaderElector.stop() behind a frozen network',
  (db) => {
    let direct: DataSource;
    let proxy: TcpProxy;
    let frozen: DataSource;

    beforeAll(async () => {
      direct = await db.connect();
      const target = new URL(db.url());
      proxy = await new TcpProxy(target.hostname, Number(target.port)).listen();
      frozen = db.track(await initDb({ ...db.options(), url: proxy.rewrite(db.url()) } as never));
    });
    afterEach(() => proxy.heal());
    afterAll(() => proxy.close());

    async function frozenLeaderAndFollower(intervalMs: number) {
      const ns = freshNs();
      const leader = recordingElector(frozen, { ns, expireSeconds: EXPIRE, intervalMs, stopTimeoutMs: STOP_TIMEOUT });
      const follower = recordingElector(direct, { ns, expireSeconds: EXPIRE, intervalMs: 300 });
      await leader.elector.start();
      expect(leader.elector.isLeader).toBe(true);
      await follower.elector.start();
      expect(follower.elector.isLeader).toBe(false);
      return { ns, leader, follower };
    }

    test('an elect hung in flight: stop() resolves at the bound, leadership ends at once, the follower takes over after the lease', async () => {
      const { leader, follower } = await frozenLeaderAndFollower(300);
      try {
        const lease = leader.elector.lease!;
        proxy.partition();
        const cutAt = performance.now();
        // Let the next tick go out and hang.
        await waitFor('a tick to hang', () => performance.now() - cutAt > 600, 2_000);
        const stopping = leader.elector.stop();
        // Synchronously: no leader work after stop() was called.
        expect(lease.signal.aborted).toBe(true);
        expect(leader.elector.isLeader).toBe(false);
        const stopCalledAt = performance.now();
        await stopping;
        const took = performance.now() - stopCalledAt;
        expect(took).toBeGreaterThanOrEqual(STOP_TIMEOUT - 50);
        expect(took).toBeLessThanOrEqual(STOP_TIMEOUT + SLACK);
        expect(leader.elector.running).toBe(false);
        const stopErrors = leader.log.filter((r) => r.kind === 'error' && r.error.phase === 'stop');
        expect(stopErrors).toHaveLength(1);
        expect(stopErrors[0]!.kind === 'error' && stopErrors[0]!.error.message).toMatch(/elect in flight.*runs out by itself/s);
        expect(leader.log.filter((r) => r.kind === 'demoted')).toEqual([{ kind: 'demoted', term: lease.term, reason: 'stopped' }]);

        // Nobody vacated the lease: the follower takes over once it has run out at the database.
        const tookOver = await waitFor('the follower to lead', () => follower.elector.isLeader, EXPIRE * 1000 + 3_000);
        expect(performance.now() - cutAt).toBeLessThanOrEqual(EXPIRE * 1000 + 300 * 1.1 + 2 * SLACK);
        expect(tookOver).toBeGreaterThan(0);
        expect(follower.elector.term).toBe(lease.term + 1);

        // The late failure of the abandoned elect, once the cut connections reset, is not reported.
        const errorsBefore = leader.log.filter((r) => r.kind === 'error').length;
        proxy.heal();
        await new Promise((resolve) => setTimeout(resolve, 500));
        expect(leader.log.filter((r) => r.kind === 'error')).toHaveLength(errorsBefore);
        expect(leader.log.filter((r) => r.kind === 'elected')).toHaveLength(1);
      } finally {
        proxy.heal();
        await follower.elector.stop();
        await leader.elector.stop();
      }
    });

    test('only the unregister hangs: stop() resolves at the bound; after healing the same elector runs and stops normally', async () => {
      // Long ticks: nothing is in flight when the network freezes right after start().
      const { ns, leader, follower } = await frozenLeaderAndFollower(1_400);
      try {
        const lease = leader.elector.lease!;
        proxy.partition();
        const stopCalledAt = performance.now();
        await leader.elector.stop();
        const took = performance.now() - stopCalledAt;
        expect(took).toBeLessThanOrEqual(STOP_TIMEOUT + SLACK);
        expect(lease.signal.aborted).toBe(true);
        const stopErrors = leader.log.filter((r) => r.kind === 'error' && r.error.phase === 'stop');
        expect(stopErrors).toHaveLength(1);
        expect(stopErrors[0]!.kind === 'error' && stopErrors[0]!.error.message).toMatch(/unregistering/);
        await waitFor('the follower to lead', () => follower.elector.isLeader, EXPIRE * 1000 + 3_000);

        proxy.heal();
        await follower.elector.stop();
        // A restart after an abandoned stop: one loop, leads, and stops within one round trip.
        await leader.elector.start();
        await waitFor('the restarted elector to lead', () => leader.elector.isLeader, 5_000);
        const elected = leader.log.filter((r) => r.kind === 'elected').length;
        const stoppedAt = performance.now();
        await leader.elector.stop();
        expect(performance.now() - stoppedAt).toBeLessThan(STOP_TIMEOUT);
        expect(leader.log.filter((r) => r.kind === 'error' && r.error.phase === 'stop')).toHaveLength(1);
        expect(leader.log.filter((r) => r.kind === 'elected')).toHaveLength(elected);
        expect(await new ElectionService(direct).getLeader({ ns })).toBeNull();
      } finally {
        proxy.heal();
        await follower.elector.stop();
        await leader.elector.stop();
      }
    });
  },
  { kinds: ['postgres', 'mariadb'] },
);

describeEachDatabase('LeaderElector.stop() with an onStoppedLeading that never settles', (db) => {
  test('stop() resolves at the bound and leaves the lease to run out instead of vacating it', async () => {
    const ds = await db.connect();
    const ns = freshNs();
    const hanging = new LeaderElector({
      dataSource: ds,
      ns,
      expireSeconds: EXPIRE,
      intervalMs: 300,
      stopTimeoutMs: STOP_TIMEOUT,
      onStoppedLeading: () => new Promise<void>(() => undefined),
    });
    const errors: Error[] = [];
    hanging.on('error', (error) => errors.push(error));
    await hanging.start();
    expect(hanging.isLeader).toBe(true);
    const svc = new ElectionService(ds);
    const before = await svc.getLeader({ ns });
    const stopCalledAt = performance.now();
    await hanging.stop();
    const took = performance.now() - stopCalledAt;
    expect(took).toBeGreaterThanOrEqual(STOP_TIMEOUT - 50);
    expect(took).toBeLessThanOrEqual(STOP_TIMEOUT + SLACK);
    expect(errors.map((e) => e.message)).toEqual([expect.stringMatching(/onStoppedLeading settling and the scheduled jobs returning \(the lease is left to run out, not vacated\)/)]);
    // Still named at the database, with the lease of its last renewal.
    const after = await svc.getLeader({ ns });
    expect(after?.leaderId).toBe(hanging.candidateId);
    expect(after?.term).toBe(before?.term);
  });
});
