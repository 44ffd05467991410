export { ElectionCandidate } from './ElectionCandidate';
export { ElectionLeader } from './ElectionLeader';
export { ElectionHistory } from './ElectionHistory';
export type { HistoryEndReason } from './ElectionHistory';
