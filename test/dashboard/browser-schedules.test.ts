/**
 * A namespace's page in Chromium shows its schedules: each name the runs table knows or a loop
 * given to the dashboard hosts, the next slot of a hosted one ("unknown" for the others), its
 * newest runs with state, attempt and term, and the error of a failed one — hostile names and
 * messages as the text they are (nothing parsed, nothing run), with the page's
 * Content-Security-Policy and without it. A database without the runs table gets a card that says how to set schedules up,
 * not an error.
 */
import type { Browser } from 'playwright-core';
import { ElectionService, LeaderElector } from 'gemstone-utils';
import { createDashboard } from 'gemstone-utils/dashboard';
import { describeEachDatabase, query } from '../support/databases';
import { ns as freshNs } from '../support/rows';
import { databaseNow, leaderOf, runsStoreOf } from '../schedules/support';
import { describeInBrowser, watchedPage } from './support/browser';
import { serveDashboard, Served } from './support/http';

/** Each sets `window.__pwned` if the browser runs it. */
const HOSTILE_NAME = `<img src=x onerror="window.__pwned='schedule-name'">`;
const HOSTILE_ERROR = `</td><script>window.__pwned='run-error'</script><svg onload="window.__pwned='run-svg'">`;
const HOSTILE_HOSTED = `<svg onload="window.__pwned='hosted-name'">`;

/** The callbacks below run in the browser: the tests are not compiled against the DOM. */
declare const document: { querySelector(selector: string): unknown };

describeInBrowser('dashboard: a namespace page shows its schedules', (browser: () => Browser) => {
  describeEachDatabase(
    'Chromium',
    (db) => {
      let served: Served;
      let elector: LeaderElector;
      let ns: string;
      let term: number;
      beforeAll(async () => {
        const ds = await db.connect();
        ns = freshNs();
        const leader = await leaderOf(new ElectionService(ds), ns);
        term = leader.term;
        const store = runsStoreOf(ds);
        const base = (await databaseNow(ds)).getTime() - 600_000;
        const failed = { ns, name: HOSTILE_NAME, slot: new Date(base) };
        await store.claim(failed, leader, 3);
        await store.finish(failed, leader, 'failed', HOSTILE_ERROR);
        const done = { ns, name: 'nightly', slot: new Date(base) };
        await store.claim(done, leader, 3);
        await store.finish(done, leader, 'done');
        await store.record([{ ns, name: 'nightly', slot: new Date(base + 60_000) }], leader, 'missed');
        // Hosts 'nightly' and a schedule without runs; never started, so it claims nothing.
        elector = new LeaderElector({ dataSource: ds, ns });
        elector.schedule({ name: 'nightly', cron: '0 3 1 1 *' }, () => undefined);
        elector.schedule({ name: HOSTILE_HOSTED, everyMs: 3_600_000 }, () => undefined);
        served = await serveDashboard(createDashboard({ dataSource: ds, electors: [elector] }));
      });
      afterAll(async () => {
        await served?.close();
        await elector?.stop();
      });

      test.each([false, true])('names, states and errors as text, nothing run (bypassCSP: %s)', async (bypassCSP) => {
        const context = await browser().newContext({ bypassCSP });
        try {
          const { page, incidents } = await watchedPage(context);
          await page.goto(`${served.url}/#/ns/${encodeURIComponent(ns)}`);
          const ready = '[data-view="schedules"] [data-schedule="nightly"] tbody tr:nth-child(2)';
          await page.waitForFunction((selector) => document.querySelector(selector) !== null, ready, { timeout: 10_000 });
          // Let any image load fail and its handler (if one had been created) run.
          await page.waitForTimeout(500);
          const texts = (selector: string) => page.$$eval(selector, (elements) => elements.map((e) => e.textContent ?? ''));
          const names = [HOSTILE_NAME, HOSTILE_HOSTED, 'nightly'].sort();
          expect(await texts('[data-view="schedules"] h3[data-field="schedule"]')).toEqual(names);
          const slotted = /^next slot: \d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}$/;
          expect(await texts('[data-view="schedules"] [data-field="next-slot"]')).toEqual(
            names.map((name) => (name === HOSTILE_NAME ? 'next slot: unknown (not hosted here)' : expect.stringMatching(slotted))),
          );
          expect(await texts(`[data-view="schedules"] [data-schedule="${HOSTILE_HOSTED.replace(/["\\]/g, '\\$&')}"] p:not([data-field])`)).toEqual(['No run recorded yet.']);
          expect(await texts('[data-view="schedules"] [data-field="error"]')).toEqual(
            [HOSTILE_NAME, 'nightly'].sort().flatMap((name) => (name === HOSTILE_NAME ? [HOSTILE_ERROR] : ['', ''])),
          );
          expect(await texts('[data-view="schedules"] [data-schedule="nightly"] [data-field="state"]')).toEqual(['missed', 'done']);
          const failedRow = await texts('[data-view="schedules"] tr[data-state="failed"] td');
          expect(failedRow.slice(1, 4)).toEqual(['failed', '1', String(term)]);
          expect(await page.locator('main img, main svg, main iframe, main script').count()).toBe(0);
          expect(await incidents()).toEqual({ pwned: undefined, violations: [], errors: [] });
          await page.close();
        } finally {
          await context.close();
        }
      });

      test('a database without the runs table: the card says schedules are not set up and how, no error', async () => {
        const old = await db.sibling();
        const ds = await old.connect();
        await query(ds, 'DROP TABLE gemstone_election_run');
        const other = freshNs();
        await leaderOf(new ElectionService(ds), other);
        const reported: unknown[] = [];
        const oldServed = await serveDashboard(createDashboard({ dataSource: ds, onError: (error) => reported.push(error) }));
        const context = await browser().newContext();
        try {
          const { page, incidents } = await watchedPage(context);
          await page.goto(`${oldServed.url}/#/ns/${encodeURIComponent(other)}`);
          const reason = '[data-view="schedules"] [data-field="reason"]';
          await page.waitForFunction((selector) => document.querySelector(selector) !== null, reason, { timeout: 10_000 });
          const text = await page.locator(reason).textContent();
          expect(text).toMatch(/^Schedules are not set up in this database: the runs table gemstone_election_run does not exist/);
          expect(text).toMatch(/initDb/);
          expect(await page.locator('[data-view="schedules"] .note').count()).toBe(0);
          expect(await page.locator('[data-view="schedules"] h2').textContent()).toBe('Schedules');
          expect(await incidents()).toEqual({ pwned: undefined, violations: [], errors: [] });
          expect(reported).toEqual([]);
          await page.close();
        } finally {
          await context.close();
          await oldServed.close();
        }
      });
    },
    { kinds: ['postgres'] },
  );
});
