import { ChildProcessWithoutNullStreams, spawn } from 'child_process';
import * as path from 'path';
import { sleep } from '../support/databases';

const ROOT = path.join(__dirname, '..', '..');
const WORKER = path.join(ROOT, 'test', 'support', 'workers', 'elector-worker.js');
const TYPEORM_LINE = path.join(ROOT, 'test', 'support', 'typeorm-line.js');

export interface WorkerConfig {
  url: string;
  ns: string;
  expireSeconds: number;
  intervalMs: number;
  handleSignals?: boolean;
  listenErrors?: boolean;
  ledgerEveryMs?: number;
  statusEveryMs?: number;
  /** DataSourceOptions used instead of `url` (timeouts, pool size). */
  dataSource?: Record<string, unknown>;
  /** Report every acquisition and renewal ('tick' lines). */
  ticks?: boolean;
  /** Anything else a worker other than elector-worker.js reads from its configuration. */
  [field: string]: unknown;
}

/** How a worker process is started, when not elector-worker.js as it is. */
export interface WorkerLaunch {
  /** The worker script (default elector-worker.js). */
  script?: string;
  /** Preloaded modules (`node -r`) after the TypeORM line's. */
  preload?: readonly string[];
  /** Environment variables added to the test's. */
  env?: Record<string, string>;
}

export interface WorkerLine {
  event: string;
  t: number;
  [field: string]: unknown;
}

/** One elector-worker.js child process and everything it reported. */
export class WorkerProcess {
  readonly lines: WorkerLine[] = [];
  readonly stderr: string[] = [];
  readonly exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  exit: { code: number | null; signal: NodeJS.Signals | null } | undefined;
  candidateId = '';
  private readonly child: ChildProcessWithoutNullStreams;

  constructor(config: WorkerConfig, launch: WorkerLaunch = {}) {
    const preload = [TYPEORM_LINE, ...(launch.preload ?? [])].flatMap((file) => ['-r', file]);
    this.child = spawn(process.execPath, [...preload, launch.script ?? WORKER], {
      cwd: ROOT,
      env: { ...process.env, ...launch.env, ELECTOR_WORKER_CONFIG: JSON.stringify(config) },
      stdio: ['pipe', 'pipe', 'pipe'],
    });
    let buffer = '';
    this.child.stdout.on('data', (chunk: Buffer) => {
      buffer += chunk.toString();
      let newline: number;
      while ((newline = buffer.indexOf('\n')) >= 0) {
        const text = buffer.slice(0, newline);
        buffer = buffer.slice(newline + 1);
        try {
          const line = JSON.parse(text) as WorkerLine;
          if (line.event === 'ready') this.candidateId = String(line.candidateId);
          this.lines.push(line);
        } catch {
          this.stderr.push(`(stdout) ${text}`);
        }
      }
    });
    this.child.stderr.on('data', (chunk: Buffer) => this.stderr.push(chunk.toString()));
    // A command written as the child exits (a worker exits by itself after "stop", before its
    // 'exit' event reaches us) meets a closed pipe: EPIPE, raised on the stream. Kept with its
    // stderr, not thrown: what the child did is in its lines and its exit, which waitFor reports.
    this.child.stdin.on('error', (error) => this.stderr.push(`(stdin) ${error.message}\n`));
    this.exited = new Promise((resolve) => {
      this.child.on('exit', (code, signal) => {
        this.exit = { code, signal };
        resolve(this.exit);
      });
    });
  }

  get pid(): number {
    return this.child.pid!;
  }

  get alive(): boolean {
    return this.exit === undefined;
  }

  signal(signal: NodeJS.Signals): void {
    this.child.kill(signal);
  }

  send(command: string): void {
    this.child.stdin.write(`${command}\n`);
  }

  events(event: string, from = 0): WorkerLine[] {
    return this.lines.slice(from).filter((l) => l.event === event);
  }

  /** Waits for a line matching `predicate` at index ≥ `from`; fails early if the process exits. */
  async waitFor(what: string, predicate: (line: WorkerLine) => boolean, timeoutMs = 15_000, from = 0): Promise<WorkerLine> {
    const started = Date.now();
    for (;;) {
      const found = this.lines.slice(from).find(predicate);
      if (found) return found;
      if (!this.alive || Date.now() - started > timeoutMs) {
        throw new Error(
          `worker ${this.pid}: ${this.alive ? `timed out after ${timeoutMs} ms` : `exited (${JSON.stringify(this.exit)})`} waiting for ${what}\n` +
            `lines: ${this.lines.map((l) => JSON.stringify(l)).join('\n')}\nstderr: ${this.stderr.join('')}`,
        );
      }
      await sleep(10);
    }
  }

  ready(): Promise<WorkerLine> {
    return this.waitFor('ready', (l) => l.event === 'ready', 30_000);
  }

  /** Stops the elector gracefully (if still alive) and waits for the exit. */
  async shutdown(): Promise<void> {
    if (this.alive) {
      this.signal('SIGCONT');
      this.send('stop');
      const timer = setTimeout(() => this.signal('SIGKILL'), 10_000);
      await this.exited;
      clearTimeout(timer);
    }
  }
}
