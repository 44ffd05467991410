/**
 * LISTEN's delivery check across a failover address. The application reaches PostgreSQL through
 * one address (a TCP proxy, as a virtual IP, DNS name or HAProxy is) that is switched from the
 * old server to the new one while the old server still answers the sessions it has: the
 * DataSource's pool keeps a connection to the old server, the LISTEN connection reconnects and
 * lands on the new one. The probe NOTIFY that checks delivery then goes to the old server and
 * never arrives — not a transaction-mode pooler, a failover under way — so LISTEN must not be
 * given up for good: once the old server is gone, the elector listens on the new one by itself.
 * (Behind a pooler the probe and LISTEN reach the same server: test/ha/pgbouncer.test.ts shows
 * that LISTEN is still given up there.)
 */
import * as path from 'path';
import type { DataSource } from 'typeorm';
import { ElectionService, initDb, LeaderElector, type NotificationsState } from 'gemstone-utils';
import { ns as freshNs } from '../support/rows';
import { recordingElector, waitFor } from '../elector/helpers';

const ROOT = path.join(__dirname, '..', '..');
interface PrivateServer {
  url: string;
  port: number;
  stop(): void;
}
// eslint-disable-next-line @typescript-eslint/no-var-requires
const { startPostgres } = require(path.join(ROOT, 'tools', 'private-db.js')) as { startPostgres(): Promise<PrivateServer> };
// eslint-disable-next-line @typescript-eslint/no-var-requires
const { ChaosProxy } = require(path.join(ROOT, 'tools', 'chaos', 'proxy.js')) as {
  ChaosProxy: new (options: { targetHost: string; targetPort: number; name: string }) => {
    port: number;
    targetPort: number;
    listen(): Promise<number>;
    close(): Promise<void>;
  };
};

const LISTENER_APP = 'gemstone-utils listener';
/** Long enough that a vacancy seen within a second was delivered by NOTIFY, not found by a tick. */
const EXPIRE = 15;
const INTERVAL = 5_000;

describe('LISTEN across a failover address: the probe reaching the old server is not a pooler', () => {
  let oldServer: PrivateServer | undefined;
  let newServer: PrivateServer | undefined;
  let proxy: InstanceType<typeof ChaosProxy> | undefined;
  const dataSources: DataSource[] = [];
  const electors: LeaderElector[] = [];

  beforeAll(async () => {
    oldServer = await startPostgres();
    newServer = await startPostgres();
    proxy = new ChaosProxy({ targetHost: '127.0.0.1', targetPort: oldServer.port, name: 'failover-address' });
    await proxy.listen();
  }, 120_000);

  afterAll(async () => {
    await Promise.all(electors.map((e) => e.stop()));
    await Promise.all(dataSources.map((ds) => ds.destroy().catch(() => undefined)));
    await proxy?.close();
    oldServer?.stop();
    newServer?.stop();
  }, 60_000);

  /** LISTEN connections on the server that `admin` reaches directly. */
  async function listenerSessions(admin: DataSource): Promise<number> {
    return (await listenerPids(admin)).length;
  }

  /** The backend pids of those connections. */
  async function listenerPids(admin: DataSource): Promise<number[]> {
    const rows = (await admin.query('SELECT pid FROM pg_stat_activity WHERE application_name = $1', [LISTENER_APP])) as Array<{ pid: number }>;
    return rows.map((row) => Number(row.pid));
  }

  test('the elector keeps probing until LISTEN delivers on the new server, then hands over at once', async () => {
    const ns = freshNs();
    const direct = async (server: PrivateServer) => {
      const ds = await initDb({ type: 'postgres', url: server.url, extra: { max: 2 } } as never);
      dataSources.push(ds);
      return ds;
    };
    const oldAdmin = await direct(oldServer!);
    const newAdmin = await direct(newServer!);
    // The new server's lease is ahead of anything the elector sees on the old one (a newer term
    // is news whatever it observed before).
    const onNew = new ElectionService(newAdmin, { expireSeconds: EXPIRE });
    const other = '00000000-0000-4000-8000-000000000001';
    for (let i = 0; i < 5; i++) {
      await onNew.elect(other, { ns });
      await onNew.resign(other, { ns });
    }

    // One pooled connection, kept open (the tick uses it every INTERVAL): the probe goes there.
    const app = await initDb({
      type: 'postgres',
      url: `postgres://postgres@127.0.0.1:${proxy!.port}/test`,
      extra: { max: 1, idleTimeoutMillis: 120_000 },
    } as never);
    dataSources.push(app);
    const made = recordingElector(app, { ns, expireSeconds: EXPIRE, intervalMs: INTERVAL });
    electors.push(made.elector);
    const states: NotificationsState['state'][] = [];
    made.elector.on('notifications', (state) => states.push(state.state));
    await made.elector.start();
    await waitFor('LISTEN on the old server', async () => (await listenerSessions(oldAdmin)) === 1, 10_000, 50);
    // Long enough for the probe on the old server to have arrived.
    await new Promise((resolve) => setTimeout(resolve, 1_000));
    expect(made.log.filter((r) => r.kind === 'error')).toEqual([]);

    // The failover address now leads to the new server; the old one still answers its sessions.
    proxy!.targetPort = newServer!.port;
    await oldAdmin.query('SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = $1', [LISTENER_APP]);
    await waitFor('LISTEN on the new server', async () => (await listenerSessions(newAdmin)) >= 1, 10_000, 50);
    // The probe went through the pool to the old server: it cannot arrive. Not a pooler: LISTEN
    // is not given up, the listener reconnects and probes again — a second LISTEN backend on the
    // new server shows it. All of it is one outage: reported once (the terminated connection),
    // not once per missed probe, and not over until LISTEN delivers.
    const gaveUp = () => made.log.filter((r) => r.kind === 'error' && /does not deliver/.test(r.error.message));
    const seenOnNew = new Set<number>();
    await waitFor(
      'a reconnect after the probe missed',
      async () => {
        for (const pid of await listenerPids(newAdmin)) seenOnNew.add(pid);
        return seenOnNew.size >= 2 || gaveUp().length > 0;
      },
      30_000,
      50,
    );
    expect(gaveUp()).toEqual([]);
    expect(states).toEqual(['down']);
    expect(made.log.filter((r) => r.kind === 'error').length).toBe(1);

    // The old server goes away (as a demoted or dead primary does): the pool reconnects through
    // the failover address, to the new server.
    oldServer!.stop();

    // LISTEN delivers on the new server: a vacancy there is announced at once. A tick would not
    // report it (it would take the lease instead), and the next tick is seconds away.
    const holder = '00000000-0000-4000-8000-000000000002';
    await waitFor(
      'a vacancy on the new server announced by NOTIFY',
      async () => {
        const leader = await onNew.getLeader({ ns });
        if (!leader) {
          await onNew.elect(holder, { ns });
          return false;
        }
        const from = made.log.length;
        await onNew.resign(leader.leaderId, { ns });
        const announced = () => made.log.slice(from).some((r) => r.kind === 'leader' && r.leaderId === null);
        return waitFor('the vacancy announced', announced, 1_000, 10).then(
          () => true,
          () => false,
        );
      },
      45_000,
      500,
    );
    expect(gaveUp()).toEqual([]);
    expect(await listenerSessions(newAdmin)).toBe(1);
    // The outage ends once a probe through the DataSource, which now reaches the new server too,
    // arrives (a probe still on its way to the old server when it stopped is missed first, and
    // LISTEN is made again): 'up' may follow the first notifications heard, never precede them.
    await waitFor("'up'", () => states.length > 1, 30_000, 50);
    expect(states).toEqual(['down', 'up']);
    expect(gaveUp()).toEqual([]);
  }, 120_000);
});
