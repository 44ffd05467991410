import 'reflect-metadata';
/**
 * `gemstone-utils/election` — SQL-backed leader election. Importing this module registers the
 * election tables on the shared base (`GemstoneDB`), so `initDb` creates them.
 * @packageDocumentation
 */
import { GemstoneDB } from '../db/registry';
import { ElectionCandidate, ElectionLeader } from '../../entities';
import { electionMigrations } from '../../migrations';
import { electionTables } from './schema';

GemstoneDB.register({ entities: [ElectionCandidate, ElectionLeader], migrations: electionMigrations, installers: [electionTables] });

export { ElectionCandidate, ElectionLeader };
export { GemstoneElectionTables1763683200000, electionMigrations } from '../../migrations';
export { ElectionService } from './service';
export type { ElectionServiceOptions, ElectOutcome, LeaderInfo } from './service';
export {
  defaultElectionService,
  setExpire,
  registerCandidate,
  heartbeat,
  elect,
  isLeader,
  listCandidates,
  unregisterCandidate,
  getLeader,
  resign,
  assertLeader,
} from './functions';
export type { CallOptions } from './validate';
export { DEFAULT_NS, DEFAULT_EXPIRE_SECONDS, MAX_EXPIRE_SECONDS, MAX_NS_LENGTH } from './validate';
export { CANDIDATE_TABLE, LEADER_TABLE } from './schema';
export { NOTIFY_CHANNEL } from './store';
export type { LeaseChange } from './store';
export type { Session } from '../db/session';
export { GemstoneError, ValidationError, NotLeaderError, NotInitializedError } from '../errors';
export { LeaderElector, LeadershipEndedError, LeaderElectorError } from './elector';
export type { DemotionReason, ElectorErrorPhase, LeaderElectorEvents } from './elector';
export { MAX_INTERVAL_MS, TICK_JITTER } from './elector-options';
export type { Lease, LeaderElectorOptions, ElectorLogger } from './elector-options';
export type { MonotonicClock } from './monotonic';
export { stopOnSignals, DEFAULT_SHUTDOWN_SIGNALS, DEFAULT_SHUTDOWN_TIMEOUT_MS } from './shutdown';
export type { StopOnSignalsOptions, Stoppable } from './shutdown';
export { DEFAULT_LISTEN_RECONNECT_MIN_MS, DEFAULT_LISTEN_RECONNECT_MAX_MS, DEFAULT_LISTEN_CONNECT_TIMEOUT_MS, LISTEN_APPLICATION_NAME } from './pg-listener';
