/**
 * `elector.onLeadership(listener)`: a listener added after `start()` (as in a Nest
 * `onApplicationBootstrap` hook, after the module's own hook elected) still gets the leadership
 * already running, then every later one, each once; `on('elected')` at the same point gets only
 * the later ones. Listener errors are reported like the other callbacks'.
 */
import type { DataSource } from 'typeorm';
import { LeaderElector, LeaderElectorError, ValidationError, type Lease } from 'gemstone-utils';
import { describeEachDatabase } from '../support/databases';
import { ns as freshNs } from '../support/rows';
import { waitFor } from './helpers';

const EXPIRE = 2;
const INTERVAL = 300;

describeEachDatabase('LeaderElector.onLeadership', (db) => {
  let ds: DataSource;
  const running: LeaderElector[] = [];

  beforeAll(async () => {
    ds = await db.connect();
  });
  afterEach(async () => {
    await Promise.all(running.splice(0).map((e) => e.stop()));
  });

  function make(options: { ns?: string; onStartedLeading?: (lease: Lease) => void } = {}): LeaderElector {
    const elector = new LeaderElector({ dataSource: ds, ns: options.ns ?? freshNs(), expireSeconds: EXPIRE, intervalMs: INTERVAL, ...options });
    running.push(elector);
    return elector;
  }

  test('added after start() on the leader: called at once with the current lease, where on("elected") is not', async () => {
    const elector = make();
    await elector.start();
    expect(elector.isLeader).toBe(true);
    const late: Lease[] = [];
    const viaEvent: Lease[] = [];
    elector.on('elected', (lease) => viaEvent.push(lease));
    elector.onLeadership((lease) => {
      late.push(lease);
    });
    // Synchronously, before any tick: the lease of the term already running.
    expect(late).toEqual([elector.lease]);
    expect(late[0]!.term).toBe(1);
    expect(late[0]!.signal.aborted).toBe(false);
    await new Promise((resolve) => setTimeout(resolve, INTERVAL * 3));
    // Renewals are no new leadership: still one call, and the event never fired.
    expect(late).toHaveLength(1);
    expect(viaEvent).toEqual([]);
  });

  test('every later leadership once; nothing after the returned function removed it', async () => {
    const elector = make();
    const seen: Lease[] = [];
    const remove = elector.onLeadership((lease) => {
      seen.push(lease);
    });
    expect(seen).toEqual([]);
    await elector.start();
    expect(seen.map((lease) => lease.term)).toEqual([1]);
    await elector.stop();
    expect(seen[0]!.signal.aborted).toBe(true);
    await elector.start();
    expect(seen.map((lease) => lease.term)).toEqual([1, 2]);
    expect(seen[1]).toBe(elector.lease);
    remove();
    await elector.stop();
    await elector.start();
    expect(elector.term).toBe(3);
    expect(seen.map((lease) => lease.term)).toEqual([1, 2]);
  });

  test('on a follower: called when it becomes leader, not before', async () => {
    const ns = freshNs();
    const leader = make({ ns });
    await leader.start();
    const follower = make({ ns });
    await follower.start();
    expect(follower.isLeader).toBe(false);
    const seen: Lease[] = [];
    follower.onLeadership((lease) => {
      seen.push(lease);
    });
    expect(seen).toEqual([]);
    await leader.stop();
    await waitFor('the follower to take over', () => follower.isLeader);
    expect(seen).toEqual([follower.lease]);
    expect(seen[0]!.term).toBe(2);
  });

  test('added inside onStartedLeading: that leadership reaches it once', async () => {
    const seen: Lease[] = [];
    // eslint-disable-next-line prefer-const
    let elector: LeaderElector;
    elector = make({
      onStartedLeading: () => {
        elector.onLeadership((lease) => {
          seen.push(lease);
        });
      },
    });
    await elector.start();
    expect(seen.map((lease) => lease.term)).toEqual([1]);
  });

  test("a throwing or rejecting listener is reported as 'error' (phase callback); the elector carries on", async () => {
    const elector = make();
    const errors: LeaderElectorError[] = [];
    elector.on('error', (error) => errors.push(error));
    await elector.start();
    elector.onLeadership(() => {
      throw new Error('sync boom');
    });
    elector.onLeadership(async () => {
      throw new Error('async boom');
    });
    await waitFor('both errors', () => errors.length >= 2);
    expect(errors.map((error) => [error.phase, (error.cause as Error).message]).sort()).toEqual([
      ['callback', 'async boom'],
      ['callback', 'sync boom'],
    ]);
    expect(elector.isLeader).toBe(true);
  });

  test('a listener that is not a function is a ValidationError naming it', () => {
    const elector = make();
    expect(() => elector.onLeadership('nope' as never)).toThrow(ValidationError);
    expect(() => elector.onLeadership(undefined as never)).toThrow(/^listener must be a function/);
  });
});
