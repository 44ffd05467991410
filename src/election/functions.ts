import { ElectionService, LeaderInfo } from './service';
import type { CallOptions } from './validate';

/**
 * The module-level API of the spec (`gemstone_utils.election`): the same operations, bound to
 * one default service on `getDataSource()` (looked up at each call).
 */
export const defaultElectionService = new ElectionService();

/** Sets the expiry (seconds) of the default service. Default 60. */
export function setExpire(seconds: number): void {
  defaultElectionService.setExpire(seconds);
}
export const registerCandidate = (candidateId: string, options?: CallOptions): Promise<void> =>
  defaultElectionService.registerCandidate(candidateId, options);
export const heartbeat = (candidateId: string, options?: CallOptions): Promise<void> =>
  defaultElectionService.heartbeat(candidateId, options);
export const elect = (candidateId: string, options?: CallOptions): Promise<string> =>
  defaultElectionService.elect(candidateId, options);
export const isLeader = (candidateId: string, options?: CallOptions): Promise<boolean> =>
  defaultElectionService.isLeader(candidateId, options);
export const listCandidates = (options?: CallOptions): Promise<string[]> => defaultElectionService.listCandidates(options);
export const unregisterCandidate = (candidateId: string, options?: CallOptions): Promise<void> =>
  defaultElectionService.unregisterCandidate(candidateId, options);
export const getLeader = (options?: CallOptions): Promise<LeaderInfo | null> => defaultElectionService.getLeader(options);
export const resign = (candidateId: string, options?: CallOptions): Promise<boolean> =>
  defaultElectionService.resign(candidateId, options);
export const assertLeader = (candidateId: string, options: CallOptions & { term?: number }): Promise<LeaderInfo> =>
  defaultElectionService.assertLeader(candidateId, options);
