import { CandidateCallOptions, CandidateInfo, ElectionService, LeaderInfo } from './service';
import type { CallOptions } from './validate';
import { ValidationError } from '../errors';
import { checkWatchOptions, LeaderWatch, WatchFunctionOptions } from './observe/watch';
import type { GetHistoryOptions, HistoryEntry } from './observe/history';
import type { Session } from '../db/session';
import type { ScheduledRunInfo } from '../schedules/runs-store';
import type { GetRunsOptions } from '../schedules/validate';

/**
 * The module-level API: the same operations as {@link ElectionService}, bound to
 * one default service on `getDataSource()` (looked up at each call).
 */
export const defaultElectionService = new ElectionService();

/** Sets the expiry (seconds) of the default service. Default 60. */
export function setExpire(seconds: number): void {
  defaultElectionService.setExpire(seconds);
}
/** `ElectionService.registerCandidate` on the default service: creates or extends the candidate (`expires_at = now + expireSeconds`). */
export const registerCandidate = (candidateId: string, options?: CandidateCallOptions): Promise<void> =>
  defaultElectionService.registerCandidate(candidateId, options);
/** `ElectionService.heartbeat` on the default service: the same as {@link registerCandidate}. */
export const heartbeat = (candidateId: string, options?: CandidateCallOptions): Promise<void> =>
  defaultElectionService.heartbeat(candidateId, options);
/** `ElectionService.elect` on the default service: renews or takes the lease if it can; resolves to the leader after the call, or null when nobody leads. */
export const elect = (candidateId: string, options?: CandidateCallOptions): Promise<string | null> =>
  defaultElectionService.elect(candidateId, options);
/** `ElectionService.isLeader` on the default service: true only for the holder of an unexpired lease. */
export const isLeader = (candidateId: string, options?: CallOptions): Promise<boolean> =>
  defaultElectionService.isLeader(candidateId, options);
/** `ElectionService.listCandidates` on the default service: the active candidates' ids, sorted. */
export const listCandidates = (options?: CallOptions): Promise<string[]> => defaultElectionService.listCandidates(options);
/** `ElectionService.getCandidates` on the default service: the active candidates with their priority, eligibility and metadata. */
export const getCandidates = (options?: CallOptions): Promise<CandidateInfo[]> => defaultElectionService.getCandidates(options);
/** `ElectionService.unregisterCandidate` on the default service: deletes the candidate, vacating the lease if it held it. */
export const unregisterCandidate = (candidateId: string, options?: CallOptions): Promise<void> =>
  defaultElectionService.unregisterCandidate(candidateId, options);
/** `ElectionService.getLeader` on the default service: the holder of the unexpired lease, or null. */
export const getLeader = (options?: CallOptions): Promise<LeaderInfo | null> => defaultElectionService.getLeader(options);
/** `ElectionService.resign` on the default service: steps down, staying a candidate; true only if the caller held an unexpired lease. */
export const resign = (candidateId: string, options?: CallOptions): Promise<boolean> =>
  defaultElectionService.resign(candidateId, options);
/** `ElectionService.handOver` on the default service: `resign`, recorded in the history as `handed-over`. */
export const handOver = (candidateId: string, options?: CallOptions): Promise<boolean> =>
  defaultElectionService.handOver(candidateId, options);
/** `ElectionService.assertLeader` on the default service: the fencing check, inside the transaction of `options.session`. */
export const assertLeader = (candidateId: string, options: CallOptions & { term?: number }): Promise<LeaderInfo> =>
  defaultElectionService.assertLeader(candidateId, options);
/** `ElectionService.getRuns` on the default service: the runs of schedules, newest slot first. */
export const getRuns = (options?: GetRunsOptions & { session?: Session }): Promise<ScheduledRunInfo[]> => defaultElectionService.getRuns(options);
/** `ElectionService.getHistory` on the default service: the terms of a namespace, newest first. */
export const getHistory = (options?: GetHistoryOptions & { session?: Session }): Promise<HistoryEntry[]> =>
  defaultElectionService.getHistory(options);

/**
 * {@link ElectionService.watch} on `options.dataSource`, or on the default service
 * (`getDataSource()`) without one.
 */
export function watch(options?: WatchFunctionOptions): LeaderWatch {
  const { dataSource, ns, signal, pollMs, onError } = checkWatchOptions(options, ['dataSource']);
  if (dataSource === undefined) return defaultElectionService.watch({ ns, signal, pollMs, onError });
  if (typeof dataSource !== 'object' || dataSource === null || typeof (dataSource as { createQueryRunner?: unknown }).createQueryRunner !== 'function') {
    throw new ValidationError('options.dataSource', 'must be a TypeORM DataSource (or omitted for the default from initDb)');
  }
  return new ElectionService(dataSource as WatchFunctionOptions['dataSource']).watch({ ns, signal, pollMs, onError });
}
