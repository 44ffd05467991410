/**
 * A worker process running ONE leader-election implementation's own loop, as a service would
 * (`suites/peer.ts` forks it, SIGKILLs it or asks it to stop), on PostgreSQL:
 *
 * - `library`: a `LeaderElector` of this package.
 * - `peer`: `LeaderElectorCore` of the npm package `nest-leader-election`, created with its own
 *   `LeaderElectorCore.create(dataSource, config)` (what its Nest service does on module init);
 *   `amILeader()` is polled every {@link POLL_MS} ms to see it become leader; a stop calls its
 *   `release()`.
 * - `plpgsql`: a classic single-table lease function in PL/pgSQL, `try_become_leader(service,
 *   candidate, timeout)`, called every `intervalMs` on a `pg` Client; it has no release.
 *
 * Reports over IPC with wall-clock timestamps (all processes share the host clock):
 * ready · elected(at) · stopping(at) · error(message).
 */
import 'reflect-metadata';
import { randomUUID } from 'crypto';
import { Client } from 'pg';
import { DataSource } from 'typeorm';
import { initDb, LeaderElector } from 'gemstone-utils';
import { BenchTarget, dataSourceOptions, singleConnection } from '../lib/databases';

export type PeerImplementation = 'library' | 'peer' | 'plpgsql';

export interface PeerWorkerConfig {
  implementation: PeerImplementation;
  target: BenchTarget;
  /** Namespace / service name / lock id of the run. */
  ns: string;
  lockId: number;
  expireSeconds: number;
  intervalMs: number;
}

export type PeerWorkerMessage =
  | { type: 'ready' }
  | { type: 'elected'; at: number }
  | { type: 'stopping'; at: number }
  | { type: 'error'; message: string };

/** How often the peer's `amILeader()` is polled. */
export const POLL_MS = 5;

const send = (message: PeerWorkerMessage) => process.send?.(message);

/** What the suite needs of `nest-leader-election` (the package is ESM; Node 20.19+ `require`s it). */
export interface PeerModule {
  LeaderElectorCore: {
    create(dataSource: DataSource, config: Record<string, unknown>): Promise<PeerCore>;
    new (repository: unknown, config: Record<string, unknown>): PeerCore;
  };
  createLeaderLeaseEntity(schema?: string): unknown;
}
export interface PeerCore {
  amILeader(): boolean;
  release(): Promise<void>;
  tryAcquireLease(): Promise<void>;
  createLockTableIfNotExists(): Promise<void>;
  renewalTimer?: ReturnType<typeof setTimeout>;
}

/** Loads `nest-leader-election` with its logging silenced (Nest's Logger); throws if it is not installed. */
export function loadPeer(): PeerModule {
  const nest = require('@nestjs/common') as { Logger: { overrideLogger(level: false): void } };
  nest.Logger.overrideLogger(false);
  return require('nest-leader-election') as PeerModule;
}

/** The peer's settings for a lease of `expireSeconds` renewed every `intervalMs` (see suites/peer.ts). */
export function peerConfig(config: Pick<PeerWorkerConfig, 'lockId' | 'expireSeconds' | 'intervalMs'>, instanceId: string): Record<string, unknown> {
  return {
    leaseDuration: config.expireSeconds * 1000,
    renewalInterval: config.intervalMs,
    jitterRange: 0,
    baseCleanInterval: config.intervalMs,
    lockId: config.lockId,
    instanceId,
    schema: 'public',
    createTableOnInit: true,
  };
}

/** The peer writes a line to stdout on every tick (`console.log("updated", …)`): dropped here. */
export function silenceConsoleLog(): () => void {
  const original = console.log;
  console.log = () => undefined;
  return () => void (console.log = original);
}

async function runLibrary(config: PeerWorkerConfig): Promise<() => Promise<void>> {
  const dataSource = await initDb(dataSourceOptions(config.target, singleConnection('postgres')), { createTables: false });
  const elector = new LeaderElector({ dataSource, ns: config.ns, expireSeconds: config.expireSeconds, intervalMs: config.intervalMs });
  elector.on('elected', () => send({ type: 'elected', at: Date.now() }));
  elector.on('error', (error: Error) => send({ type: 'error', message: error.message }));
  await elector.start();
  return async () => {
    await elector.stop();
    await dataSource.destroy();
  };
}

async function runPeer(config: PeerWorkerConfig): Promise<() => Promise<void>> {
  silenceConsoleLog();
  const peer = loadPeer();
  const entity = peer.createLeaderLeaseEntity('public');
  const dataSource = await new DataSource({ ...dataSourceOptions(config.target, singleConnection('postgres')), entities: [entity as never] }).initialize();
  const core = await peer.LeaderElectorCore.create(dataSource, peerConfig(config, randomUUID()));
  let leading = false;
  const poll = setInterval(() => {
    const now = core.amILeader();
    if (now && !leading) send({ type: 'elected', at: Date.now() });
    leading = now;
  }, POLL_MS);
  return async () => {
    clearInterval(poll);
    await core.release();
  };
}

async function runPlpgsql(config: PeerWorkerConfig): Promise<() => Promise<void>> {
  const client = new Client({ connectionString: config.target.url });
  await client.connect();
  const id = randomUUID();
  let leading = false;
  const tick = async () => {
    try {
      const { rows } = await client.query({
        name: 'try_become_leader',
        text: 'SELECT try_become_leader($1, $2, $3) AS ok',
        values: [config.ns, id, config.expireSeconds],
      });
      const now = rows[0]?.ok === true;
      if (now && !leading) send({ type: 'elected', at: Date.now() });
      leading = now;
    } catch (error) {
      send({ type: 'error', message: (error as Error).message });
    }
  };
  await tick();
  const timer = setInterval(() => void tick(), config.intervalMs);
  return async () => {
    clearInterval(timer);
    await client.end();
  };
}

async function main(): Promise<void> {
  const config = JSON.parse(process.argv[2] ?? '') as PeerWorkerConfig;
  const run = { library: runLibrary, peer: runPeer, plpgsql: runPlpgsql }[config.implementation];
  const stop = await run(config);
  process.on('message', (message: { type: string }) => {
    if (message.type !== 'stop') return;
    send({ type: 'stopping', at: Date.now() });
    stop()
      .catch((error: Error) => send({ type: 'error', message: `stop: ${error.message}` }))
      // The peer keeps a cleanup interval it never clears: the process ends here.
      .finally(() => setTimeout(() => process.exit(0), 50));
  });
  send({ type: 'ready' });
}

// The suite imports the helpers above: the worker runs only as a forked process.
if (require.main === module) {
  main().catch((error: Error) => {
    send({ type: 'error', message: `start: ${error.stack ?? error.message}` });
    process.exitCode = 1;
    setTimeout(() => process.exit(1), 50);
  });
}
