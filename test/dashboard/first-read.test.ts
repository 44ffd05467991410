/**
 * A namespace's page shows when the current state began ("leading since", "vacant since") from its
 * first reads, before its live stream has delivered anything: the server here holds every request
 * for the stream unanswered, so the page never hears from it (checked: the stream was asked for and
 * the header never says `live`), and the value can only come from the page's first reads.
 */
import type * as http from 'http';
import type { DataSource } from 'typeorm';
import type { Browser } from 'playwright-core';
import { ElectionService, LeaderElector } from 'gemstone-utils';
import { createDashboard } from 'gemstone-utils/dashboard';
import { describeEachDatabase } from '../support/databases';
import { ns as freshNs } from '../support/rows';
import { describeInBrowser, watchedPage } from './support/browser';
import { serve } from './support/http';

/** The page's `YYYY-MM-DD HH:MM:SS` in local time (the browser runs in this process's time zone). */
function dateTime(at: Date): string {
  const two = (n: number) => String(n).padStart(2, '0');
  return `${at.getFullYear()}-${two(at.getMonth() + 1)}-${two(at.getDate())} ${two(at.getHours())}:${two(at.getMinutes())}:${two(at.getSeconds())}`;
}

interface Found {
  textContent: string | null;
  dataset: Record<string, string | undefined>;
}
declare const document: { querySelector(selector: string): Found | null };

describeInBrowser('dashboard: when the state began, before the stream connects', (browser: () => Browser) => {
  describeEachDatabase(
    'first read',
    (db) => {
      let ds: DataSource;
      beforeAll(async () => {
        ds = await db.connect();
      });

      test('"leading since" and "vacant since" come from the first reads while the stream is held', async () => {
        const dashboard = createDashboard({ dataSource: ds, pollMs: 250 });
        const held: http.ServerResponse[] = [];
        const server = await serve((request, response) => {
          // The live streams never get an answer: the page must do without them.
          if (request.url?.includes('/events')) {
            held.push(response);
            return;
          }
          dashboard(request, response);
        });
        const ns = freshNs();
        const elector = new LeaderElector({ dataSource: ds, ns, expireSeconds: 10, intervalMs: 300, metadata: { host: 'box-a', pid: 1 } });
        await elector.start();
        const context = await browser().newContext();
        try {
          const [term] = await new ElectionService(ds).getHistory({ ns });
          expect(term).toMatchObject({ term: 1, leaderId: elector.candidateId, endedAt: null });

          const { page, incidents } = await watchedPage(context);
          await page.goto(`${server.url}/#/ns/${encodeURIComponent(ns)}?window=300`);
          await page.waitForFunction((id) => document.querySelector('[data-field="leader-id"]')?.textContent === id, elector.candidateId);
          await page.waitForFunction(() => /^\d{4}-/.test(document.querySelector('[data-view="leader"] [data-field="since"]')?.textContent ?? ''));
          expect(await page.locator('[data-view="leader"] [data-field="since"]').textContent()).toMatch(new RegExp(`^${dateTime(term!.acquiredAt)} \\(`));
          expect(held.length).toBeGreaterThanOrEqual(1); // the stream was asked for…
          expect(await page.locator('#live').getAttribute('data-state')).not.toBe('live'); // …and never answered

          // Vacated (stop() unregisters): a fresh page shows since when, again without the stream.
          await elector.stop();
          const [ended] = await new ElectionService(ds).getHistory({ ns });
          expect(ended?.endedAt).toBeInstanceOf(Date);
          await page.reload();
          await page.waitForFunction(() => document.querySelector('[data-field="leader-id"]')?.textContent === 'nobody leads');
          await page.waitForFunction(() => /^vacant since \d{4}-/.test(document.querySelector('[data-view="leader"] [data-field="since"]')?.textContent ?? ''));
          expect(await page.locator('[data-view="leader"] [data-field="since"]').textContent()).toBe(`vacant since ${dateTime(ended!.endedAt!)} (after term 1)`);
          expect(await page.locator('#live').getAttribute('data-state')).not.toBe('live');
          expect(await incidents()).toEqual({ pwned: undefined, violations: [], errors: [] });
        } finally {
          await context.close();
          await elector.stop();
          for (const response of held) response.destroy();
          await dashboard.close();
          await server.close();
        }
      });
    },
    { sharedOnly: true },
  );
});
