/**
 * One dashboard handler under the servers applications run: Node's `http` at the root, Express
 * (`app.use(path, dashboard)`), Fastify through `@fastify/middie` and through a hijacked route
 * with `basePath`. Each serves the page, its scripts, JSON and a live stream under its mount
 * path, leaves the application's own routes alone, and ends its streams on close.
 */
import type * as http from 'http';
import type { AddressInfo } from 'net';
import type { DataSource } from 'typeorm';
import Fastify from 'fastify';
import middie from '@fastify/middie';
import { ElectionService } from 'gemstone-utils';
import { createDashboard, type Dashboard } from 'gemstone-utils/dashboard';
import { describeEachDatabase, uuid } from '../support/databases';
import { openEvents, serve } from './support/http';

type Handler = (request: http.IncomingMessage, response: http.ServerResponse, next: () => void) => void;
interface ExpressApp {
  use(path: string, handler: Handler): void;
  get(path: string, handler: (request: unknown, response: { send(body: string): void }) => void): void;
  listen(port: number, host: string, callback: () => void): http.Server;
}
// eslint-disable-next-line @typescript-eslint/no-require-imports
const express = require('express') as () => ExpressApp;

/** What every mount must do: page (after the slash redirect), a script, JSON, a stream; the app's own route untouched. */
async function expectServed(base: string, mount: string, leader: string, dashboard: Dashboard): Promise<void> {
  const page = await fetch(`${base}${mount}`);
  expect(page.status).toBe(200);
  expect(page.url).toBe(`${base}${mount}/`);
  expect(await page.text()).toContain('src="client/main.js"');
  const script = await fetch(`${base}${mount}/client/main.js`);
  expect({ status: script.status, type: script.headers.get('content-type') }).toEqual({ status: 200, type: 'text/javascript; charset=utf-8' });
  const overview = (await (await fetch(`${base}${mount}/api/overview`)).json()) as { rows: { ns: string; leaderId: string }[] };
  expect(overview.rows).toEqual([expect.objectContaining({ ns: 'mounted', leaderId: leader })]);
  const events = await openEvents(`${base}${mount}/api/namespace/events?ns=mounted`);
  expect(events.status).toBe(200);
  expect((await events.next((e) => e.event === 'leader')).data).toMatchObject({ leaderId: leader, term: 1 });
  expect(await (await fetch(`${base}/app`)).text()).toBe('the application');
  await dashboard.close();
  await events.ended;
}

describeEachDatabase(
  'dashboard mounted',
  (db) => {
    let ds: DataSource;
    const leader = uuid();
    beforeAll(async () => {
      ds = await db.connect();
      await new ElectionService(ds).elect(leader, { ns: 'mounted' });
    });

    test("Node's http, at the root", async () => {
      const dashboard = createDashboard({ dataSource: ds });
      const served = await serve((request, response) => {
        if (request.url === '/app') return void response.end('the application');
        dashboard(request, response);
      });
      try {
        await expectServed(served.url, '', leader, dashboard);
      } finally {
        await served.close();
      }
    });

    test('Express: app.use(path, dashboard)', async () => {
      const dashboard = createDashboard({ dataSource: ds });
      const app = express();
      app.get('/app', (_request, response) => response.send('the application'));
      app.use('/ops/election', dashboard);
      const server = await new Promise<http.Server>((resolve) => {
        const s = app.listen(0, '127.0.0.1', () => resolve(s));
      });
      try {
        await expectServed(`http://127.0.0.1:${(server.address() as AddressInfo).port}`, '/ops/election', leader, dashboard);
      } finally {
        server.closeAllConnections();
        await new Promise((resolve) => server.close(resolve));
      }
    });

    test('Fastify with @fastify/middie: fastify.use(path, dashboard)', async () => {
      const dashboard = createDashboard({ dataSource: ds });
      const app = Fastify();
      await app.register(middie);
      app.use('/ops/election', dashboard);
      app.get('/app', async () => 'the application');
      const base = await app.listen({ port: 0, host: '127.0.0.1' });
      try {
        await expectServed(base, '/ops/election', leader, dashboard);
      } finally {
        await app.close();
      }
    });

    test('Fastify, a route handing the raw request over (reply.hijack()) with basePath', async () => {
      const dashboard = createDashboard({ dataSource: ds, basePath: '/ops/election' });
      const app = Fastify();
      const handOver = (request: { raw: http.IncomingMessage }, reply: { hijack(): void; raw: http.ServerResponse }) => {
        reply.hijack();
        dashboard(request.raw, reply.raw);
      };
      app.get('/ops/election', handOver);
      app.get('/ops/election/*', handOver);
      app.get('/app', async () => 'the application');
      const base = await app.listen({ port: 0, host: '127.0.0.1' });
      try {
        await expectServed(base, '/ops/election', leader, dashboard);
      } finally {
        await app.close();
      }
    });
  },
  { kinds: ['sqlite'], sharedOnly: true },
);
