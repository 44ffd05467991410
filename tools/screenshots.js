#!/usr/bin/env node
/**
 * Regenerates the dashboard's screenshots in docs/images/ (used by docs/dashboard.md and the
 * README): `npm run docs:screenshots`. It plays about a minute of real elections on a scratch
 * SQLite file (or `--url`): a balanced group of shards that a third member joins, electors that
 * hand over by priority, a leader that crashes and expires, a flapping namespace, a vacated one
 * and a lease about to run out — then serves the dashboard on it and photographs the overview
 * (table and timeline) and one namespace in Debian's Chromium (`GEMSTONE_CHROMIUM` to use
 * another binary). Needs `npm run build` first (the npm script does it).
 */
'use strict';
const fs = require('fs');
const os = require('os');
const path = require('path');
const { randomUUID } = require('crypto');

const ROOT = path.join(__dirname, '..');
require(path.join(ROOT, 'node_modules', 'reflect-metadata'));
const { initDb, ElectionService, LeaderElector, LeaderElectorGroup } = require(path.join(ROOT, 'dist', 'src', 'index.js'));
const { serveDashboard } = require(path.join(ROOT, 'dist', 'src', 'dashboard', 'index.js'));
const { chromium } = require('playwright-core');

const OUT = path.join(ROOT, 'docs', 'images');
const CHROMIUM = process.env.GEMSTONE_CHROMIUM || '/usr/bin/chromium';
const ARGS = ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'];
/** How long the scenario plays before the photographs, in seconds. */
const PLAY_SECONDS = 62;

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));
const argUrl = process.argv.indexOf('--url');

function host(name, pid, version) {
  return { host: name, pid, version, region: 'eu-west-1' };
}

async function main() {
  if (!fs.existsSync(CHROMIUM)) throw new Error(`Chromium not found at ${CHROMIUM}: apt-get install chromium, or set GEMSTONE_CHROMIUM`);
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'gemstone-screenshots-'));
  const url = argUrl > 0 ? process.argv[argUrl + 1] : `sqlite:${path.join(dir, 'screenshots.sqlite')}`;
  const ds = await initDb(url);
  const stops = [];
  const at = (seconds, action) => sleep(seconds * 1000).then(action);
  const quiet = (emitter) => (emitter.on('error', () => undefined), emitter);

  // A group of 24 shards shared by two workers, balanced; a third joins at 30 s and takes its share.
  const shards = Array.from({ length: 24 }, (_, i) => `billing-shard-${String(i).padStart(2, '0')}`);
  const member = (name, pid) => quiet(new LeaderElectorGroup({ dataSource: ds, namespaces: shards, balance: true, expireSeconds: 6, intervalMs: 1000, metadata: host(name, pid, '4.2.0') }));
  const groups = [member('billing-7f9c4', 4101), member('billing-2b81d', 4102)];
  for (const g of groups) await g.start();
  stops.push(() => Promise.all(groups.map((g) => g.stop())));

  // A scheduler on three hosts; a fourth with a higher priority arrives at 20 s (hand-over).
  const electors = ['sched-a1', 'sched-b2', 'sched-c3'].map((name, i) =>
    quiet(new LeaderElector({ dataSource: ds, ns: 'scheduler', expireSeconds: 6, intervalMs: 1000, metadata: host(name, 5100 + i, '2.9.1') })),
  );
  for (const e of electors) await e.start();
  stops.push(() => Promise.all(electors.map((e) => e.stop())));

  const service = new ElectionService(ds, { expireSeconds: 4 });
  // `cron`: its leader stops renewing at 28 s (a crash): the lease expires, the standby takes over.
  const [crashing, standby] = [randomUUID(), randomUUID()];
  let crashed = false;
  const cron = setInterval(() => {
    if (!crashed) void service.elect(crashing, { ns: 'cron', metadata: host('cron-main', 6001, '1.0.3') });
    void service.elect(standby, { ns: 'cron', metadata: host('cron-standby', 6002, '1.0.3') });
  }, 1000);
  stops.push(() => clearInterval(cron));

  // `reports` flaps: its leader resigns every 7 s and the other one takes over.
  const flappers = [randomUUID(), randomUUID()];
  let turn = 0;
  const reportsLeader = () => service.elect(flappers[turn % 2], { ns: 'reports', metadata: host(`reports-${turn % 2}`, 7000 + (turn % 2), '0.9.0') });
  const renew = setInterval(() => void reportsLeader(), 1000);
  const flap = setInterval(() => {
    const leaving = flappers[turn++ % 2];
    void service.resign(leaving, { ns: 'reports' }).then(reportsLeader);
  }, 7000);
  stops.push(() => (clearInterval(flap), clearInterval(renew)));

  const mailer = randomUUID();
  const lateGroup = member('billing-91aa0', 4103);
  const long = new ElectionService(ds, { expireSeconds: 12 });
  await Promise.all([
    at(5, () => service.elect(mailer, { ns: 'mailer', metadata: host('mail-1', 8001, '3.1.0') })),
    at(20, async () => {
      const preferred = quiet(new LeaderElector({ dataSource: ds, ns: 'scheduler', expireSeconds: 6, intervalMs: 1000, priority: 10, metadata: host('sched-d4', 5104, '3.0.0') }));
      electors.push(preferred);
      await preferred.start();
    }),
    at(28, () => (crashed = true)),
    at(30, async () => {
      groups.push(lateGroup);
      await lateGroup.start();
    }),
    at(44, () => service.resign(mailer, { ns: 'mailer' })),
    at(PLAY_SECONDS - 8, () => long.elect(randomUUID(), { ns: 'ingest', metadata: host('ingest-3', 9003, '5.0.0') })),
    sleep(PLAY_SECONDS * 1000),
  ]);

  const server = await serveDashboard({ dataSource: ds, port: 0, pollMs: 500 });
  const browser = await chromium.launch({ executablePath: CHROMIUM, args: ARGS });
  try {
    const page = await browser.newPage({ viewport: { width: 1280, height: 800 } });
    const shoot = async (route, ready, file, fullPage = false) => {
      await page.goto(`${server.url}${route}`);
      await page.locator(ready).first().waitFor({ timeout: 15_000 });
      await page.locator('#live[data-state="live"]').waitFor({ timeout: 15_000 });
      await sleep(1500);
      fs.mkdirSync(OUT, { recursive: true });
      await page.screenshot({ path: path.join(OUT, file), fullPage });
      process.stdout.write(`docs/images/${file}\n`);
    };
    await shoot('#/?sort=health', 'table[data-view="overview-table"] tbody tr', 'dashboard-overview.png');
    await shoot('#/?mode=timeline&window=60', '[data-view="overview-timeline"] .seg', 'dashboard-timeline.png');
    await shoot('#/ns/scheduler?window=60', 'table[data-view="terms"] tbody tr', 'dashboard-namespace.png', true);
  } finally {
    await browser.close();
    await server.close();
    for (const stop of stops.reverse()) await stop();
    await ds.destroy();
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

main().then(
  () => process.exit(0),
  (error) => {
    console.error(error);
    process.exit(1);
  },
);
