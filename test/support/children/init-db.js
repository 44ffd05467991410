// A process that calls initDb on a database at the moment the parent says so, then elects.
// Usage (from the repo root): node -r ./test/support/typeorm-line.js test/support/children/init-db.js <url> <ns>
// Protocol: prints "ready" once loaded, waits for a line on stdin, then prints one JSON line:
// {"ok":true,"leader":"<uuid>","self":"<uuid>"} or {"ok":false,"error":"…","code":"…"}.
'use strict';
const { randomUUID } = require('crypto');
const { initDb, ElectionService } = require('gemstone-utils');

const [url, ns] = process.argv.slice(2);

async function run() {
  const self = randomUUID();
  let dataSource;
  try {
    dataSource = await initDb(url);
    const leader = await new ElectionService(dataSource).elect(self, { ns });
    return { ok: true, self, leader };
  } catch (error) {
    return { ok: false, error: String(error && error.stack), code: error && (error.code || (error.driverError && error.driverError.code)) };
  } finally {
    if (dataSource && dataSource.isInitialized) await dataSource.destroy().catch(() => undefined);
  }
}

process.stdout.write('ready\n');
process.stdin.once('data', () => {
  run().then((result) => {
    process.stdout.write(`${JSON.stringify(result)}\n`);
    process.exitCode = result.ok ? 0 : 1;
    process.stdin.destroy();
  });
});
