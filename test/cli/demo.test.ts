/**
 * `gemstone-election demo --chaos` as a real process tree, run through a failover: the summary must
 * show failovers and zero stale writes, and the ledger table must agree when checked independently.
 */
import * as fs from 'fs';
import * as os from 'os';
import * as path from 'path';
import type { DataSource } from 'typeorm';
import { initDb } from 'gemstone-utils';
import { describeEachDatabase, query, uuid } from '../support/databases';
import { waitFor } from '../elector/helpers';
import { instantMs } from '../support/rows';
import { CliResult, finished, runCli, ROOT, startCli, workerPids } from './cli';

// The demo's ledger check, from the build (it is not part of the package's public API).
const { verifyLedger } = require(path.join(ROOT, 'dist', 'src', 'cli', 'demo', 'ledger.js')) as typeof import('../../src/cli/demo/ledger');

/** A duration the test never waits for: it ends the demo once a failover happened (runThroughFailover). */
const DEMO_ARGS = ['demo', '--keep', '--chaos', '--duration', '600', '--chaos-every', '2.5', '--lease', '2'];

/**
 * Runs the demo until a chaos SIGKILL of the leader was followed by another worker's election, a
 * ledger entry under that worker's term and the killed worker's replacement, then sends Ctrl-C: the
 * workers hand over, the summary is printed and the exit code is 130. A fixed 11 s run left a busy
 * machine without a failover (CI beside busy loops: 0 kills), so the precondition is now reached by
 * construction.
 */
async function runThroughFailover(args: readonly string[], options: { cwd?: string } = {}): Promise<CliResult> {
  const child = startCli(args, options);
  const done = finished(child, 240_000);
  let stdout = '';
  child.stdout!.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
  const failedOver = (): boolean => {
    const kill = /chaos: SIGKILL (worker-[\d.]+) \(leader/.exec(stdout);
    if (!kill) return false;
    const after = stdout.slice(kill.index);
    if (!after.includes(`${kill[1]} restarted as `)) return false;
    for (const elected of after.matchAll(/(worker-[\d.]+) became leader \(term (\d+)\)/g)) {
      if (elected[1] === kill[1]) continue;
      const wrote = new RegExp(`${elected[1]} committed ledger entry #\\d+ \\(term ${elected[2]}\\)`);
      if (wrote.test(after.slice(elected.index))) return true;
    }
    return false;
  };
  await waitFor('a chaos SIGKILL of the leader, then another worker elected and writing', failedOver, 180_000, 50).catch((error: Error) => {
    child.kill('SIGKILL');
    throw new Error(`${error.message}; the demo's output:\n${stdout.slice(-4000)}`);
  });
  child.kill('SIGINT');
  return done;
}
const NS = 'demo';

interface Summary {
  runPrefix: string;
  elections: number;
  failovers: number;
  killed: number;
  paused: number;
  ledgerWrites: number;
  refused: number;
  stale: number;
}

function field(stdout: string, label: string): string {
  const match = new RegExp(`^  ${label}:\\s+(.+)$`, 'm').exec(stdout);
  if (!match) throw new Error(`summary line "${label}" missing in:\n${stdout}`);
  return match[1]!;
}

function parseSummary(result: CliResult): Summary {
  const runPrefix = /^summary \(.*run ([0-9a-f]{8})\)$/m.exec(result.stdout)?.[1];
  if (!runPrefix) throw new Error(`no summary in:\n${result.stdout}\n${result.stderr}`);
  const chaos = /^(\d+) killed, (\d+) paused$/.exec(field(result.stdout, 'chaos'));
  return {
    runPrefix,
    elections: Number(field(result.stdout, 'elections')),
    failovers: Number(field(result.stdout, 'failovers')),
    killed: Number(chaos?.[1]),
    paused: Number(chaos?.[2]),
    ledgerWrites: Number(field(result.stdout, 'ledger writes committed')),
    refused: Number(field(result.stdout, 'writes refused by fencing')),
    stale: Number(field(result.stdout, 'writes by a stale term')),
  };
}

interface LedgerRow {
  id: number;
  term: number;
  worker: string;
  writtenAt: number;
}

/** Reads the run's ledger and term history with the test's own SQL and checks fencing held. */
async function checkLedger(ds: DataSource, summary: Summary): Promise<{ runId: string; ledger: LedgerRow[] }> {
  const history = await query<{ run_id: string; term: unknown; leader_id: string; started_at: unknown }>(
    ds,
    'SELECT run_id, term, leader_id, started_at FROM gemstone_demo_term WHERE run_id LIKE ? AND ns = ?',
    [`${summary.runPrefix}%`, NS],
  );
  const ledger = (
    await query<{ id: unknown; term: unknown; worker_id: string; written_at: unknown }>(
      ds,
      'SELECT id, term, worker_id, written_at FROM gemstone_demo_ledger WHERE run_id LIKE ? AND ns = ?',
      [`${summary.runPrefix}%`, NS],
    )
  )
    .map((r) => ({ id: Number(r.id), term: Number(r.term), worker: r.worker_id, writtenAt: instantMs(r.written_at) }))
    .sort((a, b) => a.id - b.id);
  const terms = new Map(history.map((h) => [Number(h.term), { leader: h.leader_id, startedAt: instantMs(h.started_at) }]));

  expect(ledger.length).toBe(summary.ledgerWrites);
  expect(ledger.length).toBeGreaterThan(0);
  for (const [i, row] of ledger.entries()) {
    // Written by the holder of its term…
    expect(terms.get(row.term)?.leader).toBe(row.worker);
    // …never after a newer term had started (database clock)…
    for (const [term, { startedAt }] of terms) if (term > row.term) expect(startedAt).toBeGreaterThanOrEqual(row.writtenAt);
    // …and in commit order the term never goes back.
    if (i > 0) expect(row.term).toBeGreaterThanOrEqual(ledger[i - 1]!.term);
  }
  // The failovers show in the ledger itself: entries under several terms by several workers.
  expect(new Set(ledger.map((r) => r.term)).size).toBeGreaterThanOrEqual(2);
  expect(new Set(ledger.map((r) => r.worker)).size).toBeGreaterThanOrEqual(2);
  return { runId: history[0]!.run_id, ledger };
}

/**
 * A killed worker's replacement is a new process with a name of its own (`worker-2` → `worker-2.2`):
 * once "worker-2 restarted as worker-2.2" is logged, it never says "worker-2 became leader" again.
 */
function expectKilledWorkersRenamed(log: string): void {
  const kills = [...log.matchAll(/chaos: SIGKILL (worker-(\d+)(?:\.(\d+))?) \(leader/g)];
  expect(kills.length).toBeGreaterThanOrEqual(1);
  for (const [line, killed, slot, generation] of kills) {
    const after = log.slice(log.indexOf(line));
    const next = `worker-${slot}.${Number(generation ?? 1) + 1}`;
    const restarted = new RegExp(`^\\S+ ${killed.replace(/\./g, '\\.')} restarted as ([\\w.-]+) \\(pid \\d+, candidate [0-9a-f]{8}\\)$`, 'm').exec(after);
    // Unless the run ended before the replacement started (Ctrl-C within its respawn delay).
    if (!restarted) continue;
    expect(restarted[1]).toBe(next);
    // From then on the killed name is history (news the killed process sent just before the kill
    // may still be logged between the kill and the restart).
    expect(after.slice(restarted.index)).not.toMatch(new RegExp(`^\\S+ ${killed.replace(/\./g, '\\.')} became leader`, 'm'));
  }
  // Every name appears once as started or restarted: no process took another's name.
  const names = [...log.matchAll(/^\S+ (?:worker-[\d.]+ restarted as )?(worker-[\d.]+)(?: started)? \(pid \d+,/gm)].map((m) => m[1]);
  expect(new Set(names).size).toBe(names.length);
}

function expectHealthyRun(result: CliResult): Summary {
  // 130: the exit code after Ctrl-C (runThroughFailover), with the summary printed.
  if (result.code !== 130) throw new Error(`demo exited with ${result.code}:\n${result.stdout}\n${result.stderr}`);
  expect(result.stdout).toMatch(/became leader \(term \d+\)/);
  expect(result.stdout).toMatch(/chaos: SIGKILL worker-[\d.]+ \(leader, term \d+\)/);
  expectKilledWorkersRenamed(result.stdout);
  const summary = parseSummary(result);
  expect(summary.killed).toBeGreaterThanOrEqual(1);
  expect(summary.failovers).toBeGreaterThanOrEqual(1);
  expect(summary.elections).toBeGreaterThanOrEqual(summary.failovers + 1);
  expect(summary.stale).toBe(0);
  return summary;
}

describe('gemstone-election demo on the embedded default (no --url, no GEMSTONE_DB_URL)', () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'gemstone-demo-'));
  let ds: DataSource | undefined;
  afterAll(async () => {
    if (ds?.isInitialized) await ds.destroy();
    fs.rmSync(dir, { recursive: true, force: true });
  });

  test('--chaos through a failover: no stale write in the summary or the ledger; children are gone', async () => {
    const result = await runThroughFailover(DEMO_ARGS, { cwd: dir });
    const summary = expectHealthyRun(result);
    expect(result.stdout).toMatch(/3 workers on sqlite:gemstone\.sqlite/);
    expect(fs.existsSync(path.join(dir, 'gemstone.sqlite'))).toBe(true);

    ds = await initDb(`sqlite:${path.join(dir, 'gemstone.sqlite')}`, { createTables: false });
    await checkLedger(ds, summary);
    const [leader] = await query<{ term: unknown }>(ds, 'SELECT term FROM gemstone_election_leader WHERE ns = ?', [NS]);
    expect(Number(leader!.term)).toBe(summary.elections); // fresh database: every term was this run's
    // Every worker stopped and unregistered: no candidate row is left.
    const candidates = await query(ds, 'SELECT candidate_id FROM gemstone_election_candidate WHERE ns = ?', [NS]);
    const pids = workerPids(result.stdout);
    expect(pids.length).toBeGreaterThanOrEqual(3);
    for (const pid of pids) expect(() => process.kill(pid, 0)).toThrow();
    expect(candidates.length).toBeLessThanOrEqual(summary.killed); // only SIGKILLed workers could not unregister
  }, 240_000);
});

describeEachDatabase(
  'gemstone-election demo --url',
  (db) => {
    test('--chaos through a failover: no stale write; the ledger check catches fabricated stale writes', async () => {
      const ds = await db.connect();
      const result = await runThroughFailover([...DEMO_ARGS, '--url', db.url()]);
      const summary = expectHealthyRun(result);
      const { runId, ledger } = await checkLedger(ds, summary);

      const clean = await verifyLedger(ds, runId, NS);
      expect(clean).toMatchObject({ writes: ledger.length, failovers: summary.failovers, stale: [] });

      // The check is real: a late write by the first term, and a write by a worker that never held its term.
      const first = Math.min(...ledger.map((r) => r.term));
      const firstWorker = ledger.find((r) => r.term === first)!.worker;
      const now = db.kind === 'postgres' ? 'clock_timestamp()' : "strftime('%Y-%m-%d %H:%M:%f', 'now')";
      const insert = `INSERT INTO gemstone_demo_ledger (run_id, ns, term, worker_id, written_at) VALUES (?, ?, ?, ?, ${now})`;
      await query(ds, insert, [runId, NS, first, firstWorker]);
      await query(ds, insert, [runId, NS, first, uuid()]);
      const caught = await verifyLedger(ds, runId, NS);
      expect(caught.writes).toBe(ledger.length + 2);
      expect(caught.stale.map((s) => s.reason)).toEqual(['written after a newer term started', 'term not held by this worker']);
      expect(caught.stale.every((s) => s.term === first && s.id > ledger[ledger.length - 1]!.id)).toBe(true);
    }, 240_000);
  },
  { kinds: ['postgres'] },
);

describe('gemstone-election demo: Ctrl-C and refusals', () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'gemstone-demo-'));
  afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));

  test('SIGINT to the demo alone stops its workers (they hand over and exit), prints the summary, exits 130', async () => {
    const child = startCli(['demo', '--keep', '--duration', '120', '--url', `sqlite:${path.join(dir, 'ctrl-c.sqlite')}`], { cwd: dir });
    const result = finished(child, 45_000);
    let seen = '';
    await new Promise<void>((resolve) => {
      child.stdout!.on('data', (chunk: Buffer) => {
        seen += chunk.toString();
        if (/committed ledger entry/.test(seen)) resolve();
      });
    });
    child.kill('SIGINT');
    const { code, stdout } = await result;
    expect(code).toBe(130);
    expect(stdout).toMatch(/interrupted: stopping/);
    const summary = parseSummary({ code, signal: null, stdout, stderr: '' });
    expect(summary.ledgerWrites).toBeGreaterThan(0);
    expect(summary.stale).toBe(0);
    expect(stdout).toMatch(/stopped leading term \d+: stopped/); // the leader handed over on the way out
    const pids = workerPids(stdout);
    expect(pids).toHaveLength(3);
    for (const pid of pids) expect(() => process.kill(pid, 0)).toThrow();
    const ds = await initDb(`sqlite:${path.join(dir, 'ctrl-c.sqlite')}`, { createTables: false });
    try {
      // Every worker unregistered on its way out.
      expect(await query(ds, 'SELECT candidate_id FROM gemstone_election_candidate')).toEqual([]);
    } finally {
      await ds.destroy();
    }
  }, 60_000);

  test('if the demo process itself dies (SIGKILL), its workers notice and exit', async () => {
    const child = startCli(['demo', '--duration', '120', '--url', `sqlite:${path.join(dir, 'orphans.sqlite')}`], { cwd: dir });
    const result = finished(child, 45_000);
    let seen = '';
    await new Promise<void>((resolve) => {
      child.stdout!.on('data', (chunk: Buffer) => {
        seen += chunk.toString();
        if ((seen.match(/started \(pid/g) ?? []).length === 3 && /became leader/.test(seen)) resolve();
      });
    });
    child.kill('SIGKILL');
    await result;
    const pids = workerPids(seen);
    const alive = () => pids.filter((pid) => {
      try {
        process.kill(pid, 0);
        return true;
      } catch {
        return false;
      }
    });
    const deadline = Date.now() + 15_000;
    while (alive().length > 0 && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 100));
    expect(alive()).toEqual([]);
  }, 60_000);

  test('--json: stdout is the summary object alone; the log goes to stderr', async () => {
    const result = await runCli(['demo', '--json', '--duration', '8', '--url', `sqlite:${path.join(dir, 'json.sqlite')}`], { cwd: dir, timeoutMs: 30_000 });
    expect(result.code).toBe(0);
    expect(result.stderr).toMatch(/became leader \(term 1\)/);
    const lines = result.stdout.trim().split('\n');
    expect(lines).toHaveLength(1);
    const summary = JSON.parse(lines[0]!) as Record<string, unknown>;
    expect(summary).toMatchObject({ ns: NS, workers: 3, fencing: true, kills: 0, pauses: 0, staleWrites: 0, staleDetails: [] });
    expect(summary.elections as number).toBeGreaterThanOrEqual(1);
    expect(summary.ledgerWrites).toEqual(expect.any(Number));
    expect(summary.ledgerWrites as number).toBeGreaterThan(0);
    expect(summary.runId).toMatch(/^[0-9a-f-]{36}$/);
  }, 60_000);

  test('sqlite::memory: is refused: worker processes could not share it', async () => {
    const result = await runCli(['demo', '--url', 'sqlite::memory:']);
    expect(result.code).toBe(1);
    expect(result.stderr.trimEnd().split('\n')).toEqual([expect.stringMatching(/^gemstone-election: the demo needs a database its worker processes share/)]);
  });
});
