import type { DbContext } from '../db/context';
import { raw, sql, SqlFragment } from '../db/sql';
import { RUN_TABLE } from '../election/tables';
import type { RunState, ScheduledRunInfo } from './runs-store';
import type { CheckedRunsQuery, CheckedSlot } from './validate';

/** A run row as the locked read of a claim or a finish sees it. */
export interface LockedRun {
  readonly state: RunState;
  readonly attempt: number;
  readonly term: number;
}

const STATES: readonly string[] = ['running', 'done', 'failed', 'abandoned', 'missed', 'skipped'];

/** A state as stored; anything else is a row this library did not write. */
function toState(value: unknown): RunState {
  const state = String(value);
  if (!STATES.includes(state)) throw new Error(`gemstone-utils: unknown run state ${JSON.stringify(state)} in the runs table`);
  return state as RunState;
}

/**
 * The statements of the runs table, the same on every database: keys and instants are
 * parameters (slots through `dialect.instantOf`, so they are stored exactly as the database
 * stores instants), and every instant written is the database clock's (`dialect.now`). Each runs
 * on the manager it is given, in the transaction the caller opened after the fence.
 */
export function createRunStatements(context: DbContext) {
  const { dialect: d } = context;
  const runs = context.table(RUN_TABLE);
  /** Locks the run row until the transaction ends where rows can be locked; SQLite's write lock, taken by the fence, stands in. */
  const forUpdate = raw(d.rowLocks ? ' FOR UPDATE' : '');
  const where = (key: CheckedSlot) => sql`ns = ${key.ns} AND name = ${key.name} AND slot = ${d.instantOf(key.slotMs)}`;
  const columns = raw('ns, name, slot, state, attempt, term, candidate_id, started_at, finished_at, error');

  function toInfo(row: Record<string, unknown>): ScheduledRunInfo {
    return {
      ns: String(row.ns),
      name: String(row.name),
      slot: d.parseInstant(row.slot) as Date,
      state: toState(row.state),
      attempt: Number(row.attempt),
      term: Number(row.term),
      candidateId: String(row.candidate_id),
      startedAt: d.parseInstant(row.started_at),
      finishedAt: d.parseInstant(row.finished_at),
      error: row.error === null || row.error === undefined ? null : String(row.error),
    };
  }

  return {
    /**
     * A claim's first write: an unclaimed row (`running`, attempt 0) unless the slot has one. It
     * cannot fail on a duplicate key, and where two claims race it makes the second wait for the
     * first's commit (the key's lock), after which its locked read sees what the first decided.
     * Attempt 0 never commits: the same transaction turns it into attempt 1.
     */
    insertUnclaimed(key: CheckedSlot, term: number, candidateId: string): SqlFragment {
      return sql`INSERT INTO ${runs} (${columns})
VALUES (${key.ns}, ${key.name}, ${d.instantOf(key.slotMs)}, ${'running'}, 0, ${term}, ${candidateId}, NULL, NULL, NULL)
${d.insertIfAbsent(['ns', 'name', 'slot'])}`;
    },

    /**
     * Whether the slot has come due by the database clock (compared in the database, exactly as
     * stored: no rounding of a finer clock to milliseconds), with that clock.
     */
    dueCheck(key: CheckedSlot): SqlFragment {
      return sql`SELECT CASE WHEN ${d.instantOf(key.slotMs)} <= ${d.now} THEN 1 ELSE 0 END AS due, ${d.instant(d.now.text)} AS db_now`;
    },

    /** The run row, locked until the transaction ends. */
    lockRun(key: CheckedSlot): SqlFragment {
      return sql`SELECT state, attempt, term FROM ${runs} WHERE ${where(key)}${forUpdate}`;
    },

    /** Reads what {@link lockRun} selected. */
    toLocked(row: Record<string, unknown>): LockedRun {
      return { state: toState(row.state), attempt: Number(row.attempt), term: Number(row.term) };
    },

    /** The slot claimed under `term` as attempt `attempt`, started now. */
    claimRun(key: CheckedSlot, term: number, candidateId: string, attempt: number): SqlFragment {
      return sql`UPDATE ${runs} SET state = ${'running'}, attempt = ${attempt}, term = ${term}, candidate_id = ${candidateId},
  started_at = ${d.now}, finished_at = NULL, error = NULL WHERE ${where(key)}`;
    },

    /** A final state, reached now (the run's term and attempt stay: they say which run ended so). */
    finishRun(key: CheckedSlot, state: Exclude<RunState, 'running'>, error: string | null): SqlFragment {
      return sql`UPDATE ${runs} SET state = ${state}, finished_at = ${d.now}, error = ${error} WHERE ${where(key)}`;
    },

    /** Slots recorded without a run (`missed`, `skipped`), final at once; existing rows stay as they are. */
    recordRuns(keys: readonly CheckedSlot[], state: 'missed' | 'skipped', term: number, candidateId: string): SqlFragment {
      let values = sql``;
      keys.forEach((key, i) => {
        const row = sql`(${key.ns}, ${key.name}, ${d.instantOf(key.slotMs)}, ${state}, 0, ${term}, ${candidateId}, NULL, ${d.now}, NULL)`;
        values = i === 0 ? row : sql`${values}, ${row}`;
      });
      return sql`INSERT INTO ${runs} (${columns}) VALUES ${values}
${d.insertIfAbsent(['ns', 'name', 'slot'])}`;
    },

    /** The database clock alone. */
    clock(): SqlFragment {
      return sql`SELECT ${d.instant(d.now.text)} AS db_now`;
    },

    /** The database clock and the newest slot of a schedule (null without one), in one row. */
    newestSlot(ns: string, name: string): SqlFragment {
      return sql`SELECT ${d.instant(d.now.text)} AS db_now,
  (SELECT ${d.instant('MAX(r.slot)')} FROM ${runs} r WHERE r.ns = ${ns} AND r.name = ${name}) AS newest`;
    },

    /** A schedule's `running` slots. */
    runningSlots(ns: string, name: string): SqlFragment {
      return sql`SELECT ${d.instant('slot')} AS slot FROM ${runs} WHERE ns = ${ns} AND name = ${name} AND state = ${'running'}`;
    },

    /**
     * `getRuns`: newest slot first, then namespace and name — the order the runs indexes keep
     * (`(slot DESC, ns, name, …)` across namespaces, `(ns, slot DESC, name)` in one, the primary
     * key read backwards in one schedule), so a page needs no sort however many runs are kept (a
     * planner may still sort the few rows of a small table); and a total order, so a page that
     * starts after a run (`before` a run) continues exactly where the previous one stopped, also
     * among schedules that share a slot. The columns are the stored ones (`r.`): ordered by the
     * converted instant of the same name, every page sorted every matching row.
     */
    selectRuns(query: CheckedRunsQuery): SqlFragment {
      let filter = sql`1 = 1`;
      if (query.ns !== undefined) filter = sql`${filter} AND r.ns = ${query.ns}`;
      if (query.name !== undefined) filter = sql`${filter} AND r.name = ${query.name}`;
      const start = query.before;
      if (start !== undefined) {
        const slot = d.instantOf(start.slotMs);
        filter = start.run
          ? // The range on slot is what the index finds; the rest places the run among those of its slot.
            sql`${filter} AND r.slot <= ${slot} AND (r.slot < ${slot} OR r.ns > ${start.run.ns} OR (r.ns = ${start.run.ns} AND r.name > ${start.run.name}))`
          : sql`${filter} AND r.slot < ${slot}`;
      }
      // A column the filter fixes orders nothing, and is left out: named, it makes MariaDB sort the
      // rows it selects rather than read the index that has them in order.
      const order = raw(['r.slot DESC', ...(query.ns === undefined ? ['r.ns'] : []), ...(query.name === undefined ? ['r.name'] : [])].join(', '));
      return sql`SELECT r.ns, r.name, ${d.instant('r.slot')} AS slot, r.state, r.attempt, r.term, r.candidate_id, ${d.instant('r.started_at')} AS started_at,
  ${d.instant('r.finished_at')} AS finished_at, r.error FROM ${runs} r WHERE ${filter} ORDER BY ${order} ${d.limit(query.limit)}`;
    },

    toInfo,
  };
}

export type RunStatements = ReturnType<typeof createRunStatements>;

const statementsByContext = new WeakMap<DbContext, RunStatements>();

/** The run statements of a DataSource's context, made once. */
export function runStatementsOf(context: DbContext): RunStatements {
  let statements = statementsByContext.get(context);
  if (!statements) statementsByContext.set(context, (statements = createRunStatements(context)));
  return statements;
}
