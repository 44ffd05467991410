/**
 * The chaos harness with database restarts, against a private PostgreSQL cluster and a private
 * MariaDB server this file starts on loopback ports of their own (never the shared services):
 * leaders are killed and the server is restarted under the electors while they do fenced writes.
 */
import { execFile } from 'child_process';
import * as fs from 'fs';
import * as os from 'os';
import * as path from 'path';
import { promisify } from 'util';

const run = promisify(execFile);
const ROOT = path.join(__dirname, '..', '..');
// eslint-disable-next-line @typescript-eslint/no-var-requires
const { startPostgres, startMariadb, serverUptime } = require(path.join(ROOT, 'tools', 'private-db.js')) as {
  startPostgres: () => Promise<PrivateServer>;
  startMariadb: () => Promise<PrivateServer>;
  serverUptime: (url: string) => Promise<{ now: number; uptimeMs: number }>;
};

interface PrivateServer {
  url: string;
  dir: string;
  restartCommand: string;
  stop: () => void;
}

interface Summary {
  ok: boolean;
  checks: Array<{ id: string; name: string; ok: boolean; detail?: string; violations: string[] }>;
  stats: {
    grants: number;
    writes: number;
    faults: number;
    faultCounts: Record<string, number>;
    fenced: number;
    stallsInFenceCommitted: number;
    stallsBeforeFenceFenced: number;
    linearizability?: { ops: number };
  };
  faults: Array<{ type: string; start: number; end: number }>;
  outDir: string;
}

const DURATION_S = 15;

describe.each([
  ['postgres', startPostgres],
  ['mariadb', startMariadb],
] as const)('chaos with database restarts [%s, private server]', (_kind, start) => {
  let server: PrivateServer | undefined;
  beforeAll(async () => {
    server = await start();
  }, 120_000);
  afterAll(() => server?.stop());

  test(
    'kills and server restarts: zero stale writes, ordered terms, and work resumes after each restart',
    async () => {
      const before = await serverUptime(server!.url);
      const beforeAt = performance.now();
      const out = fs.mkdtempSync(path.join(os.tmpdir(), 'gemstone-chaos-restart-'));
      const args = ['--url', server!.url, '--duration', String(DURATION_S), '--faults', 'kill,db-restart,stall-in-fence,stall-before-fence', '--db-restart', '--min-faults', '4'];
      const { stdout } = await run(process.execPath, [path.join(ROOT, 'tools', 'chaos', 'run.js'), ...args, '--out', out, '--json'], {
        cwd: ROOT,
        maxBuffer: 16 * 1024 * 1024,
        timeout: (DURATION_S + 90) * 1000, // a hung run fails here, with its output, not as a jest timeout
        env: { ...process.env, CHAOS_DB_RESTART_CMD: server!.restartCommand },
      }).catch((error: { stdout?: string; stderr?: string; code?: number }) => {
        if (error.code === 1 && error.stdout) return { stdout: error.stdout };
        throw new Error(`chaos run failed (exit ${error.code}): ${error.stderr ?? ''}`);
      });
      const summary = JSON.parse(stdout) as Summary;
      const failed = summary.checks.filter((c) => !c.ok).map((c) => `(${c.id}) ${c.name}: ${c.violations.join('; ')} [kept: ${out}]`);
      expect(failed).toEqual([]);
      expect(summary.ok).toBe(true);
      // The operations across the restarts were checked for a linearization (and passed: summary.ok).
      expect(summary.checks.map((c) => c.id)).toContain('lin');
      expect(summary.stats.linearizability?.ops).toBeGreaterThan(20);
      console.log(`chaos with restarts [${_kind}]: ${summary.checks.find((c) => c.id === 'lin')?.detail}`);
      // The server really went down and came back during the run: it has been up for less than
      // the time since the first read, by a second at least (MariaDB counts whole seconds; the
      // restart comes seconds into the run, after a kill and two stalls).
      const after = await serverUptime(server!.url);
      const sinceBefore = performance.now() - beforeAt;
      if (after.uptimeMs + 1000 >= sinceBefore) {
        const restarts = summary.faults.filter((f) => f.type === 'db-restart');
        const log = ['server.log', 'server.out'].map((name) => path.join(server!.dir, name)).filter((file) => fs.existsSync(file));
        const tail = log.map((file) => `${path.basename(file)}:\n${fs.readFileSync(file, 'utf8').split('\n').slice(-40).join('\n')}`).join('\n');
        throw new Error(
          `the server was not restarted during the run: up ${after.uptimeMs} ms after the run, ${Math.round(sinceBefore)} ms after a read that found it up ${before.uptimeMs} ms` +
            ` (server clock ${before.now} then ${after.now}); restarts the run recorded: ${JSON.stringify(restarts)}\n${tail}`,
        );
      }
      // The schedule opens with a kill of the leader, stalls the leader inside its fence and before
      // it, then restarts the server (the first bag leaves out the types already run).
      expect(summary.stats.faultCounts['db-restart']).toBeGreaterThanOrEqual(1);
      expect(summary.stats.faultCounts.kill).toBeGreaterThanOrEqual(1);
      const { stallsInFenceCommitted, stallsBeforeFenceFenced, fenced } = summary.stats;
      console.log(`chaos with restarts [${_kind}]: ${stallsInFenceCommitted} in-fence stalls committed, ${stallsBeforeFenceFenced} before-fence stalls fenced off, ${fenced} writes fenced off`);
      expect(stallsInFenceCommitted).toBeGreaterThanOrEqual(1);
      expect(stallsBeforeFenceFenced).toBeGreaterThanOrEqual(1);
      expect(fenced).toBeGreaterThanOrEqual(1);
      expect(summary.stats.grants).toBeGreaterThanOrEqual(2);
      // Leadership and fenced work came back after the last restart.
      const ledger = JSON.parse(fs.readFileSync(path.join(out, 'ledger.json'), 'utf8')) as Array<{ kind: string; at: number }>;
      const lastRestart = Math.max(...summary.faults.filter((f) => f.type === 'db-restart').map((f) => f.end));
      expect(ledger.filter((r) => r.kind === 'write' && Number(r.at) > lastRestart).length).toBeGreaterThan(0);
      fs.rmSync(out, { recursive: true, force: true });
    },
    DURATION_S * 1000 + 150_000,
  );
});
