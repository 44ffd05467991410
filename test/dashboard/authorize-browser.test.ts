/**
 * The two `authorize` hooks docs/dashboard.md recommends ("What `authorize` can check"), written
 * as there, in Chromium: what a browser sends by itself reaches every request of the page — the
 * live stream (`EventSource`, which cannot set headers) included. With HTTP Basic credentials or
 * the session cookie the page loads and goes live; without them nothing is served.
 */
import { timingSafeEqual } from 'crypto';
import type { IncomingMessage } from 'http';
import type { DataSource } from 'typeorm';
import type { Browser, BrowserContext } from 'playwright-core';
import { LeaderElector } from 'gemstone-utils';
import { createDashboard, type DashboardAccess, type DashboardOptions } from 'gemstone-utils/dashboard';
import { describeEachDatabase } from '../support/databases';
import { describeInBrowser, watchedPage } from './support/browser';
import { serve } from './support/http';

const PASSWORD = 'correct horse battery staple';
const SESSION = 'c2Vzc2lvbi0x';

// As in docs/dashboard.md: HTTP Basic, compared in constant time; missing or wrong asks again.
const expected = Buffer.from(`Basic ${Buffer.from(`ops:${PASSWORD}`).toString('base64')}`);
function operator(request: IncomingMessage): DashboardAccess {
  const given = Buffer.from(request.headers.authorization ?? '');
  return given.length === expected.length && timingSafeEqual(given, expected) ? true : 'unauthenticated';
}

// As in docs/dashboard.md: one cookie of the request, checked against the application's sessions.
function cookie(request: IncomingMessage, name: string): string | undefined {
  for (const pair of (request.headers.cookie ?? '').split(';')) {
    const separator = pair.indexOf('=');
    if (separator > 0 && pair.slice(0, separator).trim() === name) return decodeURIComponent(pair.slice(separator + 1).trim());
  }
  return undefined;
}
const isOperatorSession = async (sessionId: string) => sessionId === SESSION;
const bySession: DashboardOptions['authorize'] = async (request) => {
  const session = cookie(request, 'session');
  return session !== undefined && (await isOperatorSession(session));
};

describeInBrowser('dashboard authorize hooks in a browser', (browser: () => Browser) => {
  describeEachDatabase(
    'authorize',
    (db) => {
      let ds: DataSource;
      let elector: LeaderElector;
      beforeAll(async () => {
        ds = await db.connect();
      });
      beforeEach(async () => {
        elector = new LeaderElector({ dataSource: ds, ns: 'ops', expireSeconds: 10, intervalMs: 300 });
        await elector.start();
      });
      // After each test, while its database still exists (it is dropped by an afterAll registered first).
      afterEach(async () => {
        await elector.stop();
      });

      /** Serves a dashboard with `authorize`. */
      async function served(authorize: DashboardOptions['authorize']) {
        const dashboard = createDashboard({ dataSource: ds, pollMs: 250, authorize });
        const server = await serve((request, response) => dashboard(request, response));
        return {
          url: server.url,
          close: async () => {
            await dashboard.close();
            await server.close();
          },
        };
      }

      async function goesLive(context: BrowserContext, url: string): Promise<void> {
        const { page, incidents } = await watchedPage(context);
        const response = await page.goto(`${url}/#/ns/ops`);
        expect(response?.status()).toBe(200);
        // `live` only once the EventSource opened: the stream request was authorized too.
        await page.locator('#live[data-state="live"]').waitFor({ timeout: 10_000 });
        // The leader card fills from the stream's first event or the first read, whichever answers
        // first; on a loaded machine that can come after the stream opened.
        await page
          .locator('[data-field="leader-id"]', { hasText: elector.candidateId })
          .first()
          .waitFor({ timeout: 10_000 })
          .catch(() => undefined);
        expect(await page.locator('[data-field="leader-id"]').first().textContent()).toBe(elector.candidateId);
        expect(await incidents()).toEqual({ pwned: undefined, violations: [], errors: [] });
      }

      test('HTTP Basic: with the credentials the page goes live; without, 401 with the challenge', async () => {
        const server = await served(operator);
        const allowed = await browser().newContext({ httpCredentials: { username: 'ops', password: PASSWORD } });
        try {
          await goesLive(allowed, server.url);
          // Without credentials (headless Chromium aborts a navigation that is challenged: asked here directly).
          for (const path of ['/', '/api/namespace/events?ns=ops']) {
            const refused = await fetch(`${server.url}${path}`);
            expect(refused.status).toBe(401);
            expect(refused.headers.get('www-authenticate')).toMatch(/^Basic /);
          }
        } finally {
          await allowed.close();
          await server.close();
        }
      });

      test("the application's session cookie: with it the page goes live; without, 403", async () => {
        const server = await served(bySession);
        const signedIn = await browser().newContext();
        await signedIn.addCookies([{ name: 'session', value: SESSION, url: server.url, httpOnly: true, sameSite: 'Strict' }]);
        const anonymous = await browser().newContext();
        try {
          await goesLive(signedIn, server.url);
          const page = await anonymous.newPage();
          expect((await page.goto(`${server.url}/`))?.status()).toBe(403);
          expect((await fetch(`${server.url}/api/namespace/events?ns=ops`)).status).toBe(403);
        } finally {
          await signedIn.close();
          await anonymous.close();
          await server.close();
        }
      });
    },
    { kinds: ['sqlite'], sharedOnly: true },
  );
});
