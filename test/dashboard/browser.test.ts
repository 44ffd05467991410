/**
 * The dashboard in a real browser (Debian's Chromium) on every shared database: the overview
 * shows each namespace's leader; a namespace's page shows its leader, candidates and timeline, and
 * both pages follow a hand-over within a second of it (PostgreSQL: NOTIFY; MariaDB, SQLite: a
 * 250 ms poll, as the demo's); the header shows `reconnecting…` while the live stream is down and
 * `live` again once it is back; the overview's timeline renders a lane for each of a group's 200
 * namespaces.
 */
import type { DataSource } from 'typeorm';
import type { Browser, Page } from 'playwright-core';
import { LeaderElector, LeaderElectorGroup } from 'gemstone-utils';
import { createDashboard } from 'gemstone-utils/dashboard';
import { waitFor } from '../elector/helpers';
import { describeEachDatabase } from '../support/databases';
import { describeInBrowser, watchedPage } from './support/browser';
import { serve, serveDashboard, Served } from './support/http';

/** The dashboard's poll (where no NOTIFY arrives: MariaDB, SQLite), as the demo's. */
const POLL_MS = 250;
/**
 * A hand-over shows on both pages within this, on every database. Generous: a clean-clone CI run
 * on an idle machine measured 1,024 ms once on MariaDB; typical runs measure 60-790 ms
 * (docs/dashboard.md). A page that stops following still fails.
 */
const HANDOVER_BOUND_MS = 2_000;
/** GEMSTONE_TEST_PRINT_LATENCY=1 prints each measured hand-over latency. */
const PRINT_LATENCY = process.env.GEMSTONE_TEST_PRINT_LATENCY === '1';
const GROUP_SIZE = 200;

const text = (page: Page, selector: string) => page.locator(selector).first().textContent();

/** The page's document, as the callbacks below (run in the browser) use it: the tests are not compiled against the DOM. */
interface Found {
  textContent: string | null;
  dataset: Record<string, string | undefined>;
  querySelector(selector: string): Found | null;
  querySelectorAll(selector: string): ArrayLike<Found> & Iterable<Found>;
}
declare const document: { querySelector(selector: string): Found | null; querySelectorAll(selector: string): ArrayLike<Found> };

describeInBrowser('dashboard in Chromium', (browser: () => Browser) => {
  describeEachDatabase(
    'pages',
    (db) => {
      let ds: DataSource;
      let served: Served;
      const electors: LeaderElector[] = [];
      const groups: LeaderElectorGroup[] = [];
      const elector = (ns: string, metadata: Record<string, string | number>) => {
        const e = new LeaderElector({ dataSource: ds, ns, expireSeconds: 10, intervalMs: 300, metadata });
        electors.push(e);
        return e;
      };

      beforeAll(async () => {
        ds = await db.connect();
        served = await serveDashboard(createDashboard({ dataSource: ds, pollMs: POLL_MS }));
      });
      // After each test, while its database still exists (the database is dropped by an afterAll
      // registered before these): stopping later only logs "Driver not Connected".
      afterEach(async () => {
        for (const e of electors.splice(0)) await e.stop();
        for (const g of groups.splice(0)) await g.stop();
      });
      afterAll(async () => {
        await served?.close();
      });

      test('the overview loads, goes live and shows the leader of each namespace', async () => {
        const web = elector('web', { host: 'web-1', pid: 101 });
        await web.start();
        const context = await browser().newContext();
        try {
          const { page, incidents } = await watchedPage(context);
          await page.goto(`${served.url}/`);
          await page.locator('tr[data-ns="web"] [data-field="leader"]').waitFor();
          expect(await text(page, 'tr[data-ns="web"] [data-field="leader"]')).toBe(`${web.candidateId.slice(0, 8)}web-1:101`);
          expect(await text(page, 'tr[data-ns="web"] [data-field="term"]')).toBe('1');
          await page.locator('#live[data-state="live"]').waitFor();
          expect(await text(page, '[data-field="summary"]')).toMatch(/^\d+ namespaces? · \d+ vacant · \d+ flapping$/);
          expect(await incidents()).toEqual({ pwned: undefined, violations: [], errors: [] });
        } finally {
          await context.close();
        }
      });

      test(`a namespace's page and the overview follow a hand-over within 2 s (${db.kind === 'postgres' ? 'NOTIFY' : `a ${POLL_MS} ms poll`})`, async () => {
        const first = elector('handover', { host: 'box-a', pid: 1 });
        const second = elector('handover', { host: 'box-b', pid: 2, version: '2.0.0' });
        await first.start();
        await second.start();
        expect(first.isLeader).toBe(true);
        const context = await browser().newContext();
        try {
          const { page, incidents } = await watchedPage(context);
          const overview = await context.newPage();
          await page.goto(`${served.url}/#/ns/handover?window=300`);
          await overview.goto(`${served.url}/#/?q=handover`);
          await page.waitForFunction((id) => document.querySelector('[data-field="leader-id"]')?.textContent === id, first.candidateId);
          await overview.locator('tr[data-ns="handover"] [data-field="leader"]').waitFor();
          // Both candidates with their metadata; the leader marked.
          await page.locator(`tr[data-candidate="${second.candidateId}"]`).waitFor();
          expect(await page.locator('table[data-view="candidates"] tbody tr').count()).toBe(2);
          expect(await text(page, `tr[data-candidate="${first.candidateId}"]`)).toContain('leader');
          expect(await text(page, `tr[data-candidate="${second.candidateId}"] dl`)).toBe('hostbox-bpid2version2.0.0');
          await page.locator('#live[data-state="live"]').waitFor();

          const handedOver = new Promise<number>((resolve) => second.once('elected', () => resolve(performance.now())));
          await first.stop();
          const at = await handedOver;
          const [onPage, onOverview] = await Promise.all([
            page
              .waitForFunction((id) => document.querySelector('[data-field="leader-id"]')?.textContent === id, second.candidateId, { timeout: 10_000 })
              .then(() => performance.now() - at),
            overview
              .waitForFunction(
                (short) => document.querySelector('tr[data-ns="handover"] [data-field="leader"]')?.textContent?.startsWith(short) === true,
                second.candidateId.slice(0, 8),
                { timeout: 10_000 },
              )
              .then(() => performance.now() - at),
          ]);
          // eslint-disable-next-line no-console
          if (PRINT_LATENCY) console.log(`hand-over shown after ${Math.round(onPage)} ms (namespace page), ${Math.round(onOverview)} ms (overview) [${db.name}]`);
          expect(Math.max(onPage, onOverview)).toBeLessThan(HANDOVER_BOUND_MS);
          expect(await text(page, '[data-view="leader"] [data-field="term"]')).toBe('2');

          // The timeline fills in: term 1 ended (unregistered by stop()), term 2 leading.
          await page.locator('table[data-view="terms"] tr[data-term="2"]').waitFor();
          expect(await text(page, 'table[data-view="terms"] tr[data-term="2"] td:last-child')).toBe('leading');
          expect(await text(page, 'table[data-view="terms"] tr[data-term="1"] td:last-child')).toBe('unregistered');
          expect(await page.locator('[data-view="namespace-timeline"] .seg[data-term="1"].seg-unregistered').count()).toBe(1);
          expect(await page.locator('[data-view="namespace-timeline"] .seg[data-term="2"].seg-current').count()).toBe(1);
          expect(await incidents()).toEqual({ pwned: undefined, violations: [], errors: [] });
        } finally {
          await context.close();
        }
      });

      test('while the live stream is down the header shows reconnecting, then live again, and the page follows changes made meanwhile', async () => {
        // The same dashboard behind a server of the test's own, closed and reopened on its port.
        const dashboard = createDashboard({ dataSource: ds, pollMs: POLL_MS });
        let server = await serve((request, response) => dashboard(request, response));
        const port = Number(new URL(server.url).port);
        const first = elector('outage', { host: 'box-a', pid: 1 });
        await first.start();
        const context = await browser().newContext();
        try {
          const { page } = await watchedPage(context);
          await page.goto(`${server.url}/#/ns/outage?window=300`);
          await page.waitForFunction((id) => document.querySelector('[data-field="leader-id"]')?.textContent === id, first.candidateId);
          await page.locator('#live[data-state="live"]').waitFor();

          await server.close(); // drops the stream; reconnecting is refused while it is down
          await page.locator('#live[data-state="reconnecting"]').waitFor({ timeout: 5_000 });
          expect(await text(page, '#live')).toBe('reconnecting…');
          // A hand-over while the page cannot hear of it.
          const second = elector('outage', { host: 'box-b', pid: 2 });
          await second.start();
          await first.stop();
          await waitFor('the hand-over', () => second.isLeader);
          server = await serve((request, response) => dashboard(request, response), port);

          await page.locator('#live[data-state="live"]').waitFor({ timeout: 15_000 });
          expect(await text(page, '#live')).toBe('live');
          await page.waitForFunction((id) => document.querySelector('[data-field="leader-id"]')?.textContent === id, second.candidateId, { timeout: 10_000 });
        } finally {
          await context.close();
          await dashboard.close();
          await server.close();
        }
      });

      test(`the overview's timeline renders a lane for each of a group's ${GROUP_SIZE} namespaces, each with its terms`, async () => {
        const namespaces = Array.from({ length: GROUP_SIZE }, (_, i) => `group-${String(i).padStart(3, '0')}`);
        const before = new LeaderElectorGroup({ dataSource: ds, namespaces, expireSeconds: 30, intervalMs: 1_000 });
        await before.start();
        await before.stop(); // every term ends (unregistered)
        const after = new LeaderElectorGroup({ dataSource: ds, namespaces, expireSeconds: 30, intervalMs: 1_000 });
        groups.push(after);
        await after.start();
        expect(after.leases.size).toBe(GROUP_SIZE);
        const context = await browser().newContext({ viewport: { width: 1400, height: 900 } });
        try {
          const { page, incidents } = await watchedPage(context);
          await page.goto(`${served.url}/#/?q=group-&size=${GROUP_SIZE}&mode=timeline&window=300`);
          await page.locator('[data-view="overview-timeline"] .lane[data-ns] .seg').first().waitFor();
          await page.waitForFunction((n) => document.querySelectorAll('[data-view="overview-timeline"] .lane[data-ns] .seg-current').length === n, GROUP_SIZE);
          const lanes = await page.$$eval('[data-view="overview-timeline"] .lane[data-ns]', (elements) =>
            (elements as unknown as Found[]).map((lane) => ({
              ns: lane.dataset.ns,
              label: lane.querySelector('.lane-label')?.textContent,
              kinds: [...lane.querySelectorAll('.seg')].map((seg) => seg.dataset.kind),
            })),
          );
          expect(lanes.map((lane) => lane.ns)).toEqual(namespaces);
          expect(lanes.map((lane) => lane.label)).toEqual(namespaces);
          for (const lane of lanes) {
            expect(lane.kinds.filter((kind) => kind !== 'vacant')).toEqual(['unregistered', 'current']);
          }
          expect(await text(page, '[data-field="range"]')).toBe(`1–${GROUP_SIZE} of ${GROUP_SIZE}`);
          // The same page as a table.
          await page.locator('a.tab', { hasText: 'Table' }).click();
          await page.waitForFunction((n) => document.querySelectorAll('table[data-view="overview-table"] tbody tr').length === n, GROUP_SIZE);
          expect(await incidents()).toEqual({ pwned: undefined, violations: [], errors: [] });
        } finally {
          await context.close();
        }
      });
    },
    { sharedOnly: true },
  );
});
