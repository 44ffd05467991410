/**
 * `gemstone-utils/election` — SQL-backed leader election. Importing this module registers the
 * election tables on the shared base (`GemstoneDB`), so `initDb` creates them.
 * @packageDocumentation
 * @module gemstone-utils/election
 */
import 'reflect-metadata';
// The database folders register their dialects (see src/databases/registry.ts).
import '../databases';
import { GemstoneDB } from '../db/registry';
import { ElectionCandidate, ElectionHistory, ElectionLeader, ElectionRun } from '../../entities';
import { electionMigrations } from '../../migrations';
import { electionTables } from './schema';

GemstoneDB.register({ entities: [ElectionCandidate, ElectionLeader, ElectionHistory, ElectionRun], migrations: electionMigrations, installers: [electionTables] });

export { ElectionCandidate, ElectionLeader, ElectionHistory, ElectionRun };
export type { HistoryEndReason } from '../../entities';
export {
  GemstoneElectionTables1763683200000,
  GemstoneElectionIdentity1795392000000,
  GemstoneElectionRuns1796256000000,
  GemstoneElectionLeanHeartbeat1797120000000,
  electionMigrations,
} from '../../migrations';
export { ElectionService } from './service';
export type { ElectionServiceOptions, LeaderInfo, CandidateInfo, CandidateCallOptions } from './service';
export type { GuardedTable, GuardTableOptions, UnguardTableOptions } from './guards';
export type { OperatorLease, OperatorOptions } from './operator';
export type { ElectOutcome } from './rows';
export {
  defaultElectionService,
  setExpire,
  registerCandidate,
  heartbeat,
  elect,
  isLeader,
  listCandidates,
  getCandidates,
  unregisterCandidate,
  getLeader,
  resign,
  handOver,
  assertLeader,
  watch,
  getHistory,
  getRuns,
} from './functions';
export { DEFAULT_HISTORY_LIMIT, MAX_HISTORY_LIMIT, DEFAULT_HISTORY_RETENTION_SECONDS } from './observe/history';
export type { HistoryEntry, GetHistoryOptions } from './observe/history';
export type { RunState, ScheduledRunInfo } from '../schedules/runs-store';
export { DEFAULT_RUNS_LIMIT, MAX_RUNS_LIMIT } from '../schedules/validate';
export type { GetRunsOptions, RunsCursor } from '../schedules/validate';
export type { Schedule } from '../schedules/schedule';
export type { ScheduleOptions, CatchUp, Overlap } from '../schedules/options';
export type { ScheduleRunEnded, EndedRunState } from '../schedules/run-ended';
export { DEFAULT_CATCH_UP_WINDOW_MS, DEFAULT_MAX_ATTEMPTS, MIN_CATCH_UP_WINDOW_MS, MIN_EVERY_MS } from '../schedules/options';
export type { ScheduledRun } from '../schedules/scheduled-run';
export { RunTransactionUsedError } from '../schedules/scheduled-run';
export { MAX_CATCH_UP_RUNS, MAX_MISSED_RECORDED } from '../schedules/catch-up';
export { LeaderWatch, DEFAULT_WATCH_POLL_MS, MAX_WATCH_POLL_MS, DEFAULT_WATCH_RETRY_MAX_MS } from './observe/watch';
export type { LeaderChange, WatchOptions, WatchFunctionOptions } from './observe/watch';
export type { CallOptions, CandidateOptions, CandidateMetadata, JsonValue } from './validate';
export {
  DEFAULT_NS,
  DEFAULT_EXPIRE_SECONDS,
  MIN_EXPIRE_SECONDS,
  MAX_EXPIRE_SECONDS,
  MAX_NS_LENGTH,
  MAX_METADATA_BYTES,
  DEFAULT_PRIORITY,
  DEFAULT_ELIGIBLE,
  MIN_PRIORITY,
  MAX_PRIORITY,
} from './validate';
export { CANDIDATE_TABLE, LEADER_TABLE, HISTORY_TABLE, RUN_TABLE, DDL_LOCK_TIMEOUT_MS, DDL_LOCK_ATTEMPTS } from './schema';
export { NOTIFY_CHANNEL } from './observe/listen-options';
export type { LeaseChange } from './observe/listen-options';
export type { Session } from '../db/session';
export { GemstoneError, ValidationError, NotLeaderError, NotInitializedError, SqliteTransactionOpenError, SessionRequiredError } from '../errors';
export { LeaderElector, LeadershipEndedError, LeaderElectorError } from './loop/elector';
export type { DemotionReason, ElectorErrorPhase, LeaderElectorEvents, NotificationsState } from './loop/elector';
export { LeaderElectorGroup, LeaderElectorGroupError } from './loop/group';
export type { LeaderElectorGroupEvents } from './loop/group';
export { DEFAULT_GROUP_BALANCE, GROUP_BATCH_SIZE } from './loop/group-options';
export type { LeaderElectorGroupOptions, GroupTick } from './loop/group-options';
export type { ElectorHealth, ElectorRole } from './loop/health';
export type { ElectorTick, TickOutcome, ClockSkew } from './loop/tick';
export {
  MAX_INTERVAL_MS,
  TICK_JITTER,
  PRUNE_INTERVAL_MS,
  DEFAULT_CLOCK_SKEW_WARNING_SECONDS,
  DEFAULT_STOP_TIMEOUT_MS,
  defaultElectorMetadata,
} from './loop/elector-options';
export { pruneExpiredCandidates, pruneHistory, pruneRuns, DEFAULT_CANDIDATE_RETENTION_SECONDS, DEFAULT_RUN_RETENTION_SECONDS, PRUNE_BATCH_ROWS, PRUNE_MAX_BATCHES } from './prune';
export type { PruneRunsOptions } from './prune';
export type { PruneExpiredCandidatesOptions, PruneHistoryOptions } from './prune';
export type { Lease, LeaderElectorOptions, ElectorLogger } from './loop/elector-options';
export type { MonotonicClock } from './loop/monotonic';
export { stopOnSignals, DEFAULT_SHUTDOWN_SIGNALS, DEFAULT_SHUTDOWN_TIMEOUT_MS } from './loop/shutdown';
export type { StopOnSignalsOptions, Stoppable } from './loop/shutdown';
export {
  DEFAULT_LISTEN_RECONNECT_MIN_MS,
  DEFAULT_LISTEN_RECONNECT_MAX_MS,
  DEFAULT_LISTEN_CONNECT_TIMEOUT_MS,
  DEFAULT_LISTEN_PROBE_TIMEOUT_MS,
  LISTEN_APPLICATION_NAME,
  LISTEN_DOWN_REPORT_INTERVAL_MS,
} from './observe/listen-options';
