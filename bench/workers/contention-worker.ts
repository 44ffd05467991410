/**
 * One contending candidate in a worker thread, with one connection of its own (as a separate
 * process would have): electing in a closed loop until a shared deadline, through the library or
 * through the baseline (lib/baseline.ts). Driven by messages from `suites/contention.ts`.
 */
import 'reflect-metadata';
import { parentPort, workerData } from 'worker_threads';
import { ElectionService, initDb } from 'gemstone-utils';
import type { DataSource } from 'typeorm';
import { openRaw, RawClient } from '../lib/baseline';
import { BenchTarget, dataSourceOptions, singleConnection } from '../lib/databases';

export interface ContentionWorkerData {
  target: BenchTarget;
  candidateId: string;
  expireSeconds: number;
}

export type ContentionCommand =
  | { type: 'open'; mode: 'library' | 'baseline' }
  | { type: 'run'; ns: string; measureFrom: number; until: number }
  | { type: 'close' };

export interface ContentionRunReport {
  type: 'ran';
  /** Latencies (ms) of the calls that started after `measureFrom`. */
  samples: number[];
  /** Calls that were led by this candidate (library only: the outcome says so). */
  ledCalls: number;
  errors: string[];
  /** The leader the last call returned (library only). */
  lastLeader: string | null;
  lastIsLeader: boolean;
}

const { target, candidateId, expireSeconds } = workerData as ContentionWorkerData;
let dataSource: DataSource | undefined;
let election: ElectionService | undefined;
let raw: RawClient | undefined;

async function open(mode: 'library' | 'baseline'): Promise<void> {
  if (mode === 'library') {
    dataSource = await initDb(dataSourceOptions(target, singleConnection(target.kind)), { createTables: false });
    election = new ElectionService(dataSource, { expireSeconds });
  } else {
    raw = await openRaw(target);
  }
}

async function close(): Promise<void> {
  if (dataSource) await dataSource.destroy();
  if (raw) await raw.close();
  dataSource = election = raw = undefined;
}

async function run(ns: string, measureFrom: number, until: number): Promise<ContentionRunReport> {
  const report: ContentionRunReport = { type: 'ran', samples: [], ledCalls: 0, errors: [], lastLeader: null, lastIsLeader: false };
  while (Date.now() < until) {
    const startedAt = Date.now();
    const start = performance.now();
    try {
      if (election) {
        const outcome = await election.electOutcome(candidateId, { ns });
        report.lastLeader = outcome.leaderId;
        report.lastIsLeader = outcome.isLeader;
        if (outcome.isLeader && startedAt >= measureFrom) report.ledCalls++;
      } else {
        await (raw as RawClient).elect(ns, candidateId, expireSeconds);
      }
      if (startedAt >= measureFrom) report.samples.push(performance.now() - start);
    } catch (error) {
      if (report.errors.length < 5) report.errors.push(String((error as Error)?.message ?? error));
      else report.errors.push('…');
    }
  }
  // One more call after the deadline, untimed: what this candidate sees at the end (a starved
  // thread may not have completed a call inside the window).
  if (election) {
    try {
      const outcome = await election.electOutcome(candidateId, { ns });
      report.lastLeader = outcome.leaderId;
      report.lastIsLeader = outcome.isLeader;
    } catch (error) {
      report.errors.push(`final elect: ${String((error as Error)?.message ?? error)}`);
    }
  }
  return report;
}

parentPort?.on('message', (command: ContentionCommand) => {
  const reply = (value: unknown) => parentPort?.postMessage(value);
  const fail = (error: unknown) => reply({ type: 'failed', error: String((error as Error)?.stack ?? error) });
  if (command.type === 'open') open(command.mode).then(() => reply({ type: 'opened' }), fail);
  if (command.type === 'run') run(command.ns, command.measureFrom, command.until).then(reply, fail);
  if (command.type === 'close') close().then(() => reply({ type: 'closed' }), fail);
});
