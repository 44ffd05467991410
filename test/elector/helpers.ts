import type { DataSource } from 'typeorm';
import { LeaderElector, Lease, LeaderElectorOptions, LeaderElectorError, DemotionReason } from 'gemstone-utils';
import { sleep } from '../support/databases';

/** Polls until `predicate` holds; fails with `what` after `timeoutMs`. */
export async function waitFor(what: string, predicate: () => boolean | Promise<boolean>, timeoutMs = 10_000, stepMs = 10): Promise<number> {
  const started = performance.now();
  for (;;) {
    if (await predicate()) return performance.now() - started;
    if (performance.now() - started > timeoutMs) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await sleep(stepMs);
  }
}

export type Recorded =
  | { kind: 'started'; term: number; aborted: boolean; isLeader: boolean }
  | { kind: 'stopped'; term: number; aborted: boolean; isLeader: boolean; reason: string | undefined }
  | { kind: 'elected'; term: number }
  | { kind: 'demoted'; term: number; reason: DemotionReason }
  | { kind: 'leader'; leaderId: string | null; term: number | null }
  | { kind: 'newLeader'; leaderId: string | null; term: number | null }
  | { kind: 'error'; error: LeaderElectorError };

/** An elector whose callbacks and events are all recorded, in order. */
export function recordingElector(dataSource: DataSource, options: LeaderElectorOptions = {}): { elector: LeaderElector; log: Recorded[] } {
  const log: Recorded[] = [];
  // eslint-disable-next-line prefer-const
  let elector: LeaderElector;
  const reasonOf = (lease: Lease) => (lease.signal.reason as { reason?: string } | undefined)?.reason;
  elector = new LeaderElector({
    dataSource,
    onStartedLeading: (lease) => {
      log.push({ kind: 'started', term: lease.term, aborted: lease.signal.aborted, isLeader: elector.isLeader });
    },
    onStoppedLeading: (lease) => {
      log.push({ kind: 'stopped', term: lease.term, aborted: lease.signal.aborted, isLeader: elector.isLeader, reason: reasonOf(lease) });
    },
    onNewLeader: (leaderId, term) => {
      log.push({ kind: 'newLeader', leaderId, term });
    },
    ...options,
  });
  elector.on('elected', (lease) => log.push({ kind: 'elected', term: lease.term }));
  elector.on('demoted', (lease, reason) => log.push({ kind: 'demoted', term: lease.term, reason }));
  elector.on('leader', (leaderId, term) => log.push({ kind: 'leader', leaderId, term }));
  elector.on('error', (error) => log.push({ kind: 'error', error }));
  return { elector, log };
}

export const kinds = (log: Recorded[], ...only: Recorded['kind'][]) => log.filter((r) => only.includes(r.kind)).map((r) => r.kind);

/** Blocks the event loop (no timer, no I/O callback runs) for `ms`. */
export function blockEventLoop(ms: number): void {
  const until = performance.now() + ms;
  while (performance.now() < until) {
    // spin
  }
}

export function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
}
