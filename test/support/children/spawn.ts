/**
 * Runs the plain-JS child scripts of this directory from the repo root, as a user's process would
 * load the package (self-reference through the `exports` map, against dist/), with the TypeORM
 * line of this run preloaded.
 */
import { ChildProcessWithoutNullStreams, spawn } from 'child_process';
import * as path from 'path';

export const REPO_ROOT = path.resolve(__dirname, '..', '..', '..');
const PRELOAD = ['-r', './test/support/typeorm-line.js'];

export interface ChildResult {
  code: number | null;
  stdout: string;
  stderr: string;
}

function collect(child: ChildProcessWithoutNullStreams, timeoutMs: number): Promise<ChildResult> {
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
  child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`child timed out after ${timeoutMs} ms; stdout: ${stdout} stderr: ${stderr}`));
    }, timeoutMs);
    child.on('error', reject);
    child.on('close', (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    });
  });
}

/** Starts `node -r typeorm-line <args>` in the repo root. */
export function startNode(args: readonly string[], env: NodeJS.ProcessEnv = {}): ChildProcessWithoutNullStreams {
  return spawn(process.execPath, [...PRELOAD, ...args], { cwd: REPO_ROOT, env: { ...process.env, ...env } });
}

/** Runs `node -r typeorm-line <args>` in the repo root to its end. */
export function runNode(args: readonly string[], options: { env?: NodeJS.ProcessEnv; timeoutMs?: number } = {}): Promise<ChildResult> {
  return collect(startNode(args, options.env), options.timeoutMs ?? 30_000);
}

/**
 * Starts `count` copies of a script that prints "ready" when loaded and starts its work on a line
 * from stdin; once all are ready, releases them together. Resolves with every child's result.
 */
export async function runTogether(script: string, args: readonly string[], count: number, timeoutMs = 45_000): Promise<ChildResult[]> {
  const children = Array.from({ length: count }, () => startNode([script, ...args]));
  const results = children.map((child) => collect(child, timeoutMs));
  await Promise.all(
    children.map(
      (child) =>
        new Promise<void>((resolve, reject) => {
          let seen = '';
          const onData = (chunk: Buffer) => {
            seen += chunk.toString();
            if (seen.includes('ready\n')) {
              child.stdout.off('data', onData);
              resolve();
            }
          };
          child.stdout.on('data', onData);
          child.on('close', () => reject(new Error(`child exited before it was ready: ${seen}`)));
        }),
    ),
  );
  for (const child of children) child.stdin.write('go\n');
  return Promise.all(results);
}
