/**
 * Many schedules on one namespace: each listens to the lease's signal, and Node warns of a leak
 * (`MaxListenersExceededWarning`) at the eleventh listener of an AbortSignal unless its limit is
 * lifted. Run in a child process on the built package: Jest's sandbox does not see the process's
 * warnings.
 */
import { execFile } from 'child_process';
import * as path from 'path';

const ROOT = path.join(__dirname, '..', '..');
const TYPEORM_LINE = path.join(ROOT, 'test', 'support', 'typeorm-line.js');

const SCRIPT = `
const { getEventListeners } = require('events');
const { initDb, LeaderElector } = require(${JSON.stringify(path.join(ROOT, 'dist', 'src', 'index.js'))});
const warnings = [];
process.on('warning', (warning) => warnings.push(warning.name));
(async () => {
  const ds = await initDb('sqlite::memory:');
  const elector = new LeaderElector({ dataSource: ds, ns: 'many-schedules', expireSeconds: 3, intervalMs: 200, listen: false });
  // Once a year, 1 January at midnight: none comes due while this runs.
  for (let i = 0; i < 12; i++) elector.schedule({ name: 'new-year-' + i, cron: '0 0 1 1 *' }, () => undefined);
  await elector.start();
  const listeners = getEventListeners(elector.lease.signal, 'abort').length;
  await elector.stop();
  await ds.destroy();
  // Warnings are emitted on the next tick of the process.
  await new Promise((resolve) => setImmediate(resolve));
  process.stdout.write(JSON.stringify({ leader: listeners > 0, listeners, warnings }) + '\\n');
})().catch((error) => {
  process.stderr.write(String(error && error.stack) + '\\n');
  process.exit(1);
});
`;

test('twelve schedules on one namespace: no listener-leak warning', async () => {
  const stdout = await new Promise<string>((resolve, reject) =>
    execFile(process.execPath, ['-r', TYPEORM_LINE, '-e', SCRIPT], { cwd: ROOT, timeout: 60_000 }, (error, out, err) =>
      error ? reject(new Error(`${error.message}\n${err}`)) : resolve(out),
    ),
  );
  const report = JSON.parse(stdout.trim().split('\n').pop()!) as { listeners: number; warnings: string[] };
  // The precondition: more listeners on the lease's signal than Node's default limit of 10.
  expect(report.listeners).toBeGreaterThan(10);
  // (The embedded database's own GemstoneWarning is expected.)
  expect(report.warnings.filter((name) => name !== 'GemstoneWarning')).toEqual([]);
});
