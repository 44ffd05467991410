export { ElectionCandidate } from './ElectionCandidate';
export { ElectionLeader } from './ElectionLeader';
export { ElectionHistory } from './ElectionHistory';
export { ElectionRun } from './ElectionRun';
export type { HistoryEndReason } from './ElectionHistory';
