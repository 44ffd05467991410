import type { EntityManager } from 'typeorm';
import type { DbContext } from '../../db/context';
import { execute } from '../../db/session';
import { raw, sql, SqlFragment } from '../../db/sql';
import { ValidationError, shown } from '../../errors';
import { CANDIDATE_TABLE, HISTORY_TABLE, LEADER_TABLE } from '../schema';
import { checkNs, checkOptions, parseMetadata } from '../validate';
import { HISTORY_END_REASONS, type HistoryEndReason } from '../../../entities/ElectionHistory';
import type { VacateReason } from '../decision';

export type { HistoryEndReason };

export type { VacateReason };

/** One term of a namespace, as `getHistory` returns it. */
export interface HistoryEntry {
  /** The namespace. */
  readonly ns: string;
  /** The term: one row per term, numbered from 1. */
  readonly term: number;
  /** The candidate that held the lease during this term. */
  readonly leaderId: string;
  /** When the lease was acquired (database clock). */
  readonly acquiredAt: Date;
  /** When the term ended (database clock): the instant of a resign/unregister/hand-over, or the end of an expired lease; null while current. */
  readonly endedAt: Date | null;
  /** Why it ended; null while current. */
  readonly endReason: HistoryEndReason | null;
}

/** Terms `getHistory` returns unless `limit` says otherwise: 100. */
export const DEFAULT_HISTORY_LIMIT = 100;
/** The largest accepted `limit`: 10000. */
export const MAX_HISTORY_LIMIT = 10_000;
/** How long an ended term stays in the history before pruning deletes it: 2592000 s (30 days). */
export const DEFAULT_HISTORY_RETENTION_SECONDS = 30 * 86_400;

/** Options of `getHistory`. */
export interface GetHistoryOptions {
  /** Namespace. Default `"default"`. */
  readonly ns?: string;
  /** At most this many terms, newest first. Default {@link DEFAULT_HISTORY_LIMIT} (100); 1 to {@link MAX_HISTORY_LIMIT}. */
  readonly limit?: number;
  /** Only terms below this one (to page backwards: pass the last term you got). Default: none. */
  readonly before?: number;
}

export interface CheckedHistoryQuery {
  ns: string;
  limit: number;
  before: number | undefined;
}

/** Validates {@link GetHistoryOptions} (plus `extra` keys the caller handles). */
export function checkHistoryOptions(value: unknown, extra: readonly string[] = []): CheckedHistoryQuery & Record<string, unknown> {
  const o = checkOptions(value, ['ns', 'limit', 'before', ...extra]);
  const limit = o.limit ?? DEFAULT_HISTORY_LIMIT;
  if (typeof limit !== 'number' || !Number.isSafeInteger(limit) || limit < 1 || limit > MAX_HISTORY_LIMIT) {
    throw new ValidationError('options.limit', `must be an integer from 1 to ${MAX_HISTORY_LIMIT} (got ${shown(limit)})`);
  }
  const before = o.before;
  if (before !== undefined && (typeof before !== 'number' || !Number.isSafeInteger(before) || before < 0)) {
    throw new ValidationError('options.before', `must be a non-negative integer term (got ${shown(before)})`);
  }
  return { ...o, ns: checkNs(o.ns), limit, before };
}

/** Candidate metadata as stored (JSON text of an object); null when absent or not an object. */
export { parseMetadata };

const REASONS: readonly string[] = HISTORY_END_REASONS;

/**
 * The history table's statements. Each is built to run in the transaction (or statement) that
 * changes leadership, after the leader row was locked, so the history can never disagree with
 * the leases: one row per term, opened by the acquisition and closed by whatever ended it.
 */
export function createHistoryStatements(context: DbContext) {
  const { dialect: d } = context;
  const history = context.table(HISTORY_TABLE);
  const leaders = context.table(LEADER_TABLE);

  function toEntry(row: Record<string, unknown>): HistoryEntry {
    const reason = row.end_reason === null || row.end_reason === undefined ? null : String(row.end_reason);
    return Object.freeze({
      ns: String(row.ns),
      term: Number(row.term),
      leaderId: String(row.leader_id),
      acquiredAt: d.parseInstant(row.acquired_at) as Date,
      endedAt: d.parseInstant(row.ended_at),
      endReason: reason !== null && REASONS.includes(reason) ? (reason as HistoryEndReason) : null,
    });
  }

  const candidates = context.table(CANDIDATE_TABLE);
  const columns = raw(
    ['h.ns AS ns', 'h.term AS term', 'h.leader_id AS leader_id', `${d.instant('h.acquired_at').text} AS acquired_at`, `${d.instant('h.ended_at').text} AS ended_at`, 'h.end_reason AS end_reason'].join(', '),
  );

  return {
    /**
     * Closes the open term of the namespace's leader row. Run it BEFORE the leader row changes,
     * while the caller holds it locked (SQLite: under the write lock). `lapsed`: whether that
     * row's lease had run out, as the caller decided from its locked read — then the term ended
     * `expired` at the lease's own end; otherwise it ends now with `reason`. Without `lapsed`
     * the statement decides by the database clock (only where the clock is stable within a
     * statement: SQLite, MySQL). Nothing happens when the term is already closed or has no
     * history row (a lease granted before the history existed). With `holder`, only if the
     * row names that candidate.
     */
    closeTerm(ns: string, reason: VacateReason | 'expired', lapsed?: boolean, holder?: string): SqlFragment {
      const expiredAt = sql`(SELECT l.lease_expires_at FROM ${leaders} l WHERE l.ns = ${ns})`;
      const set =
        lapsed === true || reason === 'expired'
          ? sql`ended_at = ${expiredAt}, end_reason = ${'expired'}`
          : lapsed === false
            ? sql`ended_at = ${d.now}, end_reason = ${reason}`
            : sql`ended_at = CASE WHEN ${expiredAt} <= ${d.now} THEN ${expiredAt} ELSE ${d.now} END,
  end_reason = CASE WHEN ${expiredAt} <= ${d.now} THEN ${'expired'} ELSE ${reason} END`;
      return sql`UPDATE ${history} SET ${set}
WHERE ns = ${ns} AND ended_at IS NULL
  AND term = (SELECT l.term FROM ${leaders} l WHERE l.ns = ${ns} AND l.leader_id IS NOT NULL${holder === undefined ? raw('') : sql` AND l.leader_id = ${holder}`})`;
    },

    /**
     * Opens the history row of the leader row's current term (run it AFTER the acquisition, in
     * the same transaction). A row left with the same term by an earlier life of the namespace
     * (its leader row deleted by hand) is overwritten. Acquired at the acquiring statement's
     * instant (the leader row's `updated_at`), not this statement's: on a busy server the two
     * statements run milliseconds apart, and the term's length must be its lease's.
     */
    openTerm(ns: string): SqlFragment {
      return sql`INSERT INTO ${history} (ns, term, leader_id, acquired_at, ended_at, end_reason)
SELECT l.ns, l.term, l.leader_id, l.updated_at, NULL, NULL FROM ${leaders} l WHERE l.ns = ${ns} AND l.leader_id IS NOT NULL
${d.upsert(['ns', 'term'], ['leader_id', 'acquired_at', 'ended_at', 'end_reason'])}`;
    },

    /** Terms of a namespace newest first, below `before` if given. */
    select(query: CheckedHistoryQuery): SqlFragment {
      const below = query.before === undefined ? raw('') : sql` AND h.term < ${query.before}`;
      // Parameters, so every limit shares one statement text (bound as each driver takes them: see `Dialect.limit`).
      return sql`SELECT ${columns} FROM ${history} h WHERE h.ns = ${query.ns}${below} ORDER BY h.term DESC ${d.limit(query.limit)}`;
    },

    /** Terms `from`..`to` (inclusive) of a namespace, oldest first: what a watcher missed between two reads. */
    selectRange(ns: string, from: number, to: number): SqlFragment {
      return sql`SELECT ${columns}, c.metadata AS metadata FROM ${history} h
LEFT JOIN ${candidates} c ON c.ns = h.ns AND c.candidate_id = h.leader_id
WHERE h.ns = ${ns} AND h.term >= ${from} AND h.term <= ${to} ORDER BY h.term`;
    },

    toEntry,

    /** The leader's metadata a range read joined in (JSON text), or null. */
    metadataOf: (row: Record<string, unknown>) => parseMetadata(row.metadata),

    async run(m: EntityManager, statement: SqlFragment): Promise<void> {
      await execute(context, m, statement);
    },

    async read(m: EntityManager, statement: SqlFragment): Promise<HistoryEntry[]> {
      return (await execute(context, m, statement)).map(toEntry);
    },
  };
}

export type HistoryStatements = ReturnType<typeof createHistoryStatements>;
