/**
 * What `gemstone-election demo` shows, as a real process tree: event lines fit the width (80
 * columns without a terminal, the terminal's own in the live view) without losing words, and the
 * leader shown is the database's unexpired leader, never a worker's stale news.
 */
import { spawn } from 'child_process';
import * as fs from 'fs';
import * as os from 'os';
import * as path from 'path';
import { CLI, finished, ROOT, runCli } from './cli';

const strip = (text: string) => text.replace(/\x1b\[[0-9;?]*[A-Za-z]/g, '').replace(/\r/g, '');
// 12 s: the first kill comes 1.5 s after the first leader shows, and under CPU load (a CI run
// beside a busy loop) starting the workers took most of a 7 s run, which then ended before it.
const CHAOS = ['--chaos', '--chaos-every', '1.5', '--lease', '1', '--duration', '12'];
const STAMP = /^\d\d:\d\d:\d\d\.\d{3} /;

/** Plain log lines with their wrapped continuations joined back. */
function events(stdout: string): string[] {
  const out: string[] = [];
  for (const line of stdout.split('\n')) {
    if (STAMP.test(line)) out.push(line.slice(13));
    else if (/^ {13}\S/.test(line) && out.length > 0) out[out.length - 1] += ` ${line.trim()}`;
  }
  return out;
}

describe('gemstone-election demo output', () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'gemstone-demo-view-'));
  afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));

  test('without a terminal: lines of at most 80 columns, every word kept; database leader changes logged', async () => {
    // A long path makes the title longer than 80 columns.
    const file = path.join(dir, `a-database-file-with-a-rather-long-name-${'x'.repeat(30)}.sqlite`);
    const result = await runCli(['demo', ...CHAOS, '--url', `sqlite:${file}`], { cwd: dir, timeoutMs: 50_000 });
    expect(result.code).toBe(0);
    const log = result.stdout.slice(0, result.stdout.indexOf('\nsummary ('));
    for (const line of log.split('\n')) expect([...line].length).toBeLessThanOrEqual(80);
    const all = events(log);
    // The path is one word longer than a line: split, and joined back here with a space.
    expect(all[0]!.replace(/ /g, '')).toContain(`workerson sqlite:${file}, namespace "demo", lease 1s, chaos every 1.5s`.replace(/ /g, ''));
    const kill = all.findIndex((e) => /^chaos: SIGKILL worker-[\d.]+ \(leader, term \d+\)$/.test(e));
    expect(kill).toBeGreaterThan(0);
    // After the leader is killed, the database's leader is never it again: first none (its lease
    // ran out) or a newer term.
    const [, killed, term] = /SIGKILL (worker-[\d.]+) \(leader, term (\d+)\)/.exec(all[kill]!)!;
    const next = all.slice(kill).find((e) => e.startsWith('database: '));
    expect(next).toMatch(new RegExp(`^database: (no leader \\(the lease of ${killed} \\(exited\\b.*\\) ended\\)|leader is worker-[\\d.]+ \\(term (\\d+)\\))$`));
    const newTerm = /\(term (\d+)\)$/.exec(next!)?.[1];
    if (newTerm !== undefined) expect(Number(newTerm)).toBeGreaterThan(Number(term));
  }, 75_000);

  test('live view on a 100-column terminal: lines fit; "following" names only the leader the database shows', async () => {
    const file = path.join(dir, 'live.sqlite');
    const command = `stty cols 100 rows 50; exec '${process.execPath}' -r '${path.join(ROOT, 'test', 'support', 'typeorm-line.js')}' '${CLI}' demo ${CHAOS.join(' ')} --url 'sqlite:${file}'`;
    const child = spawn('script', ['-qfec', command, '/dev/null'], { cwd: dir, env: { ...process.env, NO_COLOR: '1', GEMSTONE_DB_URL: '' }, stdio: ['ignore', 'pipe', 'pipe'] });
    const result = await finished(child, 50_000);
    expect(result.code).toBe(0);
    const screen = strip(result.stdout);
    const lines = screen.slice(0, screen.indexOf('\nsummary (')).split('\n');
    for (const line of lines) expect({ line, width: [...line].length <= 100 }).toEqual({ line, width: true });
    const frames = screen.split(/^(?=gemstone-election demo: )/m).slice(1);
    expect(frames.length).toBeGreaterThan(10);
    let followed = 0;
    for (const frame of frames) {
      const leaderLine = frame.split('\n')[1]!;
      expect(leaderLine).toMatch(/^leader \(database\): /);
      const leader = /^leader \(database\): (.+?), term \d+, lease /.exec(leaderLine)?.[1];
      for (const [, name] of frame.matchAll(/following (.+?) \(\d+(?:\.\d)?m?s ago\)/g)) {
        followed++;
        expect({ leaderLine, following: name }).toEqual({ leaderLine, following: leader });
      }
    }
    expect(followed).toBeGreaterThan(0);
    // The kill shows whole in the event log, wrapped if need be.
    expect(screen.replace(/\n {15}/g, ' ')).toMatch(/chaos: SIGKILL worker-[\d.]+ \(leader, term \d+\)/);
  }, 75_000);
});
