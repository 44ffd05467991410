/**
 * PostgreSQL: what the loops say while LISTEN is down, and when it is back. An outage is one
 * `'error'` (phase `listen`) and one `'notifications'` `{ state: 'down' }` per loop — not one error
 * per reconnect attempt — and its end is a `'notifications'` `{ state: 'up' }`, after which a
 * hand-over is heard at once again.
 *
 * The long outage goes through a proxy on the LISTEN connection's address (`listen: { url }`) that
 * closes every connection at once: the ticks, on the DataSource's own pool, go on meanwhile, so
 * every error a loop reports is LISTEN's. The test waits until the listener has made a given
 * number of attempts before it looks (the precondition is counted, not hoped for). The short one
 * is a real connection loss: the LISTEN backend terminated with pg_terminate_backend.
 */
import type { DataSource } from 'typeorm';
import {
  LeaderElector,
  LeaderElectorGroup,
  LISTEN_APPLICATION_NAME,
  type LeaderElectorError,
  type Lease,
  type NotificationsState,
} from 'gemstone-utils';
import { describeEachDatabase, query } from '../support/databases';
import { ns as freshNs } from '../support/rows';
import { waitFor } from './helpers';
import { TcpProxy } from './tcp-proxy';

const INTERVAL = 5_000;
const EXPIRE = 15;
/** Failed attempts the long outage lasts at least (backoff 100 ms doubling to 5 s: about 4–8 s). */
const ATTEMPTS = 7;

interface Observed {
  errors: LeaderElectorError[];
  states: NotificationsState[];
}

function observe(loop: LeaderElector | LeaderElectorGroup): Observed {
  const seen: Observed = { errors: [], states: [] };
  (loop as LeaderElector).on('error', (error) => seen.errors.push(error));
  (loop as LeaderElector).on('notifications', (state) => seen.states.push(state));
  return seen;
}

describeEachDatabase(
  'LISTEN outages: reported once, recovery signalled',
  (db) => {
    let dataSources: DataSource[];
    let proxy: TcpProxy | undefined;
    const loops: (LeaderElector | LeaderElectorGroup)[] = [];

    beforeAll(async () => {
      dataSources = [await db.connect(), await db.connect()];
    });
    afterEach(async () => {
      await Promise.all(loops.splice(0).map((loop) => loop.stop()));
      await proxy?.close();
      proxy = undefined;
    });

    test(`an outage of ${ATTEMPTS}+ reconnect attempts is one error and one 'down' per loop, its end one 'up'; hand-over is instant again`, async () => {
      proxy = await new TcpProxy('127.0.0.1', Number(new URL(db.url()).port || 5432)).listen();
      const listen = { url: proxy.rewrite(db.url()) };
      const ns = freshNs();
      // The leader runs on another DataSource without LISTEN; the loops under test follow it.
      const leader = new LeaderElector({ dataSource: dataSources[1]!, ns, expireSeconds: EXPIRE, intervalMs: INTERVAL, listen: false });
      loops.push(leader);
      await leader.start();
      const follower = new LeaderElector({ dataSource: dataSources[0]!, ns, expireSeconds: EXPIRE, intervalMs: INTERVAL, listen });
      const group = new LeaderElectorGroup({ dataSource: dataSources[0]!, namespaces: [freshNs()], expireSeconds: EXPIRE, intervalMs: INTERVAL, listen });
      loops.push(follower, group);
      const seen = [observe(follower), observe(group)];
      await follower.start();
      await group.start();
      expect(leader.isLeader).toBe(true);
      expect(seen.map((s) => s.errors)).toEqual([[], []]);

      const before = proxy.connections;
      proxy.refuse();
      await waitFor(`${ATTEMPTS} failed LISTEN attempts`, () => proxy!.connections - before >= ATTEMPTS, 30_000, 20);
      for (const s of seen) {
        expect(s.errors.map((e) => e.phase)).toEqual(['listen']);
        expect(s.errors[0]!.message).toMatch(/LISTEN is down: hand-overs are noticed by ticks/);
        expect(s.states.map((state) => state.state)).toEqual(['down']);
      }

      proxy.heal();
      await waitFor("'up' on both loops", () => seen.every((s) => s.states.length === 2), 20_000, 20);
      // The dropped connection, then each refused one; the connection that succeeded is not a failure.
      const failures = proxy.connections - before;
      for (const s of seen) {
        expect(s.errors).toHaveLength(1);
        expect(s.states.map((state) => state.state)).toEqual(['down', 'up']);
        const up = s.states[1] as Extract<NotificationsState, { state: 'up' }>;
        expect(up.failures).toBe(failures);
        expect(up.downMs).toBeGreaterThan(0);
      }

      // Heard at once again: the follower takes over well before its next tick could. Stopped right
      // after a tick of the follower, whose next one is then ≥ 0.9 × intervalMs away (the jitter):
      // only a notification can bring the hand-over sooner.
      await new Promise((resolve) => follower.once('tick', resolve));
      const elected = new Promise<Lease>((resolve) => follower.once('elected', resolve));
      const stopped = performance.now();
      await leader.stop();
      await elected;
      expect(performance.now() - stopped).toBeLessThan(INTERVAL * 0.9 - 200);
      expect(seen.map((s) => s.errors.length)).toEqual([1, 1]);
    });

    test('a LISTEN backend terminated on the server: one error and one down, then one up', async () => {
      const ds = dataSources[0]!;
      const elector = new LeaderElector({ dataSource: ds, ns: freshNs(), expireSeconds: EXPIRE, intervalMs: INTERVAL });
      loops.push(elector);
      const seen = observe(elector);
      await elector.start();
      const listeners = async () =>
        (
          await query<{ pid: number }>(ds, 'SELECT pid FROM pg_stat_activity WHERE datname = current_database() AND application_name = ?', [
            LISTEN_APPLICATION_NAME,
          ])
        ).map((row) => Number(row.pid));
      const [old] = await listeners();
      expect(old).toBeDefined();
      await query(ds, 'SELECT pg_terminate_backend(?)', [old]);
      await waitFor("'up'", () => seen.states.length === 2, 20_000, 20);
      expect(seen.states.map((state) => state.state)).toEqual(['down', 'up']);
      expect(seen.errors.map((e) => e.phase)).toEqual(['listen']);
      expect((await listeners()).filter((pid) => pid !== old)).toHaveLength(1);
    });
  },
  { kinds: ['postgres'] },
);
