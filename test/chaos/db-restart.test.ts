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
const { startPostgres, startMariadb, serverStartedAt } = require(path.join(ROOT, 'tools', 'private-db.js')) as {
  startPostgres: () => Promise<PrivateServer>;
  startMariadb: () => Promise<PrivateServer>;
  serverStartedAt: (url: string) => Promise<number>;
};

interface PrivateServer {
  url: string;
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
      const bootedAt = await serverStartedAt(server!.url);
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
      // The server really went down and came back during the run.
      expect(await serverStartedAt(server!.url)).toBeGreaterThan(bootedAt + 1000);
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
