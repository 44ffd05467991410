/**
 * PostgreSQL: a LISTEN connection whose server accepts the connection and then never answers
 * (a server gone mid-failover behind a proxy that keeps the client's socket open) is failed by
 * the listener's own bound on the whole set-up and retried — it does not wait forever, leaving
 * the elector without LISTEN until the process restarts.
 *
 * The "server" is a socket that completes PostgreSQL's start-up (AuthenticationOk, ReadyForQuery)
 * and then reads everything and answers nothing.
 */
import * as net from 'net';
import type { DataSource } from 'typeorm';
import { LeaderElector, type LeaderElectorError } from 'gemstone-utils';
import { describeEachDatabase } from '../support/databases';
import { ns as freshNs } from '../support/rows';
import { waitFor } from './helpers';

/** AuthenticationOk ('R', length 8, code 0), then ReadyForQuery ('Z', length 5, idle). */
const STARTUP_ANSWER = Buffer.from([0x52, 0, 0, 0, 8, 0, 0, 0, 0, 0x5a, 0, 0, 0, 5, 0x49]);

describeEachDatabase(
  'LISTEN set-up that is never answered',
  (db) => {
    let ds: DataSource;
    let server: net.Server;
    let port = 0;
    const connections: net.Socket[] = [];
    const queries: string[] = [];
    let elector: LeaderElector | undefined;

    beforeAll(async () => {
      // connectTimeoutMS also bounds the LISTEN connection's connect; the set-up bound adds 10 s.
      // The elector's own connections to the real server are made here, and kept (no idle
      // timeout): on a loaded machine a new one may take longer than that 1 s to connect, which
      // is not what this test is about. A connect that timed out is tried again.
      for (let attempt = 1; ; attempt++) {
        try {
          ds = await db.connect({ connectTimeoutMS: 1_000, extra: { idleTimeoutMillis: 0 } } as never);
          break;
        } catch (error) {
          if (attempt >= 10 || !/timeout/i.test(String((error as Error).message))) throw error;
        }
      }
      server = net.createServer((socket) => {
        connections.push(socket);
        let started = false;
        socket.on('data', (chunk) => {
          if (!started) {
            started = true;
            socket.write(STARTUP_ANSWER);
            return;
          }
          queries.push(chunk.toString('latin1'));
        });
        socket.on('error', () => undefined);
      });
      await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
      port = (server.address() as net.AddressInfo).port;
    });
    afterAll(async () => {
      await elector?.stop();
      for (const socket of connections) socket.destroy();
      if (server) await new Promise((resolve) => server.close(resolve));
    });

    test('the attempt is failed after the bound, reported, and LISTEN is tried again on a new connection', async () => {
      const errors: LeaderElectorError[] = [];
      elector = new LeaderElector({
        dataSource: ds,
        ns: freshNs(),
        expireSeconds: 5,
        intervalMs: 1_000,
        listen: { url: `postgres://postgres@127.0.0.1:${port}/test` },
      });
      elector.on('error', (error) => errors.push(error));
      const started = Date.now();
      await elector.start();
      // The elector itself works on the DataSource meanwhile.
      expect(elector.isLeader).toBe(true);
      await waitFor('the LISTEN statement to reach the silent server', () => queries.some((q) => q.includes('LISTEN gemstone_election')), 5_000, 20);
      await waitFor('the set-up to be failed', () => errors.some((e) => /LISTEN was not set up within 11000 ms/.test(e.message)), 20_000, 100);
      const failedAfter = Date.now() - started;
      const error = errors.find((e) => /LISTEN was not set up/.test(e.message))!;
      expect(error.phase).toBe('listen');
      // Not before the bound (connect 1 s + set-up 10 s), and not long after it.
      expect(failedAfter).toBeGreaterThanOrEqual(10_500);
      expect(failedAfter).toBeLessThan(18_000);
      // Retried on a new connection.
      await waitFor('a second connection', () => connections.length >= 2, 10_000, 50);
      expect(elector.isLeader).toBe(true);
    }, 60_000);
  },
  { kinds: ['postgres'] },
);
