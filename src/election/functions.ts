import { CandidateCallOptions, CandidateInfo, ElectionService, LeaderInfo } from './service';
import type { CallOptions } from './validate';
import { ValidationError } from '../errors';
import { checkWatchOptions, LeaderWatch, WatchFunctionOptions } from './observe/watch';
import type { GetHistoryOptions, HistoryEntry } from './observe/history';
import type { Session } from '../db/session';

/**
 * The module-level API: the same operations as {@link ElectionService}, bound to
 * one default service on `getDataSource()` (looked up at each call).
 */
export const defaultElectionService = new ElectionService();

/** Sets the expiry (seconds) of the default service. Default 60. */
export function setExpire(seconds: number): void {
  defaultElectionService.setExpire(seconds);
}
export const registerCandidate = (candidateId: string, options?: CandidateCallOptions): Promise<void> =>
  defaultElectionService.registerCandidate(candidateId, options);
export const heartbeat = (candidateId: string, options?: CandidateCallOptions): Promise<void> =>
  defaultElectionService.heartbeat(candidateId, options);
export const elect = (candidateId: string, options?: CandidateCallOptions): Promise<string | null> =>
  defaultElectionService.elect(candidateId, options);
export const isLeader = (candidateId: string, options?: CallOptions): Promise<boolean> =>
  defaultElectionService.isLeader(candidateId, options);
export const listCandidates = (options?: CallOptions): Promise<string[]> => defaultElectionService.listCandidates(options);
export const getCandidates = (options?: CallOptions): Promise<CandidateInfo[]> => defaultElectionService.getCandidates(options);
export const unregisterCandidate = (candidateId: string, options?: CallOptions): Promise<void> =>
  defaultElectionService.unregisterCandidate(candidateId, options);
export const getLeader = (options?: CallOptions): Promise<LeaderInfo | null> => defaultElectionService.getLeader(options);
export const resign = (candidateId: string, options?: CallOptions): Promise<boolean> =>
  defaultElectionService.resign(candidateId, options);
export const handOver = (candidateId: string, options?: CallOptions): Promise<boolean> =>
  defaultElectionService.handOver(candidateId, options);
export const assertLeader = (candidateId: string, options: CallOptions & { term?: number }): Promise<LeaderInfo> =>
  defaultElectionService.assertLeader(candidateId, options);
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
