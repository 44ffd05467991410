/**
 * Starts and drives a Nest host process (nest-host.ts) from a test: transpiles the host into
 * .tmp/ inside the repository (so `gemstone-utils/nestjs` resolves through the package's exports
 * map to dist/), forks it with the TypeORM line (and Nest line) of this run preloaded, and keeps
 * every event it reports, in order.
 */
import { ChildProcess, fork } from 'child_process';
import * as fs from 'fs';
import * as path from 'path';
import * as ts from 'typescript';
import { REPO_ROOT } from '../../support/children/spawn';
import type { AppSpec, HostCommand, HostEvent } from './nest-host';

const SOURCE = path.join(__dirname, 'nest-host.ts');

/** The host as JavaScript, transpiled once per test process (no type check: `npm run typecheck` does that). */
function hostScript(): string {
  const out = path.join(REPO_ROOT, '.tmp', 'nestjs-host', `nest-host-${process.pid}.js`);
  if (fs.existsSync(out)) return out;
  const { outputText } = ts.transpileModule(fs.readFileSync(SOURCE, 'utf8'), {
    fileName: SOURCE,
    compilerOptions: {
      module: ts.ModuleKind.CommonJS,
      target: ts.ScriptTarget.ES2022,
      experimentalDecorators: true,
      emitDecoratorMetadata: true,
      esModuleInterop: true,
    },
  });
  fs.mkdirSync(path.dirname(out), { recursive: true });
  fs.writeFileSync(out, outputText);
  return out;
}

type Reply = { id: number; reply?: unknown; error?: { name: string; message: string; stack?: string } };

export class NestHost {
  readonly events: HostEvent[] = [];
  private readonly child: ChildProcess;
  private readonly pending = new Map<number, { resolve: (value: unknown) => void; reject: (error: Error) => void }>();
  private readonly waiters = new Set<() => void>();
  private nextId = 1;
  private stderr = '';
  private readonly exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;

  private constructor(env: NodeJS.ProcessEnv) {
    this.child = fork(hostScript(), [], {
      cwd: REPO_ROOT,
      // The TypeORM line of this run, and with GEMSTONE_NEST_LINE=11 the previous Nest major.
      execArgv: ['-r', './test/support/typeorm-line.js', '-r', './test/support/nest-line.js'],
      env: { ...process.env, ...env },
      stdio: ['ignore', 'ignore', 'pipe', 'ipc'],
    });
    this.child.stderr?.on('data', (chunk: Buffer) => (this.stderr += chunk.toString()));
    this.exited = new Promise((resolve) => this.child.on('exit', (code, signal) => resolve({ code, signal })));
    this.child.on('message', (message: Reply | HostEvent) => {
      if (typeof (message as Reply).id === 'number') {
        const { id, error, reply } = message as Reply;
        const pending = this.pending.get(id);
        this.pending.delete(id);
        if (error) pending?.reject(Object.assign(new Error(`${error.message}\n--- in the host: ${error.stack ?? ''}`), { name: error.name }));
        else pending?.resolve(reply);
        return;
      }
      this.events.push(message as HostEvent);
      for (const wake of [...this.waiters]) wake();
    });
    this.child.on('exit', (code) => {
      for (const { reject } of this.pending.values()) reject(new Error(`nest host exited (${code}): ${this.stderr}`));
      this.pending.clear();
      for (const wake of [...this.waiters]) wake();
    });
  }

  /** Forks a host and waits until it has loaded Nest and the package. */
  static async start(env: NodeJS.ProcessEnv = {}): Promise<NestHost> {
    const host = new NestHost(env);
    await host.waitFor((events) => events.some((e) => e.event === 'ready'), 30_000, 'the host to load');
    return host;
  }

  /** The version of @nestjs/core the host loaded. */
  get nestVersion(): string {
    return String(this.select('ready')[0]?.['nest']);
  }

  send<T = unknown>(command: HostCommand): Promise<T> {
    const id = this.nextId++;
    return new Promise<T>((resolve, reject) => {
      this.pending.set(id, { resolve: resolve as (value: unknown) => void, reject });
      this.child.send({ id, ...command });
    });
  }

  startApp(spec: AppSpec): Promise<{ candidateId: string; ns: string; isLeader: boolean; intervalMs: number }> {
    return this.send({ cmd: 'start', spec });
  }

  /** Resolves once `condition(events)` holds; rejects after `timeoutMs` saying what it waited for. */
  waitFor(condition: (events: readonly HostEvent[]) => boolean, timeoutMs: number, what: string): Promise<void> {
    return new Promise((resolve, reject) => {
      const check = () => {
        if (condition(this.events)) {
          done();
          resolve();
        } else if (this.child.exitCode !== null || this.child.signalCode !== null) {
          done();
          reject(new Error(`nest host exited while waiting for ${what}: ${this.stderr}`));
        }
      };
      const timer = setTimeout(() => {
        done();
        reject(new Error(`timed out after ${timeoutMs} ms waiting for ${what}; events: ${JSON.stringify(this.events.slice(-20))}; stderr: ${this.stderr}`));
      }, timeoutMs);
      const done = () => {
        clearTimeout(timer);
        this.waiters.delete(check);
      };
      this.waiters.add(check);
      check();
    });
  }

  /** Events of one kind (and application). */
  select(event: string, app?: string): HostEvent[] {
    return this.events.filter((e) => e.event === event && (app === undefined || e.app === app));
  }

  /** Closes every application, then ends the process. */
  async stop(): Promise<void> {
    if (this.child.connected) {
      await this.send({ cmd: 'exit' }).catch(() => undefined);
      this.child.disconnect();
    }
    const timer = setTimeout(() => this.child.kill('SIGKILL'), 15_000);
    await this.exited;
    clearTimeout(timer);
  }

  /** Sends a signal to the host process and waits for it to end. */
  async signal(signal: NodeJS.Signals, timeoutMs = 15_000): Promise<{ code: number | null; signal: NodeJS.Signals | null }> {
    this.child.kill(signal);
    const timer = setTimeout(() => this.child.kill('SIGKILL'), timeoutMs);
    try {
      return await this.exited;
    } finally {
      clearTimeout(timer);
    }
  }

  get stderrText(): string {
    return this.stderr;
  }
}
