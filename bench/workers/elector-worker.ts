/**
 * A worker process running one LeaderElector, as a service would (`suites/failover.ts` forks it
 * and kills it or asks it to stop). Reports over IPC, with wall-clock timestamps (all processes
 * are on the same host, so they share the clock):
 * ready · elected(term, at) · demoted(term, reason, at) · error(message) · stopping(at) · stopped(at).
 */
import 'reflect-metadata';
import { initDb, LeaderElector } from 'gemstone-utils';
import { BenchTarget, dataSourceOptions, singleConnection } from '../lib/databases';

export interface ElectorWorkerConfig {
  target: BenchTarget;
  ns: string;
  expireSeconds: number;
  intervalMs: number;
}

export type ElectorWorkerMessage =
  | { type: 'ready'; candidateId: string }
  | { type: 'elected'; term: number; at: number }
  | { type: 'demoted'; term: number; reason: string; at: number }
  | { type: 'error'; message: string }
  | { type: 'stopping'; at: number }
  | { type: 'stopped'; at: number };

const send = (message: ElectorWorkerMessage) => process.send?.(message);

async function main(): Promise<void> {
  const config = JSON.parse(process.argv[2] ?? '') as ElectorWorkerConfig;
  const dataSource = await initDb(dataSourceOptions(config.target, singleConnection(config.target.kind)), { createTables: false });
  const elector = new LeaderElector({
    dataSource,
    ns: config.ns,
    expireSeconds: config.expireSeconds,
    intervalMs: config.intervalMs,
  });
  elector.on('elected', (lease) => send({ type: 'elected', term: lease.term, at: Date.now() }));
  elector.on('demoted', (lease, reason) => send({ type: 'demoted', term: lease.term, reason, at: Date.now() }));
  elector.on('error', (error: Error) => send({ type: 'error', message: error.message }));
  process.on('message', (message: { type: string }) => {
    if (message.type !== 'stop') return;
    send({ type: 'stopping', at: Date.now() });
    elector
      .stop()
      .then(() => send({ type: 'stopped', at: Date.now() }))
      .catch((error: Error) => send({ type: 'error', message: `stop: ${error.message}` }))
      .finally(() => dataSource.destroy().finally(() => process.disconnect?.()));
  });
  await elector.start();
  send({ type: 'ready', candidateId: elector.candidateId });
}

main().catch((error: Error) => {
  send({ type: 'error', message: `start: ${error.stack ?? error.message}` });
  process.exitCode = 1;
  process.disconnect?.();
});
