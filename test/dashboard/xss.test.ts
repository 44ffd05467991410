/**
 * Namespaces and candidate metadata are untrusted: hostile HTML and script in both must reach the
 * page as text, on every view, and never run — with the page's Content-Security-Policy and without
 * it (the renderer alone must be safe). The same checks are shown to catch a renderer that injects
 * HTML: the page's DOM module swapped for one using innerHTML makes them fail.
 */
import type { DataSource } from 'typeorm';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { ElectionService } from 'gemstone-utils';
import { createDashboard } from 'gemstone-utils/dashboard';
import { describeEachDatabase, uuid } from '../support/databases';
import { describeInBrowser, Incidents, watchedPage } from './support/browser';
import { serveDashboard, Served } from './support/http';

/** Each sets `window.__pwned` if the browser runs it. */
const HOSTILE_NAMESPACES = [
  `<img src=x onerror="window.__pwned='ns-img'">`,
  `"><svg onload="window.__pwned='ns-svg'"></svg>`,
  `</script><script>window.__pwned='ns-script'</script>`,
  `javascript:window.__pwned='ns-href'//`,
];
const HOSTILE_METADATA = {
  host: `<img src=x onerror="window.__pwned='meta-host'">`,
  pid: `<svg><script>window.__pwned='meta-pid'</script></svg>`,
  [`<img src=y onerror="window.__pwned='meta-key'">`]: 'a key',
  version: `</dd><iframe srcdoc="<script>parent.__pwned='meta-iframe'</script>"></iframe>`,
};

/** The real DOM module with its one text node turned into parsed HTML: what an unsafe renderer does. */
function unsafeDomModule(original: string): string {
  const safe = 'return document.createTextNode(value);';
  if (!original.includes(safe)) throw new Error('dom.js no longer makes text nodes where this test expects: update the test');
  return original.replace(safe, "const span = document.createElement('span'); span.innerHTML = value; return span;");
}

/** A dashboard on `ds` with every hostile namespace: two terms each, the leader and a candidate with hostile metadata. */
async function hostileDashboard(ds: DataSource): Promise<Served> {
  const service = new ElectionService(ds);
  for (const ns of HOSTILE_NAMESPACES) {
    const [a, b] = [uuid(), uuid()];
    await service.elect(a, { ns, metadata: HOSTILE_METADATA });
    await service.resign(a, { ns });
    await service.elect(b, { ns, metadata: HOSTILE_METADATA });
    await service.registerCandidate(a, { ns, metadata: HOSTILE_METADATA });
  }
  return serveDashboard(createDashboard({ dataSource: ds }));
}

interface Visit {
  readonly page: Page;
  readonly incidents: () => Promise<Incidents>;
}

describeInBrowser('dashboard against hostile namespaces and metadata', (browser: () => Browser) => {
  describeEachDatabase(
    'Chromium',
    (db) => {
      let ds: DataSource;
      let served: Served;

      beforeAll(async () => {
        ds = await db.connect();
        served = await hostileDashboard(ds);
      });
      afterAll(async () => {
        await served?.close();
      });

      /** Visits every view: the overview as a table and as a timeline, and each hostile namespace's page. */
      async function visitAll(context: BrowserContext): Promise<{ incidents: Incidents; shown: string[] }> {
        const { page, incidents }: Visit = await watchedPage(context);
        const shown: string[] = [];
        await page.goto(`${served.url}/`);
        await page.locator('table[data-view="overview-table"] tbody tr').nth(HOSTILE_NAMESPACES.length - 1).waitFor({ timeout: 10_000 });
        shown.push(...(await page.$$eval('table[data-view="overview-table"] td.ns', (cells) => cells.map((cell) => cell.textContent ?? ''))));
        await page.goto(`${served.url}/#/?mode=timeline&window=300`);
        await page.locator('[data-view="overview-timeline"] .lane[data-ns] .seg').first().waitFor({ timeout: 10_000 });
        await page.hover('[data-view="overview-timeline"] .seg-current');
        for (const ns of HOSTILE_NAMESPACES) {
          await page.goto(`${served.url}/#/ns/${encodeURIComponent(ns)}?window=300`);
          await page.locator('table[data-view="terms"] tr[data-term="2"]').waitFor({ timeout: 10_000 });
          await page.locator('table[data-view="candidates"] tbody tr').nth(1).waitFor({ timeout: 10_000 });
          shown.push((await page.locator('h1[data-field="ns"]').textContent()) ?? '');
        }
        // Let any image load fail and its handler (if one had been created) run.
        await page.waitForTimeout(500);
        return { incidents: await incidents(), shown };
      }

      test.each([
        ['with the Content-Security-Policy', false],
        ['without it (the renderer alone)', true],
      ])('every view shows them as text and runs none of them, %s', async (_label, bypassCSP) => {
        const context = await browser().newContext({ bypassCSP });
        try {
          const { incidents, shown } = await visitAll(context);
          expect(incidents).toEqual({ pwned: undefined, violations: [], errors: [] });
          // Each namespace exactly as stored, in the overview and as its page's title.
          expect(shown.slice(0, HOSTILE_NAMESPACES.length).sort()).toEqual([...HOSTILE_NAMESPACES].sort());
          expect(shown.slice(HOSTILE_NAMESPACES.length)).toEqual(HOSTILE_NAMESPACES);
          // The metadata too, keys and values.
          const page = context.pages()[0]!;
          const metadata = await page.locator('[data-view="leader"] dl.meta').textContent();
          for (const [key, value] of Object.entries(HOSTILE_METADATA)) {
            expect(metadata).toContain(key);
            expect(metadata).toContain(value);
          }
          expect(await page.locator('[data-view="leader"] img, [data-view="leader"] svg, [data-view="leader"] iframe, main script').count()).toBe(0);
        } finally {
          await context.close();
        }
      });

    },
    { sharedOnly: true },
  );

  // About the renderer, not the database: one is enough.
  describeEachDatabase(
    'Chromium, an unsafe renderer',
    (db) => {
      let served: Served;
      beforeAll(async () => {
        served = await hostileDashboard(await db.connect());
      });
      afterAll(async () => {
        await served?.close();
      });

      test.each([
        ['with the policy: it blocks the injected markup and reports violations', false],
        ['without the policy: the injected script runs', true],
      ])('the same checks fail on a renderer that injects HTML — %s', async (_label, bypassCSP) => {
        const context = await browser().newContext({ bypassCSP });
        try {
          await context.route('**/client/dom.js', async (route) => {
            const original = await route.fetch();
            await route.fulfill({ response: original, body: unsafeDomModule(await original.text()) });
          });
          const { page, incidents } = await watchedPage(context);
          await page.goto(`${served.url}/`);
          // Until the injected markup ran or was blocked (or 10 s went by: then the checks below fail).
          await page
            .waitForFunction(() => {
              const globals = globalThis as unknown as { __pwned?: unknown; __violations?: string[] };
              return globals.__pwned !== undefined || (globals.__violations ?? []).length > 0;
            }, undefined, { timeout: 10_000 })
            .catch(() => undefined);
          const seen = await incidents();
          if (bypassCSP) expect(seen.pwned).toBeDefined();
          else expect(seen.violations.length + seen.errors.length).toBeGreaterThan(0);
          expect(seen).not.toEqual({ pwned: undefined, violations: [], errors: [] });
        } finally {
          await context.close();
        }
      });
    },
    { kinds: ['sqlite'], sharedOnly: true },
  );
});
