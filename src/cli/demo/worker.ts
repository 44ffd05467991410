/**
 * One demo worker process (forked by the supervisor in `supervisor.ts`): a LeaderElector plus a
 * leader-only job that appends to the demo ledger, fenced by `assertLeader` with its term.
 */
import 'reflect-metadata';
import type { DataSource } from 'typeorm';
import { initDb } from '../../db/init-db';
import { contextOf } from '../../db/context';
import { withTransaction } from '../../db/transaction';
import { NotLeaderError } from '../../errors';
import { ElectionService, LeaderElector } from '../../election';
import { expectLocalElection } from '../../db/sqlite-warning';
import type { Lease } from '../../election';
import { createPrometheusMetrics } from '../../metrics';
import { oneLine } from '../errors';
import { cliOptions } from '../target';
import { appendEntry, recordTerm } from './ledger';
import type { SupervisorMessage, WorkerConfig, WorkerMessage } from './messages';

const config = JSON.parse(process.argv[2] ?? '{}') as WorkerConfig;
/** How often a worker checks that its supervisor is still its parent. */
const PARENT_CHECK_MS = 500;
/** Longest a stopping worker waits for its hand-over before it exits anyway. */
const STOP_LIMIT_MS = 10_000;
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

function send(message: WorkerMessage): void {
  if (process.connected) process.send?.(message);
}

let stopping = false;
let elector: LeaderElector | undefined;
let dataSource: DataSource | undefined;
/** The job loop (see main): stop() lets it finish before destroying the DataSource it writes through. */
let working: Promise<void> | undefined;

/** Term history entries, once per term: written by the new leader under fencing, right after acquisition. */
const recordedTerms = new Map<number, Promise<boolean>>();

function ensureTermRecorded(service: ElectionService, lease: Lease): Promise<boolean> {
  let recorded = recordedTerms.get(lease.term);
  if (!recorded) {
    const key = { runId: config.runId, ns: config.ns, term: lease.term, leaderId: config.candidateId };
    recorded = withTransaction(dataSource!, async (m) => {
      await service.assertLeader(config.candidateId, { ns: config.ns, term: lease.term, session: m });
      return recordTerm(m, contextOf(dataSource!), key);
    }).catch((error: unknown) => {
      if (error instanceof NotLeaderError) return false; // already superseded: no writes under this term
      send({ kind: 'error', message: `recording term ${lease.term}: ${oneLine(error)}` });
      recordedTerms.delete(lease.term); // a database hiccup: the next job tries again
      return false;
    });
    recordedTerms.set(lease.term, recorded);
  }
  return recorded;
}

/**
 * The leader-only job: "work" for a while, then commit a ledger entry. Deliberately no local
 * check of the lease before the commit: a process paused mid-job (GC, SIGSTOP, a slow disk)
 * would pass it and then write late. `assertLeader` in the same transaction is what refuses it.
 */
async function job(service: ElectionService, lease: Lease): Promise<void> {
  if (!(await ensureTermRecorded(service, lease))) return;
  send({ kind: 'working', term: lease.term });
  await sleep(config.workMs);
  const key = { runId: config.runId, ns: config.ns, term: lease.term, leaderId: config.candidateId };
  try {
    // withTransaction (not dataSource.transaction): on SQLite it shares the connection with the
    // elector's ticks, so it takes the library's in-process lock and retries a busy database.
    const entryId = await withTransaction(dataSource!, async (m) => {
      if (!config.unfenced) await service.assertLeader(config.candidateId, { ns: config.ns, term: lease.term, session: m });
      return appendEntry(m, contextOf(dataSource!), key);
    });
    send({ kind: 'wrote', term: lease.term, entryId });
  } catch (error) {
    if (error instanceof NotLeaderError) send({ kind: 'fenced', term: lease.term, currentTerm: error.term, leaderId: error.leaderId });
    else send({ kind: 'error', message: `ledger write: ${oneLine(error)}` });
  }
}

async function stop(code: number): Promise<never> {
  if (!stopping) {
    stopping = true;
    // A hand-over that hangs (database gone) must not keep an orphan alive.
    setTimeout(() => process.exit(code), STOP_LIMIT_MS).unref();
    await elector?.stop().catch(() => undefined);
    // A job under way ends with its (fenced) write, a term being recorded with its own; none starts any more.
    await working?.catch(() => undefined);
    await Promise.all(recordedTerms.values());
    if (dataSource?.isInitialized) await dataSource.destroy().catch(() => undefined);
    send({ kind: 'stopped' });
  }
  process.exit(code);
}

async function main(): Promise<void> {
  // Ctrl-C and a closed terminal's SIGHUP reach the whole process group: the supervisor decides
  // when workers stop (SIGTERM), after it has seen them hand over.
  process.on('SIGINT', () => undefined);
  process.on('SIGHUP', () => undefined);
  process.on('SIGTERM', () => void stop(0));
  process.on('disconnect', () => void stop(0)); // the supervisor is gone (even SIGKILLed: its end of the channel closes)
  // Belt and braces for the channel: a worker re-parented away from its supervisor stops too.
  const parent = process.ppid;
  setInterval(() => {
    if (process.ppid !== parent || !process.connected) void stop(0);
  }, PARENT_CHECK_MS).unref();

  dataSource = await initDb(cliOptions(config.url), { createTables: false });
  // The demo's workers are processes of this machine by design: no warning that SQLite is local.
  expectLocalElection(dataSource);
  const service = new ElectionService(dataSource, { expireSeconds: config.expireSeconds });
  elector = new LeaderElector({
    dataSource,
    ns: config.ns,
    candidateId: config.candidateId,
    expireSeconds: config.expireSeconds,
    // Record the term at once: the history's start instant is the leader row's acquisition time.
    onStartedLeading: (lease) => void ensureTermRecorded(service, lease),
  });
  elector.on('elected', (lease) => send({ kind: 'elected', term: lease.term }));
  elector.on('demoted', (lease, reason) => send({ kind: 'demoted', term: lease.term, reason }));
  elector.on('leader', (leaderId, term) => send({ kind: 'leader', leaderId, term }));
  elector.on('error', (error) => send({ kind: 'error', message: oneLine(error) }));
  if (config.metrics) serveMetricsToSupervisor(elector);
  await elector.start();
  send({ kind: 'ready', candidateId: elector.candidateId });

  const leader = elector;
  working = (async () => {
    while (!stopping) {
      const ran = await leader.runIfLeader((lease) => job(service, lease).then(() => true));
      if (!stopping) await sleep(ran ? config.gapMs : 50);
    }
  })();
  await working;
}

/** `--metrics-port`: this worker's election metrics, sent to the supervisor when it is scraped. */
function serveMetricsToSupervisor(observed: LeaderElector): void {
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  const { Registry } = require('prom-client') as typeof import('prom-client');
  const registry = new Registry();
  createPrometheusMetrics({ registry }).attach(observed);
  process.on('message', (message: SupervisorMessage) => {
    if (message.kind !== 'metrics-request') return;
    registry.getMetricsAsJSON().then(
      (metrics) => send({ kind: 'metrics', requestId: message.requestId, metrics }),
      (error: unknown) => send({ kind: 'error', message: `metrics: ${oneLine(error)}` }),
    );
  });
}

main().catch((error: unknown) => {
  send({ kind: 'error', message: `worker failed: ${oneLine(error)}` });
  void stop(1);
});
