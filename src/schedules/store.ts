import type { DataSource, EntityManager } from 'typeorm';
import { contextOf, DbContext } from '../db/context';
import { assertInitialized, withExplainedFailures } from '../db/explain-error';
import { dataSourceOfSession, execute, inTransaction, runnerOf, withManager } from '../db/session';
import type { Session } from '../db/session-type';
import { NotLeaderError, shown, ValidationError } from '../errors';
import { assertEntitiesRegistered } from '../election/entities-check';
import { fenceLeader, judgeFence, notLeaderError } from '../election/fence';
import { storeOf } from '../election/store';
import { sqlBool } from '../databases/dialect';
import { partsOf } from '../databases/parts';
import type { RunPrograms } from '../databases/contract/run-programs';
import type { ClaimResult, Claimant, LookBack, RunsStore, SlotKey } from './runs-store';
import { RUN_ERROR_MAX_LENGTH } from './runs-store';
import { RunStatements, runStatementsOf as statementsOf } from './statements';
import { CheckedSlot, checkClaimant, checkMaxAttempts, checkScheduleName, checkSlotKey } from './validate';
import { checkNs } from '../election/validate';

/** Rows one `record` statement inserts at most: 100 (6 parameters each, below every database's limit). */
export const RECORD_BATCH_ROWS = 100;

/**
 * An error message as stored: at most {@link RUN_ERROR_MAX_LENGTH} characters (never half a
 * character), well-formed, without NUL (which PostgreSQL's text refuses).
 */
export function storedError(message: string): string {
  const clean = message.toWellFormed().replaceAll('\u0000', '\uFFFD');
  const characters = [...clean];
  return characters.length <= RUN_ERROR_MAX_LENGTH ? clean : characters.slice(0, RUN_ERROR_MAX_LENGTH).join('');
}

const keyText = (key: CheckedSlot) => `${JSON.stringify(key.name)} slot ${new Date(key.slotMs).toISOString()}`;

/** A DataSource the runs can be read and written on: initialized, with the election entities. */
function usable(dataSource: DataSource): DataSource {
  assertInitialized(dataSource);
  assertEntitiesRegistered(dataSource, 'runs');
  return dataSource;
}

/** Options of {@link createRunsStore}. */
export interface RunsStoreOptions {
  /**
   * SQLite: how long a call without `session` waits for a transaction someone else holds open on
   * the shared connection before it throws `SqliteTransactionOpenError` (as the
   * `ElectionService`'s option). Default `DEFAULT_SQLITE_WAIT_MS` (5000).
   */
  readonly sqliteWaitMs?: number;
}

/**
 * The runs of schedules on one DataSource (see {@link RunsStore} for what each call guarantees).
 * Every write is fenced by `fenceLeader`, the rule and locks of `assertLeader`, in the same
 * transaction; on SQLite that transaction holds the database write lock, elsewhere the leader
 * row's lock, and the run row is locked before it is decided on.
 */
export function createRunsStore(dataSource: DataSource, options: RunsStoreOptions = {}): RunsStore {
  const wait = options.sqliteWaitMs;
  if (wait !== undefined && (typeof wait !== 'number' || !Number.isFinite(wait) || wait < 0)) {
    throw new ValidationError('options.sqliteWaitMs', `must be a finite number of milliseconds >= 0 (got ${shown(wait)})`);
  }
  let made: RunPrograms | undefined;
  /**
   * The database's programs (SQLite: see its `run-programs.ts`) when the call has no caller's
   * transaction to join: then the whole call is one program, never nested in another transaction
   * nor holding the write lock across an await. Undefined elsewhere: the general path.
   */
  const programsFor = (session?: Session): RunPrograms | undefined => {
    if (runnerOf(session, 'session')?.isTransactionActive) return undefined;
    const part = partsOf(contextOf(dataSource)).runPrograms;
    if (!part) return undefined;
    // A failure a setup meets (tables missing, …) is explained as the general path's are.
    const context = contextOf(dataSource);
    return (made ??= withExplainedFailures(dataSource, part.create(context, dataSource, () => wait, storeOf(context).shared)));
  };
  return {
    async claim(key: SlotKey, who: Claimant, maxAttempts: number, retake = false): Promise<ClaimResult> {
      const slot = checkSlotKey(key);
      const claimant = checkClaimant(who);
      const max = checkMaxAttempts(maxAttempts);
      if (typeof retake !== 'boolean') throw new ValidationError('retake', `must be a boolean (got ${shown(retake)})`);
      const ds = usable(dataSource);
      const programs = programsFor();
      if (programs) return programs.claim(slot, claimant, max, retake);
      return inTransaction(ds, undefined, async (m, context) => {
        const runs = statementsOf(context);
        try {
          await fenceLeader(m, storeOf(context), slot.ns, claimant.candidateId, claimant.term);
        } catch (error) {
          if (!(error instanceof NotLeaderError)) throw error;
          return { claimed: false, why: 'not-leader', databaseNow: await clockOf(m, context, runs) };
        }
        // Due by the database clock, read under the leader row's lock.
        const [due] = await execute(context, m, runs.dueCheck(slot));
        const databaseNow = context.dialect.parseInstant(due?.db_now) as Date;
        if (!sqlBool(due?.due)) return { claimed: false, why: 'not-due', databaseNow };
        await execute(context, m, runs.insertUnclaimed(slot, claimant.term, claimant.candidateId));
        const [raw] = await execute(context, m, runs.lockRun(slot));
        if (!raw) throw new Error(`gemstone-utils: the run ${keyText(slot)} vanished inside its claim`);
        const row = runs.toLocked(raw);
        if (row.state !== 'running') return { claimed: false, why: 'final', state: row.state, databaseNow };
        if (row.attempt === 0) {
          await execute(context, m, runs.claimRun(slot, claimant.term, claimant.candidateId, 1));
          return { claimed: true, attempt: 1, databaseNow };
        }
        // Running under this term (or, impossibly once fenced, a later one): someone runs it now —
        // unless the caller retakes a run of its own term that it knows nobody runs any more.
        if (retake ? row.term > claimant.term : row.term >= claimant.term) return { claimed: false, why: 'running', state: row.state, databaseNow };
        // Its leader was lost: run it again, unless its runs lost their leader often enough.
        if (row.attempt >= max) {
          await execute(context, m, runs.finishRun(slot, 'abandoned', null));
          return { claimed: false, why: 'abandoned', state: 'abandoned', databaseNow };
        }
        await execute(context, m, runs.claimRun(slot, claimant.term, claimant.candidateId, row.attempt + 1));
        return { claimed: true, attempt: row.attempt + 1, databaseNow };
      });
    },

    async finish(key: SlotKey, who: Claimant, state: 'done' | 'failed', error?: string, session?: Session): Promise<void> {
      const slot = checkSlotKey(key);
      const claimant = checkClaimant(who);
      if (state !== 'done' && state !== 'failed') throw new ValidationError('state', `must be 'done' or 'failed' (got ${JSON.stringify(state)})`);
      if (error !== undefined && typeof error !== 'string') throw new ValidationError('error', 'must be a string (the error message) or undefined');
      runnerOf(session, 'session');
      const ds = session === undefined ? usable(dataSource) : usableSession(dataSource, session);
      const stored = state === 'failed' && error !== undefined ? storedError(error) : null;
      const programs = programsFor(session);
      if (programs) return programs.finish(slot, claimant, state, stored);
      await inTransaction(ds, session, async (m, context) => {
        const runs = statementsOf(context);
        const leader = await fenceLeader(m, storeOf(context), slot.ns, claimant.candidateId, claimant.term);
        const [raw] = await execute(context, m, runs.lockRun(slot));
        const row = raw ? runs.toLocked(raw) : undefined;
        if (row?.state !== 'running' || row.term !== claimant.term) {
          throw notLeaderError(
            slot.ns,
            claimant.candidateId,
            judgeFence(leader, claimant.candidateId, claimant.term),
            claimant.term,
            row
              ? `the run of schedule ${keyText(slot)} is ${row.state} under term ${row.term}, not running under term ${claimant.term}`
              : `schedule ${keyText(slot)} was never claimed`,
          );
        }
        await execute(context, m, runs.finishRun(slot, state, stored));
      });
    },

    async record(keys: readonly SlotKey[], who: Claimant, state: 'missed' | 'skipped'): Promise<void> {
      if (!Array.isArray(keys)) throw new ValidationError('keys', 'must be an array of { ns, name, slot }');
      const slots = keys.map((key, i) => checkSlotKey(key, `keys[${i}]`));
      const claimant = checkClaimant(who);
      if (state !== 'missed' && state !== 'skipped') throw new ValidationError('state', `must be 'missed' or 'skipped' (got ${JSON.stringify(state)})`);
      const ns = slots[0]?.ns;
      const other = slots.findIndex((slot) => slot.ns !== ns);
      if (other >= 0) throw new ValidationError(`keys[${other}].ns`, 'must be the namespace of keys[0]: one call is fenced by one leadership');
      const ds = usable(dataSource);
      if (ns === undefined) return;
      const programs = programsFor();
      if (programs) return programs.record(slots, claimant, state);
      await inTransaction(ds, undefined, async (m, context) => {
        const runs = statementsOf(context);
        await fenceLeader(m, storeOf(context), ns, claimant.candidateId, claimant.term);
        for (let i = 0; i < slots.length; i += RECORD_BATCH_ROWS) {
          await execute(context, m, runs.recordRuns(slots.slice(i, i + RECORD_BATCH_ROWS), state, claimant.term, claimant.candidateId));
        }
      });
    },

    async lookBack(ns: string, name: string): Promise<LookBack> {
      const checkedNs = checkNs(ns === undefined ? null : ns, 'ns');
      const checkedName = checkScheduleName(name, 'name');
      const ds = usable(dataSource);
      const context = contextOf(ds);
      const runs = statementsOf(context);
      const statements = [runs.newestSlot(checkedNs, checkedName), runs.runningSlots(checkedNs, checkedName)];
      const programs = programsFor();
      const read = programs
        ? programs.read(statements)
        : withManager(ds, undefined, async (m) => [await execute(context, m, statements[0]!), await execute(context, m, statements[1]!)]);
      return read.then(([clockRows, running = []]) => {
        const { dialect: d } = context;
        const clock = clockRows?.[0];
        const unfinished = running
          .map((row) => d.parseInstant(row.slot) as Date)
          .sort((a, b) => a.getTime() - b.getTime())
          .map((slot) => ({ ns: checkedNs, name: checkedName, slot }));
        return { newest: d.parseInstant(clock?.newest), unfinished, databaseNow: d.parseInstant(clock?.db_now) as Date };
      });
    },
  };
}

/** The database clock, for an answer that read no leader row. */
async function clockOf(m: EntityManager, context: DbContext, runs: RunStatements): Promise<Date> {
  const [row] = await execute(context, m, runs.clock());
  return context.dialect.parseInstant(row?.db_now) as Date;
}

/** The session's DataSource, which must be the store's. */
function usableSession(dataSource: DataSource, session: Session): DataSource {
  const own = dataSourceOfSession(session);
  if (own !== dataSource) throw new ValidationError('session', "belongs to a different DataSource than the runs store's");
  assertEntitiesRegistered(own, 'runs');
  return own;
}

const storesByDataSource = new WeakMap<DataSource, RunsStore>();

/** The runs store of a DataSource, made once. */
export function runsStoreOf(dataSource: DataSource): RunsStore {
  let store = storesByDataSource.get(dataSource);
  if (!store) storesByDataSource.set(dataSource, (store = createRunsStore(dataSource)));
  return store;
}
