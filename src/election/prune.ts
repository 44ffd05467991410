import type { DataSource } from 'typeorm';
import { contextOf } from '../db/context';
import { dataSourceOfSession, runnerOf, Session } from '../db/session';
import { partsOf } from '../databases/parts';
import { raw, sql, SqlFragment } from '../db/sql';
import { ValidationError, shown } from '../errors';
import { assertEntitiesRegistered } from './entities-check';
import { DEFAULT_HISTORY_RETENTION_SECONDS } from './observe/history';
import { CANDIDATE_TABLE, HISTORY_TABLE, RUN_TABLE } from './tables';
import { checkOptions } from './validate';

/** How long a candidate row stays after it expired before pruning deletes it: 86400 s (one day). */
export const DEFAULT_CANDIDATE_RETENTION_SECONDS = 86_400;
/** Rows one prune statement deletes at most (500): each statement stays short. */
export const PRUNE_BATCH_ROWS = 500;
/** Statements one `pruneExpiredCandidates` call runs at most (20): a call stays bounded. */
export const PRUNE_MAX_BATCHES = 20;
/** How long a finished run of a schedule stays before pruning deletes it: 2592000 s (30 days), as history. */
export const DEFAULT_RUN_RETENTION_SECONDS = 30 * 86_400;
/** The longest accepted retention: ten years. */
const MAX_RETENTION_SECONDS = 10 * 365 * 86_400;

/** Options of {@link pruneHistory}. */
export interface PruneHistoryOptions {
  /** Seconds a term must have been ended before its row is deleted. Default {@link DEFAULT_HISTORY_RETENTION_SECONDS} (30 days). */
  readonly retentionSeconds?: number;
  /** Run inside this transaction (QueryRunner or EntityManager) instead of statements of its own. */
  readonly session?: Session;
}

/** Options of {@link pruneRuns}. */
export interface PruneRunsOptions {
  /** Seconds a run must have been finished before its row is deleted. Default {@link DEFAULT_RUN_RETENTION_SECONDS} (30 days). */
  readonly retentionSeconds?: number;
  /** Run inside this transaction (QueryRunner or EntityManager) instead of statements of its own. */
  readonly session?: Session;
}

/** The options of {@link pruneExpiredCandidates}. */
export interface PruneExpiredCandidatesOptions {
  /** Seconds a candidate row must have been expired before it is deleted. Default {@link DEFAULT_CANDIDATE_RETENTION_SECONDS}. */
  readonly retentionSeconds?: number;
  /** Run inside this transaction (QueryRunner or EntityManager) instead of statements of its own. */
  readonly session?: Session;
}

/** Validates a retention in seconds: finite, >= 0, at most ten years. */
export function checkRetentionSeconds(value: unknown, parameter: string): number {
  if (typeof value !== 'number' || !Number.isFinite(value) || value < 0 || value > MAX_RETENTION_SECONDS) {
    throw new ValidationError(parameter, `must be a finite number of seconds >= 0 and <= ${MAX_RETENTION_SECONDS} (got ${shown(value)})`);
  }
  return value;
}

const LIMIT = raw(String(PRUNE_BATCH_ROWS));

/**
 * What one prune deletes: rows of `table` whose `column` (an instant) is older than the
 * retention, and whose `also` column (an instant) is too when given; `key` orders the batch.
 */
interface PruneTarget {
  readonly table: string;
  readonly column: 'expires_at' | 'ended_at' | 'slot';
  readonly also?: 'finished_at';
  readonly key: readonly string[];
}

const CANDIDATES: PruneTarget = { table: CANDIDATE_TABLE, column: 'expires_at', key: ['ns', 'candidate_id'] };
const HISTORY: PruneTarget = { table: HISTORY_TABLE, column: 'ended_at', key: ['ns', 'term'] };
/**
 * Runs finished before the cutoff. A run finishes after its slot, so its slot is before the
 * cutoff too: the range on `slot` is what the index `(slot DESC, ns, name, finished_at)` finds, `finished_at`
 * the condition that decides. A running run (`finished_at` null) is never deleted.
 */
const RUNS: PruneTarget = { table: RUN_TABLE, column: 'slot', also: 'finished_at', key: ['ns', 'name', 'slot'] };

/**
 * One batch; only the target table is touched, so the leader row is never locked. The cutoff is
 * the database clock's, and each database deletes and counts a batch its own way.
 */
async function pruneBatch(dataSource: DataSource, session: Session | undefined, retention: number, target: PruneTarget): Promise<number> {
  const context = contextOf(dataSource);
  const { prune } = partsOf(context);
  const table = context.table(target.table);
  const column = raw(target.column);
  const key = raw(target.key.join(', '));
  const before = prune.cutoff(retention);
  const also: SqlFragment = target.also === undefined ? sql`` : sql` AND ${raw(target.also)} < ${before}`;
  return prune.deleteBatch(dataSource, session, { table, column, key, before, limit: LIMIT, also });
}

/** Validates the arguments of a prune function; returns the retention and session. */
function checkPruneArguments(
  dataSource: DataSource,
  options: unknown,
  defaultRetention: number,
  needs: 'election' | 'runs' = 'election',
): { retention: number; session: Session | undefined } {
  if (typeof dataSource !== 'object' || dataSource === null || typeof (dataSource as DataSource).createQueryRunner !== 'function') {
    throw new ValidationError('dataSource', 'must be a TypeORM DataSource');
  }
  const o = checkOptions(options, ['retentionSeconds', 'session']);
  const retention = o.retentionSeconds === undefined ? defaultRetention : checkRetentionSeconds(o.retentionSeconds, 'options.retentionSeconds');
  const session = o.session as Session | undefined;
  runnerOf(session);
  if (session !== undefined && dataSourceOfSession(session) !== dataSource) {
    throw new ValidationError('options.session', 'belongs to a different DataSource than `dataSource`');
  }
  if (!dataSource.isInitialized) {
    throw new ValidationError('dataSource', 'is not initialized: call `await initDb(dataSource)` first');
  }
  assertEntitiesRegistered(dataSource, needs);
  return { retention, session };
}

async function pruneInBatches(dataSource: DataSource, session: Session | undefined, retention: number, target: PruneTarget): Promise<number> {
  let total = 0;
  for (let batch = 0; batch < PRUNE_MAX_BATCHES; batch++) {
    const deleted = await pruneBatch(dataSource, session, retention, target);
    total += deleted;
    if (deleted < PRUNE_BATCH_ROWS) break;
  }
  return total;
}

/**
 * Deletes candidate rows (every namespace) whose `expires_at` passed more than `retentionSeconds`
 * ago by the database clock, in batches of at most {@link PRUNE_BATCH_ROWS} rows per statement
 * and at most {@link PRUNE_MAX_BATCHES} statements per call; returns how many rows it deleted.
 * Leases are not touched. A `LeaderElector` calls it by itself (see `candidateRetentionSeconds`).
 */
export async function pruneExpiredCandidates(dataSource: DataSource, options?: PruneExpiredCandidatesOptions): Promise<number> {
  const { retention, session } = checkPruneArguments(dataSource, options, DEFAULT_CANDIDATE_RETENTION_SECONDS);
  return pruneInBatches(dataSource, session, retention, CANDIDATES);
}

/**
 * Deletes history rows (every namespace) of terms that ended more than `retentionSeconds` ago
 * (default {@link DEFAULT_HISTORY_RETENTION_SECONDS}, 30 days) by the database clock, in the same
 * bounded batches as {@link pruneExpiredCandidates}; returns how many rows it deleted. Current
 * terms (`ended_at` null) are never deleted, and the leader row is never locked. A
 * `LeaderElector` calls it by itself (see `historyRetentionSeconds`).
 */
export async function pruneHistory(dataSource: DataSource, options?: PruneHistoryOptions): Promise<number> {
  const { retention, session } = checkPruneArguments(dataSource, options, DEFAULT_HISTORY_RETENTION_SECONDS);
  return pruneInBatches(dataSource, session, retention, HISTORY);
}

/**
 * Deletes the rows of schedule runs (every namespace) that finished more than `retentionSeconds`
 * ago (default {@link DEFAULT_RUN_RETENTION_SECONDS}, 30 days) by the database clock, in the same
 * bounded batches as {@link pruneExpiredCandidates}; returns how many rows it deleted. A running
 * run is never deleted, and the leader row is never locked. A `LeaderElector` calls it by itself
 * (see `runRetentionSeconds`). Keep the retention longer than any schedule's catch-up window: a
 * new leader looks back at the newest recorded slot of each schedule.
 */
export async function pruneRuns(dataSource: DataSource, options?: PruneRunsOptions): Promise<number> {
  const { retention, session } = checkPruneArguments(dataSource, options, DEFAULT_RUN_RETENTION_SECONDS, 'runs');
  return pruneInBatches(dataSource, session, retention, RUNS);
}
