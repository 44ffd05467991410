/**
 * Chromium from the Debian package, driven by playwright-core (which never downloads a
 * browser). One browser per test file, started in `beforeAll`. Without /usr/bin/chromium the
 * browser tests are skipped LOUDLY here, and fail under CI (CI=true), where it must be installed.
 */
import * as fs from 'fs';
import { chromium, type Browser, type BrowserContext, type Page } from 'playwright-core';

export const CHROMIUM = process.env.GEMSTONE_CHROMIUM || '/usr/bin/chromium';

/**
 * Flags for this machine: no sandbox (root in a container), no GPU, and none of Chromium's own
 * background connections (the closed network here refuses them, and a test must not wait on them).
 */
export const CHROMIUM_ARGS = [
  '--headless',
  '--no-sandbox',
  '--disable-gpu',
  '--disable-quic',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
];

export const HAS_CHROMIUM = fs.existsSync(CHROMIUM);
const REQUIRED = process.env.CI === 'true';

/** `describe`, or — without Chromium — a loud skip (a failure under CI). */
export function describeInBrowser(title: string, body: (browser: () => Browser) => void): void {
  if (!HAS_CHROMIUM) {
    const reason = `Chromium not found at ${CHROMIUM} (apt-get install chromium, or set GEMSTONE_CHROMIUM)`;
    if (REQUIRED) {
      describe(title, () => test('Chromium is installed (required under CI)', () => {
        throw new Error(reason);
      }));
      return;
    }
    // eslint-disable-next-line no-console
    console.warn(`\n*** SKIPPED ${title}: ${reason} ***\n`);
    describe.skip(`${title} — SKIPPED: ${reason}`, () => test.skip('needs Chromium', () => undefined));
    return;
  }
  describe(title, () => {
    let browser: Browser | undefined;
    // launch() gives the browser a fresh temporary profile (--user-data-dir) of its own, removed on close.
    beforeAll(async () => {
      browser = await chromium.launch({ executablePath: CHROMIUM, args: CHROMIUM_ARGS, timeout: 30_000 });
    }, 60_000);
    afterAll(async () => {
      await browser?.close();
    });
    body(() => {
      if (!browser) throw new Error('the browser did not start');
      return browser;
    });
  });
}

/** What a page did that it must not: script it did not load, policy violations, uncaught errors. */
export interface Incidents {
  pwned: unknown;
  violations: string[];
  errors: string[];
}

/** What the callbacks below, which run in the browser, use of it (the tests are not compiled against the DOM). */
interface PageGlobals {
  __pwned?: unknown;
  __violations?: string[];
  document: { addEventListener(type: 'securitypolicyviolation', listener: (event: { violatedDirective: string; blockedURI: string }) => void): void };
}

/** A page that records Content-Security-Policy violations and uncaught errors from its first script on. */
export async function watchedPage(context: BrowserContext): Promise<{ page: Page; incidents: () => Promise<Incidents> }> {
  const page = await context.newPage();
  const errors: string[] = [];
  page.on('pageerror', (error) => errors.push(error.message));
  await page.addInitScript(() => {
    const page = globalThis as unknown as PageGlobals;
    const violations: string[] = (page.__violations = []);
    page.document.addEventListener('securitypolicyviolation', (event) => {
      violations.push(`${event.violatedDirective} ${event.blockedURI}`);
    });
  });
  return {
    page,
    incidents: async () => ({
      ...(await page.evaluate(() => {
        const page = globalThis as unknown as PageGlobals;
        return { pwned: page.__pwned, violations: page.__violations ?? [] };
      })),
      errors,
    }),
  };
}
