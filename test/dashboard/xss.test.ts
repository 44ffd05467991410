/**
 * Namespaces and candidate metadata are untrusted: hostile HTML and script in both must reach the
 * page as text, on every view (the overview as a table and as a timeline, each namespace's page
 * with its leader's and candidates' metadata), and never run — with the page's
 * Content-Security-Policy and without it (the renderer alone must be safe). The same views and
 * checks are shown to catch a renderer that injects HTML: with the page's DOM module swapped for
 * one using innerHTML, they fail on every view — without the policy because the injected script
 * runs, with it because the policy refuses the markup.
 */
import type { DataSource } from 'typeorm';
import type { Browser, BrowserContext } from 'playwright-core';
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

/** A view of the page, and what it must show of the hostile data. */
interface View {
  readonly name: string;
  readonly hash: string;
  /** All present once the view has rendered. */
  readonly ready: readonly string[];
  /** The texts that must equal `expected` (in any order where `sorted`). */
  readonly shown: string;
  readonly expected: readonly string[];
  readonly sorted: boolean;
  /** A namespace's page: its metadata (leader and candidates) must show too. */
  readonly metadata: boolean;
  /** Hovered once rendered (a timeline bar's tooltip). */
  readonly hover?: string;
}

/** Every view: the overview as a table and as a timeline, and each hostile namespace's page. */
const VIEWS: readonly View[] = [
  {
    name: 'overview table',
    hash: '#/',
    ready: [`table[data-view="overview-table"] tbody tr:nth-child(${HOSTILE_NAMESPACES.length})`],
    shown: 'table[data-view="overview-table"] td.ns',
    expected: HOSTILE_NAMESPACES,
    sorted: true,
    metadata: false,
  },
  {
    name: 'overview timeline',
    hash: '#/?mode=timeline&window=300',
    ready: [`[data-view="overview-timeline"] .lane[data-ns]:nth-child(${HOSTILE_NAMESPACES.length}) .seg-current`],
    shown: '[data-view="overview-timeline"] .lane[data-ns] .lane-label',
    expected: HOSTILE_NAMESPACES,
    sorted: true,
    metadata: false,
    hover: '[data-view="overview-timeline"] .seg-current',
  },
  ...HOSTILE_NAMESPACES.map(
    (ns): View => ({
      name: `the page of ${JSON.stringify(ns)}`,
      hash: `#/ns/${encodeURIComponent(ns)}?window=300`,
      ready: ['table[data-view="terms"] tr[data-term="2"]', 'table[data-view="candidates"] tbody tr:nth-child(2)', '[data-view="leader"] dl.meta'],
      shown: 'h1[data-field="ns"]',
      expected: [ns],
      sorted: false,
      metadata: true,
    }),
  ),
];

/** What one view showed and did, in a page of its own. */
interface Seen {
  readonly view: View;
  readonly rendered: boolean;
  /** Of `view.ready`, what is missing; and the page's problem banner (to say why). */
  readonly missing: string[];
  readonly problem: string | null;
  readonly shown: string[];
  /** The leader's and the candidates' metadata as text. */
  readonly metadata: string[];
  /** Elements the hostile strings would make if parsed as HTML. */
  readonly markup: number;
  readonly incidents: Incidents;
}

/** The callbacks below run in the browser: the tests are not compiled against the DOM. */
declare const document: { querySelector(selector: string): unknown };

/**
 * Opens `view` in a page of its own; waits until it rendered, or until injected markup ran or was
 * blocked (then the checks fail at once), or `timeoutMs` went by.
 */
async function visit(context: BrowserContext, url: string, view: View, timeoutMs: number): Promise<Seen> {
  const { page, incidents } = await watchedPage(context);
  await page.goto(`${url}/${view.hash}`);
  await page
    .waitForFunction(
      (ready) => {
        const globals = globalThis as unknown as { __pwned?: unknown; __violations?: string[] };
        if (globals.__pwned !== undefined || (globals.__violations ?? []).length > 0) return true;
        return ready.every((selector) => document.querySelector(selector) !== null);
      },
      view.ready,
      { timeout: timeoutMs },
    )
    .catch(() => undefined);
  const missing = () => page.evaluate((ready) => ready.filter((selector) => document.querySelector(selector) === null), view.ready);
  if (view.hover && (await missing()).length === 0) await page.hover(view.hover);
  // Let any image load fail and its handler (if one had been created) run.
  await page.waitForTimeout(500);
  const texts = (selector: string) => page.$$eval(selector, (elements) => elements.map((element) => element.textContent ?? ''));
  const absent = await missing();
  const seen = {
    view,
    rendered: absent.length === 0,
    missing: absent,
    problem: await page.evaluate(() => {
      const banner = document.querySelector('#problem') as { hidden: boolean; textContent: string | null } | null;
      return banner && !banner.hidden ? banner.textContent : null;
    }),
    shown: await texts(view.shown),
    metadata: view.metadata ? await texts('[data-view="leader"] dl.meta, table[data-view="candidates"] dl.meta') : [],
    markup: await page.locator('main img, main svg, main iframe, main script, main object, main embed').count(),
    incidents: await incidents(),
  };
  // Closed, with its live stream: Chromium opens at most 6 connections to one host, and the
  // streams of pages left open would hold them all and stall a later page's reads.
  await page.close();
  return seen;
}

/** The checks: the view rendered, ran and was refused nothing, and shows every hostile string as the text it is. */
function check(seen: Seen): void {
  const { view } = seen;
  expect({ view: view.name, missing: seen.missing, problem: seen.problem, incidents: seen.incidents }).toEqual({
    view: view.name,
    missing: [],
    problem: null,
    incidents: { pwned: undefined, violations: [], errors: [] },
  });
  expect(view.sorted ? [...seen.shown].sort() : seen.shown).toEqual(view.sorted ? [...view.expected].sort() : view.expected);
  expect(seen.markup).toBe(0);
  if (view.metadata) {
    // The leader's and the candidate's list, keys and values.
    expect(seen.metadata.length).toBeGreaterThanOrEqual(2);
    for (const shown of seen.metadata) {
      for (const [key, value] of Object.entries(HOSTILE_METADATA)) {
        expect(shown).toContain(key);
        expect(shown).toContain(value);
      }
    }
  }
}

const POLICY_MODES = [
  ['with the Content-Security-Policy', false],
  ['without it (the renderer alone)', true],
] as const;

describeInBrowser('dashboard against hostile namespaces and metadata', (browser: () => Browser) => {
  describeEachDatabase(
    'Chromium',
    (db) => {
      let served: Served;
      beforeAll(async () => {
        served = await hostileDashboard(await db.connect());
      });
      afterAll(async () => {
        await served?.close();
      });

      test.each(POLICY_MODES)('every view shows them as text and runs none of them, %s', async (_label, bypassCSP) => {
        const context = await browser().newContext({ bypassCSP });
        try {
          for (const view of VIEWS) check(await visit(context, served.url, view, 10_000));
        } finally {
          await context.close();
        }
      });
    },
    // About the renderer too: one database. (The hostile values come back from every database
    // exactly as stored: test/security/sql-modes.test.ts and the metadata tests of each.)
    { kinds: ['postgres'] },
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

      test.each(POLICY_MODES)('the same checks fail on every view of a renderer that injects HTML, %s', async (_label, bypassCSP) => {
        const context = await browser().newContext({ bypassCSP });
        try {
          await context.route('**/client/dom.js', async (route) => {
            const original = await route.fetch();
            await route.fulfill({ response: original, body: unsafeDomModule(await original.text()) });
          });
          for (const view of VIEWS) {
            const seen = await visit(context, served.url, view, 10_000);
            expect(() => check(seen)).toThrow();
            // And for the reason they exist: without the policy the injected script ran; with it,
            // the policy refused the markup (a violation, or the error Trusted Types throws).
            if (bypassCSP) expect({ view: view.name, pwned: seen.incidents.pwned }).toEqual({ view: view.name, pwned: expect.any(String) });
            else expect({ view: view.name, refused: seen.incidents.violations.length + seen.incidents.errors.length > 0 }).toEqual({ view: view.name, refused: true });
          }
        } finally {
          await context.close();
        }
      });
    },
    { kinds: ['sqlite'], sharedOnly: true },
  );
});
