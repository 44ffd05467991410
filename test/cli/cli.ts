/**
 * Runs the built `gemstone-election` executable as a real child process, as users do
 * (`npm test` builds first). The TypeORM line switch is preloaded, and inherited by the demo's
 * worker processes through execArgv.
 */
import { ChildProcess, spawn } from 'child_process';
import * as path from 'path';
import { waitFor } from '../elector/helpers';

export const ROOT = path.join(__dirname, '..', '..');
export const CLI = path.join(ROOT, 'dist', 'src', 'cli', 'main.js');
const PRELOAD = ['-r', path.join(ROOT, 'test', 'support', 'typeorm-line.js')];

export interface CliResult {
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
}

export interface CliOptions {
  cwd?: string;
  /** Added to the environment; `undefined` removes a variable. */
  env?: Record<string, string | undefined>;
  /** Extra `-r` preloads (e.g. a skewed host clock). */
  preload?: string[];
  timeoutMs?: number;
  /** Own process group, so a test can signal the group as a terminal does (`process.kill(-pid)`). */
  detached?: boolean;
}

function environment(extra: CliOptions['env'] = {}): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = { ...process.env, NO_COLOR: '1' };
  delete env.GEMSTONE_DB_URL;
  delete env.DATABASE_URL;
  for (const [key, value] of Object.entries(extra)) {
    if (value === undefined) delete env[key];
    else env[key] = value;
  }
  return env;
}

/** Starts the CLI; the caller collects output and waits with {@link finished}. */
export function startCli(args: readonly string[], options: CliOptions = {}): ChildProcess {
  const preload = [...PRELOAD, ...(options.preload ?? []).flatMap((file) => ['-r', file])];
  return spawn(process.execPath, [...preload, CLI, ...args], {
    cwd: options.cwd ?? ROOT,
    env: environment(options.env),
    stdio: ['ignore', 'pipe', 'pipe'],
    detached: options.detached ?? false,
  });
}

/** Output and exit of a started CLI process; kills it after `timeoutMs`. */
export function finished(child: ChildProcess, timeoutMs = 30_000): Promise<CliResult> {
  let stdout = '';
  let stderr = '';
  child.stdout?.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
  child.stderr?.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`gemstone-election did not finish within ${timeoutMs} ms\nstdout:\n${stdout}\nstderr:\n${stderr}`));
    }, timeoutMs);
    child.on('error', reject);
    child.on('close', (code, signal) => {
      clearTimeout(timer);
      resolve({ code, signal, stdout, stderr });
    });
  });
}

/** Runs the CLI to its end. */
export function runCli(args: readonly string[], options: CliOptions = {}): Promise<CliResult> {
  return finished(startCli(args, options), options.timeoutMs);
}

/**
 * The pids of every worker process a demo's log names: `worker-1 started (pid 123, …)`, and
 * `worker-1 restarted as worker-1.2 (pid 456, …)` for a process started in the place of another.
 */
export function workerPids(log: string): number[] {
  return [...log.matchAll(/(?:started|restarted as worker-[\d.]+) \(pid (\d+),/g)].map((m) => Number(m[1]));
}

/**
 * `demo --json --chaos` (log on stderr, summary on stdout) run until a chaos kill was followed by
 * another worker's election — the takeover its summary measures — then Ctrl-C (exit 130, summary
 * printed). A fixed short duration left a machine busy beside two busy loops without a takeover.
 */
export async function jsonDemoThroughTakeover(args: readonly string[], options: CliOptions = {}): Promise<CliResult> {
  const child = startCli(['demo', '--json', '--chaos', '--chaos-every', '1.5', '--lease', '1', '--duration', '600', ...args], options);
  const done = finished(child, 240_000);
  let log = '';
  child.stderr!.on('data', (chunk: Buffer) => (log += chunk.toString()));
  const tookOver = () => {
    const kill = log.indexOf('chaos: SIGKILL');
    return kill >= 0 && log.indexOf('became leader', kill) >= 0;
  };
  await waitFor('a chaos kill, then another worker elected', tookOver, 180_000, 50);
  child.kill('SIGINT');
  return done;
}
