// A PostgreSQL session ended by the server in the very packet that reports it ready — what a
// demoting Patroni primary or `pg_terminate_backend` does to a session that just connected —
// must fail the transaction that took the connection, not crash the process. Run in a process
// of its own so that an unhandled 'error' event is seen as Node sees it (the process exits 1).
//
// A proxy in front of the server forwards every session; an armed one gets, in the same write as
// the server's first ReadyForQuery, an ErrorResponse FATAL 57P01, and is closed. The DataSource
// (through the proxy, idle connections dropped after 1 ms so that each transaction connects anew)
// is used by the library first, as an application's would be, then runs transactions on armed
// sessions, then on plain ones.
//
// Usage (from the repo root): node -r ./test/support/typeorm-line.js test/support/children/pool-error.js '<json>'
//   json: { url: a PostgreSQL URL, armed: how many sessions to end (per round), reinitialize: two rounds,
//           the DataSource destroyed and initialized again between them }
// Prints one JSON line: { injected, failed, errors, after }.
'use strict';
const net = require('net');
const { initDb, ElectionService } = require('gemstone-utils');

const config = JSON.parse(process.argv[2]);
const target = new URL(config.url);

/** PostgreSQL's ErrorResponse for a session ended by an administrator (as pg_terminate_backend sends it). */
function terminated() {
  const field = (code, value) => Buffer.concat([Buffer.from(code), Buffer.from(`${value}\0`)]);
  const body = Buffer.concat([
    field('S', 'FATAL'),
    field('V', 'FATAL'),
    field('C', '57P01'),
    field('M', 'terminating connection due to administrator command'),
    Buffer.from('\0'),
  ]);
  const header = Buffer.alloc(5);
  header.write('E', 0);
  header.writeInt32BE(body.length + 4, 1);
  return Buffer.concat([header, body]);
}

let armed = 0;
let injected = 0;
const proxy = net.createServer((client) => {
  const server = net.connect(Number(target.port || 5432), target.hostname);
  const arm = armed > 0;
  if (arm) armed--;
  let pending = Buffer.alloc(0);
  let done = false;
  client.on('error', () => server.destroy());
  server.on('error', () => client.destroy());
  client.on('data', (chunk) => server.write(chunk));
  server.on('data', (chunk) => {
    if (!arm || done) return void client.write(chunk);
    // Messages are a type byte and a 4-byte length (which counts itself): find the first 'Z'.
    pending = Buffer.concat([pending, chunk]);
    for (let at = 0; at + 5 <= pending.length; ) {
      const end = at + 1 + pending.readInt32BE(at + 1);
      if (end > pending.length) break;
      if (pending[at] === 0x5a) {
        done = true;
        injected++;
        client.end(Buffer.concat([pending.subarray(0, end), terminated()]));
        server.destroy();
        return;
      }
      at = end;
    }
  });
  client.on('close', () => server.destroy());
  server.on('close', () => client.destroy());
});

async function main() {
  await new Promise((resolve) => proxy.listen(0, '127.0.0.1', resolve));
  const via = new URL(config.url);
  via.hostname = '127.0.0.1';
  via.port = String(proxy.address().port);
  const dataSource = await initDb({ type: 'postgres', url: via.toString(), extra: { max: 2, idleTimeoutMillis: 1 } });
  const service = new ElectionService(dataSource);
  let failed = 0;
  let after = 0;
  const errors = [];
  // With `reinitialize`, the same DataSource is destroyed and initialized again between two
  // rounds, as an application's reconnect logic may do: its new pool must be adopted too.
  for (let round = 0; round < (config.reinitialize ? 2 : 1); round++) {
    if (round > 0) {
      await dataSource.destroy();
      await dataSource.initialize();
    }
    // The application's DataSource, used by the library (a first call adopts it).
    await service.getLeader({ ns: 'pool-error' });
    await new Promise((resolve) => setTimeout(resolve, 50)); // the idle connection is dropped
    armed = config.armed;
    for (let i = 0; i < config.armed; i++) {
      await dataSource.transaction((manager) => manager.query('SELECT 1')).catch((error) => {
        failed++;
        errors.push(String(error && error.message));
      });
      await new Promise((resolve) => setTimeout(resolve, 5));
    }
    armed = 0;
    for (let i = 0; i < 3; i++) {
      await dataSource.transaction((manager) => manager.query('SELECT 1'));
      after++;
    }
  }
  await dataSource.destroy();
  proxy.close();
  process.stdout.write(`${JSON.stringify({ injected, failed, errors: [...new Set(errors)], after })}\n`);
}

main().catch((error) => {
  process.stderr.write(`${error && error.stack}\n`);
  process.exit(2);
});
