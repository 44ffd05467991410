// A process that watches a namespace, stops watching (by `break` or by aborting the signal while
// the loop waits), destroys its DataSource and then must exit BY ITSELF: a timer or connection the
// watch leaked would keep it alive (the parent's timeout then fails the test).
// Usage (from the repo root): node -r ./test/support/typeorm-line.js test/support/children/watch-exits.js <url> <ns> <break|abort>
// Prints one JSON line: {"ok":true,"changes":[[leaderId, term], …]} or {"ok":false,"error":"…"}.
'use strict';
const { randomUUID } = require('crypto');
const { initDb, ElectionService, watch } = require('gemstone-utils');

const [url, ns, mode] = process.argv.slice(2);

async function run() {
  const dataSource = await initDb(url);
  try {
    const leader = randomUUID();
    await new ElectionService(dataSource).elect(leader, { ns });
    const controller = new AbortController();
    const changes = [];
    for await (const change of watch({ ns, dataSource, pollMs: 50, signal: controller.signal })) {
      changes.push([change.leaderId === leader ? 'leader' : change.leaderId, change.term]);
      if (mode === 'break') break;
      // abort: the loop is waiting for the next change when the signal aborts.
      setTimeout(() => controller.abort(), 200);
    }
    return { ok: true, changes };
  } finally {
    await dataSource.destroy();
  }
}

run().then(
  (result) => process.stdout.write(`${JSON.stringify(result)}\n`),
  (error) => {
    process.stdout.write(`${JSON.stringify({ ok: false, error: String(error && error.stack) })}\n`);
    process.exitCode = 1;
  },
);
