export { ElectionCandidate } from './ElectionCandidate';
export { ElectionLeader } from './ElectionLeader';
