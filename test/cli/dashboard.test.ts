/**
 * `gemstone-election dashboard` and `demo --dashboard` as real processes: the dashboard serves
 * the page, JSON and live streams of the database until SIGTERM; it warns before listening off
 * loopback and refuses foreign Host names on loopback; a port in use and missing tables are one
 * line each. The demo prints the URL of its namespace's page, whose stream shows every failover;
 * opened in Chromium, that page shows the leader change.
 */
import { ChildProcess } from 'child_process';
import type { Browser } from 'playwright-core';
import * as fs from 'fs';
import * as http from 'http';
import * as net from 'net';
import * as os from 'os';
import * as path from 'path';
import { ElectionService } from 'gemstone-utils';
import { describeInBrowser, watchedPage } from '../dashboard/support/browser';
import { openEvents } from '../dashboard/support/http';
import { HeldLock, lockTables, runningStatements, waitingForLocks } from '../dashboard/support/locks';
import { waitFor } from '../elector/helpers';
import { describeEachDatabase, uuid } from '../support/databases';
import { finished, runCli, startCli } from './cli';

/** Collects a started process's stdout/stderr and finds the URL it prints. */
function watch(child: ChildProcess) {
  const out = { stdout: '', stderr: '' };
  child.stdout!.on('data', (chunk: Buffer) => (out.stdout += chunk.toString()));
  child.stderr!.on('data', (chunk: Buffer) => (out.stderr += chunk.toString()));
  return out;
}

function hostHeaderStatus(url: string, host: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const request = http.get(`${url}api/overview`, { headers: { host } }, (response) => {
      response.resume();
      resolve(response.statusCode ?? 0);
    });
    request.on('error', reject);
  });
}

describeEachDatabase(
  'gemstone-election dashboard',
  (db) => {
    test('serves the page, JSON and a live stream of the database until SIGTERM, then exits 0', async () => {
      const ds = await db.connect();
      const leader = uuid();
      await new ElectionService(ds).elect(leader, { ns: 'cli-dashboard' });
      const child = startCli(['dashboard', '--url', db.url(), '--port', '0', '--poll-ms', '300']);
      const result = finished(child, 30_000);
      const out = watch(child);
      try {
        await waitFor('the URL', () => /http:\/\/127\.0\.0\.1:\d+\//.test(out.stdout), 15_000, 50);
        const url = /(http:\/\/127\.0\.0\.1:\d+\/)/.exec(out.stdout)![1]!;
        expect(out.stdout).toMatch(/^dashboard of .+: http:\/\/127\.0\.0\.1:\d+\/ \(Ctrl-C to stop\)\n$/);
        expect(await (await fetch(url)).text()).toContain('src="client/main.js"');
        const overview = (await (await fetch(`${url}api/overview`)).json()) as { rows: { ns: string; leaderId: string }[] };
        expect(overview.rows).toEqual([expect.objectContaining({ ns: 'cli-dashboard', leaderId: leader })]);
        const events = await openEvents(`${url}api/namespace/events?ns=cli-dashboard`);
        expect((await events.next((e) => e.event === 'leader')).data).toMatchObject({ leaderId: leader, term: 1 });
        // A page of another site whose name resolves to 127.0.0.1 (DNS rebinding) is refused.
        expect(await hostHeaderStatus(url, 'evil.example')).toBe(403);
        expect(await hostHeaderStatus(url, `localhost:${new URL(url).port}`)).toBe(200);
        child.kill('SIGTERM');
        await events.ended;
      } finally {
        const { code, stderr } = await result;
        expect({ code, stderr }).toEqual({ code: 0, stderr: '' });
      }
    }, 40_000);
  },
  { sharedOnly: true },
);

describeEachDatabase(
  'gemstone-election dashboard: SIGTERM with a read waiting behind a lock',
  (db) => {
    test('exits 0 while the lock is still held, its read cancelled at the database, not orphaned there', async () => {
      const ds = await db.connect();
      await new ElectionService(ds).elect(uuid(), { ns: 'cli-locked' });
      const child = startCli(['dashboard', '--url', db.url(), '--port', '0']);
      const result = finished(child, 60_000);
      const out = watch(child);
      let held: HeldLock | undefined;
      try {
        await waitFor('the URL', () => /http:\/\/127\.0\.0\.1:\d+\//.test(out.stdout), 15_000, 50);
        const url = /(http:\/\/127\.0\.0\.1:\d+\/)/.exec(out.stdout)![1]!;
        // Held until the process has gone (a minute at most: beyond `finished`'s bound).
        held = await lockTables(ds, db.kind, ['gemstone_election_leader'], 60_000);
        const lock = held;
        const request = fetch(`${url}api/overview`).catch((error: unknown) => error);
        await waitFor('the read waiting for the lock', async () => (await waitingForLocks(ds, db.kind)).length >= 1, 15_000, 20);
        child.kill('SIGTERM');
        const { code, stderr } = await result;
        await request;
        expect(lock.released()).toBe(false);
        // The process is gone and left nothing at the server (a backend waiting for a lock does not notice its client left).
        expect(await runningStatements(ds, db.kind, lock)).toEqual([]);
        expect({ code, stderr }).toEqual({ code: 0, stderr: '' });
      } finally {
        await held?.release();
        child.kill('SIGKILL');
      }
    }, 90_000);
  },
  { kinds: ['postgres', 'mariadb'] },
);

describe('gemstone-election dashboard: refusals and warnings', () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'gemstone-cli-dashboard-'));
  afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));
  const file = path.join(dir, 'db.sqlite');
  beforeAll(async () => {
    const result = await runCli(['init', '--url', `sqlite:${file}`]);
    expect(result.code).toBe(0);
  });

  test('off loopback it warns on stderr (anyone who reaches it sees every namespace) and serves', async () => {
    const child = startCli(['dashboard', '--url', `sqlite:${file}`, '--port', '0', '--host', '0.0.0.0']);
    const result = finished(child, 30_000);
    const out = watch(child);
    await waitFor('the URL', () => /http:\/\/0\.0\.0\.0:\d+\//.test(out.stdout), 15_000, 50);
    expect(out.stderr).toMatch(/^gemstone-election: warning: the dashboard listens on 0\.0\.0\.0, not only on loopback: anyone who can reach that address sees every namespace/);
    const port = /0\.0\.0\.0:(\d+)/.exec(out.stdout)![1]!;
    expect((await fetch(`http://127.0.0.1:${port}/api/overview`)).status).toBe(200);
    child.kill('SIGTERM');
    expect((await result).code).toBe(0);
  }, 40_000);

  test('a port in use: one line, exit 1', async () => {
    const blocker = net.createServer();
    await new Promise<void>((resolve) => blocker.listen(0, '127.0.0.1', resolve));
    const { port } = blocker.address() as net.AddressInfo;
    try {
      const result = await runCli(['dashboard', '--url', `sqlite:${file}`, '--port', String(port)]);
      expect(result.code).toBe(1);
      expect(result.stderr).toBe(`gemstone-election: port ${port} on 127.0.0.1 is already in use (choose another with --port, or 0 for any free one)\n`);
    } finally {
      blocker.close();
    }
  });

  test('without the election tables: one line saying how to create them, exit 1', async () => {
    const empty = path.join(dir, 'empty.sqlite');
    fs.writeFileSync(empty, '');
    const result = await runCli(['dashboard', '--url', `sqlite:${empty}`, '--port', '0']);
    expect(result.code).toBe(1);
    expect(result.stderr).toBe(`gemstone-election: the election tables are missing in sqlite:${empty} (run \`gemstone-election init --url sqlite:${empty}\`)\n`);
  });

  test('usage errors', async () => {
    for (const args of [['--port', '70000'], ['--port', 'x'], ['--poll-ms', '0']]) {
      const result = await runCli(['dashboard', '--url', `sqlite:${file}`, ...args]);
      expect({ args, code: result.code }).toEqual({ args, code: 1 });
      expect(result.stderr).toMatch(/error: option .+ argument .+ is invalid/);
    }
  });
});

/** The demo's run, and how long its third term may take: the rest of the run is the reads' margin. */
const DEMO_S = 25;
const TERMS_WAIT_MS = 15_000;

describeEachDatabase(
  'gemstone-election demo --dashboard',
  (db) => {
    test("prints its namespace's page; the page, and a stream that shows the failovers, live while the demo runs; closed with it", async () => {
      // The demo ends by itself (and closes its dashboard) after --duration: long enough that the
      // reads below, each bounded, are over before it (ci7: with 12 s, a loaded machine saw term 3
      // late and the timeline's fetch met the closing server, ECONNRESET).
      const child = startCli(['demo', '--plain', '--chaos', '--chaos-every', '2', '--lease', '1', '--duration', String(DEMO_S), '--ns', 'demo-dash', '--dashboard', '0', '--url', db.url()]);
      const result = finished(child, 60_000);
      const out = watch(child);
      let pageUrl = '';
      try {
        await waitFor('the dashboard URL', () => /dashboard: http:\/\/127\.0\.0\.1:\d+\/#\/ns\/demo-dash\?window=300 /.test(out.stdout.replace(/\n {13}/g, ' ')), 20_000, 50);
        pageUrl = /dashboard: (http:\/\/127\.0\.0\.1:\d+\/)#\/ns\/demo-dash/.exec(out.stdout.replace(/\n {13}/g, ' '))![1]!;
        expect(await (await fetch(pageUrl)).text()).toContain('src="client/main.js"');
        const events = await openEvents(`${pageUrl}api/namespace/events?ns=demo-dash`);
        // Chaos kills or pauses the leader every 2 s: the stream shows new terms.
        await events.next((e) => e.event === 'leader' && ((e.data as { term: number | null }).term ?? 0) >= 3, TERMS_WAIT_MS);
        const leaders = events.events.filter((e) => e.event === 'leader').map((e) => e.data as { leaderId: string | null; term: number | null });
        const terms = leaders.map((l) => l.term);
        expect(terms).toEqual([...terms].sort((x, y) => (x ?? 0) - (y ?? 0)));
        expect(new Set(leaders.filter((l) => l.leaderId !== null).map((l) => l.leaderId)).size).toBeGreaterThanOrEqual(2);
        const timeline = (await (await fetch(`${pageUrl}api/namespace/timeline?ns=demo-dash&window=300`)).json()) as { terms: unknown[] };
        expect(timeline.terms.length).toBeGreaterThanOrEqual(3);
        await events.ended; // the demo ends and closes the dashboard with it
      } finally {
        const { code, stdout, stderr } = await result;
        if (code !== 0) throw new Error(`demo exited with ${code}:\n${stdout}\n${stderr}`);
      }
      await expect(fetch(pageUrl)).rejects.toThrow();
    }, 80_000);
  },
  { kinds: ['postgres', 'sqlite'], sharedOnly: true },
);

/** The demo's printed page URL, its continuation lines joined. */
function printedPageUrl(stdout: string): string | undefined {
  return /dashboard: (http:\/\/127\.0\.0\.1:\d+\/#\/ns\/demo-dash\?window=300) /.exec(stdout.replace(/\n {13}/g, ' '))?.[1];
}

describeInBrowser('gemstone-election demo --dashboard in Chromium', (browser: () => Browser) => {
  describeEachDatabase(
    'the printed URL',
    (db) => {
      test('opened as printed, the page goes live and shows a new leader after a failover (two distinct leaders of its namespace)', async () => {
        // 20 s: a browser that took most of a 12 s demo to open the page (a CI run under extra
        // CPU load) found the demo over, and no failover left to show.
        const child = startCli(['demo', '--plain', '--chaos', '--chaos-every', '2', '--lease', '1', '--duration', '20', '--ns', 'demo-dash', '--dashboard', '0', '--url', db.url()]);
        const result = finished(child, 60_000);
        const out = watch(child);
        const context = await browser().newContext();
        try {
          await waitFor('the dashboard URL', () => printedPageUrl(out.stdout) !== undefined, 20_000, 50);
          const { page, incidents } = await watchedPage(context);
          await page.goto(printedPageUrl(out.stdout)!);
          await page.locator('#live[data-state="live"]').waitFor({ timeout: 10_000 });
          // Every leader id the page shows, sampled each frame, until it showed two.
          await page.waitForFunction(
            () => {
              const globals = globalThis as unknown as { __leaders?: string[]; document: { querySelector(selector: string): { textContent: string | null } | null } };
              const leaders = (globals.__leaders ??= []);
              const shown = globals.document.querySelector('code[data-field="leader-id"]')?.textContent;
              if (shown && !leaders.includes(shown)) leaders.push(shown);
              return leaders.length >= 2;
            },
            undefined,
            { polling: 'raf', timeout: 20_000 },
          );
          const shown = await page.evaluate(() => (globalThis as unknown as { __leaders: string[] }).__leaders);
          // They are the demo's leaders: terms of its namespace.
          const base = new URL(page.url());
          const timeline = (await (await fetch(`${base.origin}/api/namespace/timeline?ns=demo-dash&window=300`)).json()) as { terms: { leaderId: string }[] };
          const leaders = new Set(timeline.terms.map((term) => term.leaderId));
          for (const id of shown) expect(leaders.has(id)).toBe(true);
          expect(await incidents()).toEqual({ pwned: undefined, violations: [], errors: [] });
        } finally {
          await context.close();
          const { code, stdout, stderr } = await result;
          if (code !== 0) throw new Error(`demo exited with ${code}:\n${stdout}\n${stderr}`);
        }
      }, 70_000);
    },
    { kinds: ['postgres', 'sqlite'], sharedOnly: true },
  );
});
