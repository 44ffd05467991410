/**
 * A short chaos run per database (tools/chaos): five workers with a 2 s lease do fenced writes
 * while faults are injected; the checker must pass. And the same harness with fencing sabotaged
 * must fail — so a pass means something.
 */
import { execFile } from 'child_process';
import * as fs from 'fs';
import * as os from 'os';
import * as path from 'path';
import { promisify } from 'util';
import { describeEachDatabase } from '../support/databases';

const run = promisify(execFile);
const ROOT = path.join(__dirname, '..', '..');
/** Per database; the three together stay within the CI budget of about two minutes. */
const DURATION_S = Number(process.env.GEMSTONE_CHAOS_SECONDS || 20);

interface Summary {
  ok: boolean;
  checks: Array<{ id: string; name: string; ok: boolean; detail: string; violations: string[] }>;
  stats: { grants: number; writes: number; faults: number; fenced: number; stalls: number };
  outDir: string;
}

/** Runs the harness; its output directory is removed when the run passed, kept for a look when not. */
async function chaos(args: string[]): Promise<Summary> {
  const out = fs.mkdtempSync(path.join(os.tmpdir(), 'gemstone-chaos-test-'));
  let keep = true;
  try {
    const { stdout } = await run(process.execPath, [path.join(ROOT, 'tools', 'chaos', 'run.js'), ...args, '--out', out, '--json'], {
      cwd: ROOT,
      maxBuffer: 16 * 1024 * 1024,
    }).catch((error: { stdout?: string; stderr?: string; code?: number }) => {
      // Exit code 1 is a failed check: the summary is still on stdout. Anything else is a broken run.
      if (error.code === 1 && error.stdout) return { stdout: error.stdout };
      throw new Error(`chaos run failed (exit ${error.code}): ${error.stderr ?? ''}`);
    });
    const summary = JSON.parse(stdout) as Summary;
    keep = !summary.ok;
    return summary;
  } finally {
    if (!keep) fs.rmSync(out, { recursive: true, force: true });
  }
}

const failures = (summary: Summary) =>
  summary.checks.filter((c) => !c.ok).map((c) => `(${c.id}) ${c.name}: ${c.violations.join('; ')} [kept: ${summary.outDir}]`);

describeEachDatabase(
  'chaos',
  (db) => {
    test(
      `${DURATION_S} s of faults: zero stale writes, ordered terms, no late actions, bounded leaderless time`,
      async () => {
        const summary = await chaos(['--url', db.url(), '--duration', String(DURATION_S)]);
        expect(failures(summary)).toEqual([]);
        expect(summary.ok).toBe(true);
        // The run was not vacuous: faults hit, leadership changed hands, work was committed.
        expect(summary.stats.faults).toBeGreaterThanOrEqual(3);
        expect(summary.stats.grants).toBeGreaterThanOrEqual(2);
        expect(summary.stats.writes).toBeGreaterThan(10);
      },
      DURATION_S * 1000 + 60_000,
    );
  },
  { kinds: ['postgres', 'mariadb', 'sqlite'], sharedOnly: true },
);

describe('chaos checker has teeth', () => {
  test(
    'with assertLeader skipped, a stalled leader writes under a stale term and the run fails',
    async () => {
      const summary = await chaos(['--db', 'sqlite', '--duration', '10', '--faults', 'stall-before-fence', '--unfenced']);
      fs.rmSync(summary.outDir, { recursive: true, force: true }); // failing is this run's purpose
      expect(summary.stats.stalls).toBeGreaterThanOrEqual(1);
      expect(summary.ok).toBe(false);
      const stale = summary.checks.find((c) => c.id === 'a')!;
      expect(stale.ok).toBe(false);
      expect(stale.violations[0]).toMatch(/wrote seq \d+ under term \d+ while the leader row held term \d+/);
    },
    70_000,
  );
});
