/**
 * How `gemstone-election demo` ends, as a real process tree: on SIGINT, SIGTERM and SIGHUP the
 * workers hand over, the summary is printed and the exit code is the shell's for the signal; the
 * demo tables are dropped unless `--keep`; `--json` durations have at most one decimal.
 */
import { ChildProcess, spawn } from 'child_process';
import * as fs from 'fs';
import * as os from 'os';
import * as path from 'path';
import { initDb } from 'gemstone-utils';
import { describeEachDatabase, query } from '../support/databases';
import { CLI, finished, jsonDemoThroughTakeover, ROOT, startCli, workerPids } from './cli';

const DEMO_TABLES = ['gemstone_demo_ledger', 'gemstone_demo_term'];

/** Resolves once the output so far matches. */
function outputMatches(child: ChildProcess, pattern: RegExp): Promise<string> {
  let seen = '';
  return new Promise((resolve) => {
    child.stdout!.on('data', (chunk: Buffer) => {
      seen += chunk.toString();
      if (pattern.test(seen)) resolve(seen);
    });
  });
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

async function sqliteTables(file: string): Promise<string[]> {
  const ds = await initDb(`sqlite:${file}`, { createTables: false });
  try {
    const rows = await query<{ name: string }>(ds, "SELECT name FROM sqlite_master WHERE type = 'table' AND name LIKE 'gemstone%'");
    return rows.map((r) => r.name).sort();
  } finally {
    await ds.destroy();
  }
}

describe('gemstone-election demo: signals and clean-up', () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'gemstone-demo-stop-'));
  afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));

  const cases: Array<{ signal: NodeJS.Signals; code: number; group: boolean; keep: boolean }> = [
    // A closed terminal sends SIGHUP to the whole foreground process group, workers included.
    { signal: 'SIGHUP', code: 129, group: true, keep: false },
    { signal: 'SIGTERM', code: 143, group: false, keep: false },
    // Ctrl-C also reaches the whole group.
    { signal: 'SIGINT', code: 130, group: true, keep: true },
  ];
  test.each(cases)('$signal: workers hand over, summary, exit $code, demo tables dropped unless --keep ($keep)', async ({ signal, code, group, keep }) => {
    const file = path.join(dir, `${signal}.sqlite`);
    const child = startCli(['demo', ...(keep ? ['--keep'] : []), '--duration', '120', '--url', `sqlite:${file}`], { cwd: dir, detached: true });
    const result = finished(child, 45_000);
    await outputMatches(child, /committed ledger entry/);
    if (group) process.kill(-child.pid!, signal);
    else child.kill(signal);
    const { code: exitCode, signal: killedBy, stdout, stderr } = await result;
    expect({ exitCode, killedBy, stderr }).toEqual({ exitCode: code, killedBy: null, stderr: '' });
    expect(stdout).toContain(`interrupted: stopping (${signal};`);
    expect(stdout).toMatch(/stopped leading term \d+: stopped/); // the leader handed over
    expect(stdout).toMatch(/^summary \(/m);
    expect(stdout).toMatch(/^ {2}ledger writes committed:\s+[1-9]/m);
    const pids = workerPids(stdout);
    expect(pids).toHaveLength(3);
    expect(pids.filter(alive)).toEqual([]);

    const tables = await sqliteTables(file);
    if (keep) {
      expect(tables).toEqual([...DEMO_TABLES, 'gemstone_election_candidate', 'gemstone_election_history', 'gemstone_election_leader', 'gemstone_election_run'].sort());
    } else {
      expect(tables).toEqual(['gemstone_election_candidate', 'gemstone_election_history', 'gemstone_election_leader', 'gemstone_election_run']);
      expect(stdout).toMatch(/demo tables gemstone_demo_ledger, gemstone_demo_term: dropped \(--keep keeps them\)/);
    }
    const ds = await initDb(`sqlite:${file}`, { createTables: false });
    try {
      // Every worker unregistered and the leader handed over: no candidate, no live lease.
      expect(await query(ds, 'SELECT candidate_id FROM gemstone_election_candidate')).toEqual([]);
      const [leader] = await query<{ leader_id: string | null }>(ds, 'SELECT leader_id FROM gemstone_election_leader');
      expect(leader?.leader_id ?? null).toBeNull();
    } finally {
      await ds.destroy();
    }
  }, 60_000);
});

describe('gemstone-election demo: a wrapper killed with SIGKILL', () => {
  test('the reparented demo stops on its own (hand-over, summary, tables dropped); no worker outlives it', async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'gemstone-demo-orphan-'));
    try {
      const file = path.join(dir, 'orphan.sqlite');
      const log = path.join(dir, 'demo.log');
      const preload = path.join(ROOT, 'test', 'support', 'typeorm-line.js');
      // `npm run demo` in small: a wrapper that starts the demo and waits for it.
      const wrapper = spawn(
        '/bin/sh',
        ['-c', `"$0" -r "$1" "$2" demo --plain --duration 120 --url "sqlite:$3" > "$4" 2>&1 & echo $!; wait`, process.execPath, preload, CLI, file, log],
        { cwd: dir, stdio: ['ignore', 'pipe', 'inherit'], env: { ...process.env, NO_COLOR: '1' } },
      );
      const demoPid = await new Promise<number>((resolve) => wrapper.stdout!.once('data', (chunk: Buffer) => resolve(Number(chunk.toString().trim()))));
      const until = Date.now() + 30_000;
      while (!/committed ledger entry/.test(fs.existsSync(log) ? fs.readFileSync(log, 'utf8') : '')) {
        if (Date.now() > until) throw new Error(`no ledger entry in 30 s:\n${fs.readFileSync(log, 'utf8')}`);
        await new Promise((resolve) => setTimeout(resolve, 100));
      }
      wrapper.kill('SIGKILL');
      const stopBy = Date.now() + 30_000;
      while (alive(demoPid) && Date.now() < stopBy) await new Promise((resolve) => setTimeout(resolve, 100));
      const output = fs.readFileSync(log, 'utf8');
      expect({ demoAlive: alive(demoPid), output }).toEqual({ demoAlive: false, output: expect.stringMatching(/^summary \(/m) });
      expect(output).toContain('interrupted: stopping (SIGHUP;');
      const pids = workerPids(output);
      expect(pids).toHaveLength(3);
      expect(pids.filter(alive)).toEqual([]);
      expect(await sqliteTables(file)).toEqual(['gemstone_election_candidate', 'gemstone_election_history', 'gemstone_election_leader', 'gemstone_election_run']);
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  }, 90_000);
});

describeEachDatabase(
  'gemstone-election demo --json with chaos',
  (db) => {
    test('every duration has at most one decimal; the demo tables are dropped at the end', async () => {
      // Until a takeover, then Ctrl-C: a fixed 8 s run could end without one (longestTakeoverMs null).
      const result = await jsonDemoThroughTakeover(['--url', db.url()]);
      expect(result.code).toBe(130); // the demo's exit code after Ctrl-C, with its summary printed
      const summary = JSON.parse(result.stdout) as Record<string, unknown>;
      expect(summary.longestTakeoverMs).toEqual(expect.any(Number)); // measured by a host timer
      for (const key of ['durationMs', 'longestLeaderlessMs', 'longestTakeoverMs']) {
        const value = summary[key];
        if (value !== null) expect(`${key}: ${String(value)}`).toMatch(/^\w+: \d+(\.\d)?$/);
      }
      expect(result.stdout).not.toMatch(/\d\.\d{2,}/);
      expect(result.stderr).toMatch(/demo tables gemstone_demo_ledger, gemstone_demo_term: dropped/);
      const ds = await db.connect();
      const rows = await query<{ table_name: string }>(
        ds,
        "SELECT table_name FROM information_schema.tables WHERE table_schema = current_schema() AND table_name LIKE 'gemstone_demo%'",
      );
      expect(rows).toEqual([]);
    }, 300_000);
  },
  { kinds: ['postgres'] },
);
