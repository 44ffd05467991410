/**
 * Group mode of the chaos harness (tools/chaos `--group`): four workers each run a
 * LeaderElectorGroup over the same eight namespaces and make a fenced write per namespace they
 * lead, under that lease's term, and run an every-second schedule in the first namespace (the one
 * the faults aim at), while faults are injected. The checker (per namespace — the loops' callbacks
 * and leader work per leadership among them — plus (m):
 * no term of any namespace held by two workers) must pass, with zero stale writes in every
 * namespace. Nothing asserted depends on the fault schedule: the first fault always costs the
 * leader of the first namespace its lease, so that namespace is granted at least twice.
 */
import { execFile } from 'child_process';
import * as fs from 'fs';
import * as os from 'os';
import * as path from 'path';
import { promisify } from 'util';
import { describeEachDatabase } from '../support/databases';

const run = promisify(execFile);
const ROOT = path.join(__dirname, '..', '..');
const DURATION_S = Number(process.env.GEMSTONE_CHAOS_GROUP_SECONDS || 15);
const NAMESPACES = 8;

interface Summary {
  ok: boolean;
  group: number | null;
  checks: Array<{ id: string; name: string; ok: boolean; detail: string; violations: string[] }>;
  stats: {
    grants: number;
    writes: number;
    faults: number;
    staleWritesByNamespace: Record<string, number>;
    historyRows?: number;
    fenced: number;
    stallsInFenceCommitted: number;
    stallsBeforeFenceFenced: number;
    judgedActions: number;
    claims?: number;
    doneSlots?: number;
    jobRows?: number;
    loopLeaderships?: number;
    workItems?: number;
    linearizability?: { verdict: string; ops: number; namespaces: number; states: number; ms: number };
  };
  outDir: string;
}

/** Runs the harness; its output directory is removed when the run passed, kept for a look when not. */
async function chaos(args: string[]): Promise<Summary> {
  const out = fs.mkdtempSync(path.join(os.tmpdir(), 'gemstone-chaos-group-test-'));
  let keep = true;
  try {
    const { stdout } = await run(process.execPath, [path.join(ROOT, 'tools', 'chaos', 'run.js'), ...args, '--out', out, '--json'], {
      cwd: ROOT,
      maxBuffer: 16 * 1024 * 1024,
    }).catch((error: { stdout?: string; stderr?: string; code?: number }) => {
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
  'chaos, group mode',
  (db) => {
    test(
      `${DURATION_S} s of faults on 4 workers each leading some of ${NAMESPACES} namespaces with a LeaderElectorGroup: zero stale writes per namespace, no term held twice`,
      async () => {
        const summary = await chaos(['--url', db.url(), '--duration', String(DURATION_S), '--min-faults', '3', '--workers', '4', '--group', String(NAMESPACES)]);
        expect(failures(summary)).toEqual([]);
        expect(summary.ok).toBe(true);
        expect(summary.group).toBe(NAMESPACES);
        expect(summary.checks.map((c) => c.id)).toEqual(expect.arrayContaining(['a', 'b', 'h', 'l', 'm', 'n', 'o', 'r', 'lin']));
        expect(Object.keys(summary.stats.staleWritesByNamespace)).toHaveLength(NAMESPACES);
        expect(Object.values(summary.stats.staleWritesByNamespace).every((n) => n === 0)).toBe(true);
        // Not vacuous: every namespace was granted, the first one twice (the opening fault), work was committed.
        expect(summary.stats.faults).toBeGreaterThanOrEqual(3);
        expect(summary.stats.grants).toBeGreaterThanOrEqual(NAMESPACES + 1);
        expect(summary.stats.historyRows).toBe(summary.stats.grants);
        expect(summary.stats.writes).toBeGreaterThan(NAMESPACES);
        // The schedule's guaranteed stalls of the first namespace's leader: one inside the fence
        // (committed), one before it (fenced off).
        const { stallsInFenceCommitted, stallsBeforeFenceFenced, fenced, judgedActions } = summary.stats;
        console.log(`chaos group [${db.name}]: ${stallsInFenceCommitted} in-fence stalls committed, ${stallsBeforeFenceFenced} before-fence stalls fenced off, ${fenced} writes fenced off, ${judgedActions} actions judged against a later term`);
        expect(stallsInFenceCommitted).toBeGreaterThanOrEqual(1);
        expect(stallsBeforeFenceFenced).toBeGreaterThanOrEqual(1);
        expect(fenced).toBeGreaterThanOrEqual(1);
        expect(judgedActions).toBeGreaterThanOrEqual(1);
        // The every-second schedule of the first namespace ran (13 to 16 claims in 15 s runs), each done slot with one job row.
        console.log(`chaos group [${db.name}]: ${summary.checks.find((c) => c.id === 'r')?.detail}`);
        expect(summary.stats.claims).toBeGreaterThanOrEqual(3);
        expect(summary.stats.jobRows).toBe(summary.stats.doneSlots);
        // Every namespace's leaderships were recorded with their callbacks, and leader work judged against them ((n), (o)).
        console.log(`chaos group [${db.name}]: ${summary.checks.find((c) => c.id === 'n')?.detail}; ${summary.checks.find((c) => c.id === 'o')?.detail}`);
        expect(summary.stats.loopLeaderships).toBeGreaterThanOrEqual(NAMESPACES + 1);
        expect(summary.stats.workItems).toBeGreaterThan(NAMESPACES);
        // Every namespace's operations (the schedule's claims included) were checked for a linearization.
        expect(summary.stats.linearizability?.namespaces).toBe(NAMESPACES);
        console.log(`chaos group [${db.name}], group of ${NAMESPACES}: ${summary.checks.find((c) => c.id === 'lin')?.detail}`);
      },
      DURATION_S * 1000 + 90_000,
    );
  },
  { kinds: ['postgres', 'mariadb', 'sqlite'], sharedOnly: true },
);
