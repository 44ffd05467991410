import type { DataSource } from 'typeorm';
import { GemstoneElectionRuns1796256000000 } from '../../../migrations';
import { contextOf, type DbContext } from '../../db/context';
import { isMissingTableError } from '../../db/explain-error';
import { sql, SqlFragment } from '../../db/sql';
import { missingEntities } from '../../election/entities-check';
import { RUN_TABLE } from '../../election/tables';
import { MAX_SCHEDULES_SHOWN, RUNS_SHOWN_PER_SCHEDULE } from '../options';
import { compareNs } from '../../election/group-tick';
import { epochMs, ReadBounds, boundedRead } from './read';
import { hostedSchedules } from '../../schedules/hosted';
import type { Schedule } from '../../schedules/schedule';

/** One recorded run as a namespace's page shows it; instants are epoch ms by the database clock. */
export interface RunView {
  slot: number | null;
  /** As stored: `running`, `done`, `failed`, `abandoned`, `missed` or `skipped`. */
  state: string;
  attempt: number;
  term: number;
  candidateId: string;
  startedAt: number | null;
  finishedAt: number | null;
  error: string | null;
}

/**
 * A schedule as the namespace's page shows it: its recorded runs (a `running` run is the slot under
 * way) and, when a loop given to the dashboard hosts it, the next slot. The database records runs,
 * not patterns (a schedule's cron or interval lives in the application that registers it), so a
 * schedule hosted elsewhere has no next slot here.
 */
export interface ScheduleView {
  name: string;
  /** Whether a loop given in the dashboard's `electors` hosts it (on the DataSource read). */
  hosted: boolean;
  /**
   * The slot it waits for next, epoch ms by the database's clock as its loop estimates it (the
   * earliest, when several loops here host it); null when not hosted here (unknown), or when its
   * pattern has no further slot.
   */
  nextSlot: number | null;
  /** The newest recorded runs, newest slot first; at most {@link RUNS_SHOWN_PER_SCHEDULE}. */
  runs: RunView[];
}

export interface NamespaceSchedules {
  ns: string;
  /**
   * Whether schedules can be read here: false when the DataSource lacks the `ElectionRun` entity
   * or the database the runs table (an application that did not adopt schedules); then
   * `schedules` is empty and `reason` says what to do.
   */
  enabled: boolean;
  /** Why schedules cannot be read, and how to set them up; null when `enabled`. */
  reason: string | null;
  /** Schedules with recorded runs or hosted here, by name ({@link compareNs} order); at most {@link MAX_SCHEDULES_SHOWN}. */
  schedules: ScheduleView[];
  /** More schedules have runs than listed. */
  truncated: boolean;
}

/**
 * What a request reads is bounded by what it shows, not by how many runs are kept: an
 * every-second schedule keeps millions. So no statement ranges over a namespace's runs: the names
 * come one index seek at a time on the primary key (ns, name, slot), and each name's newest runs
 * are read backwards from that key's end.
 */
export function scheduleStatements(context: DbContext) {
  const d = context.dialect;
  const runs = context.table(RUN_TABLE);
  return {
    /** The first name of `ns` in the database's order, or the one after `after`: one index seek. */
    nextName(ns: string, after: string | null): SqlFragment {
      const past = after === null ? sql`` : sql` AND name > ${after}`;
      return sql`SELECT name FROM ${runs} WHERE ns = ${ns}${past} ORDER BY name ${d.limit(1)}`;
    },
    /** The newest runs of one schedule, newest slot first. */
    runs(ns: string, name: string): SqlFragment {
      // Ordered by the stored column (`r.slot`), not the converted one of the same name: the key's order, no sort.
      return sql`SELECT ${d.instant('r.slot')} AS slot, r.state, r.attempt, r.term, r.candidate_id, ${d.instant('r.started_at')} AS started_at,
  ${d.instant('r.finished_at')} AS finished_at, r.error
FROM ${runs} r WHERE r.ns = ${ns} AND r.name = ${name} ORDER BY r.slot DESC ${d.limit(RUNS_SHOWN_PER_SCHEDULE)}`;
    },
  };
}

const text = (value: unknown) => (value === null || value === undefined ? null : String(value));

const MIGRATION = GemstoneElectionRuns1796256000000.name;

/** The answer of a DataSource without `ElectionRun`: decided by its metadata, no statement sent. */
function entityNotRegisteredReason(missing: readonly string[]): string {
  return (
    `Schedules are not set up on the DataSource this dashboard reads: it was initialized without ${missing.join(', ')} (${missing.length === 1 ? 'an entity' : 'entities'} of gemstone-utils). ` +
    'Add `...GemstoneDB.entities` (ElectionRun included) to its `entities` option, or let `initDb(dataSource)` initialize it; ' +
    `the runs table comes from \`initDb\` or the migration ${MIGRATION} (in \`GemstoneDB.migrations\`).`
  );
}

/** The answer of a database without the runs table (made by a release before schedules, or migrations not yet run). */
function tableMissingReason(table: string): string {
  return (
    `Schedules are not set up in this database: the runs table ${table} does not exist. Create it with \`await initDb(dataSource)\` ` +
    `at startup, \`gemstone-election init --url <url>\`, or the migration ${MIGRATION} (in \`GemstoneDB.migrations\`) where only migrations run DDL.`
  );
}

const notSetUp = (ns: string, reason: string): NamespaceSchedules => ({ ns, enabled: false, reason, schedules: [], truncated: false });

/**
 * The schedules of `ns` with their newest runs, each list bounded (see {@link MAX_SCHEDULES_SHOWN},
 * {@link RUNS_SHOWN_PER_SCHEDULE}); stopped at the database as `bounds` says. At most
 * MAX_SCHEDULES_SHOWN + 1 name seeks and MAX_SCHEDULES_SHOWN run reads, whatever the history.
 *
 * Schedules are optional: without `ElectionRun` on the DataSource (known from its metadata, no
 * statement) or without the runs table (the database's missing-table error, the one thing the
 * reads' failure is taken to mean) the answer is `enabled: false` with what to do, not an error.
 * Nothing is remembered: once the table is created the next request reads it.
 *
 * The schedules of `ns` that `loops` host on `dataSource` are listed too (a new one before its
 * first run), each with its next slot, asked of it once the runs are read.
 */
export async function readSchedules(
  dataSource: DataSource,
  statements: ReturnType<typeof scheduleStatements>,
  ns: string,
  bounds: ReadBounds,
  loops: readonly object[],
): Promise<NamespaceSchedules> {
  const missing = missingEntities(dataSource, 'runs');
  if (missing.length > 0) return notSetUp(ns, entityNotRegisteredReason(missing));
  try {
    return await readRegistered(dataSource, statements, ns, bounds, hostedSchedules(loops, dataSource, ns));
  } catch (error) {
    // These statements name no table but the runs table: a missing table is that one. Any other
    // failure (a timeout, a cancel, a missing column, a refused privilege) stays what it is.
    if (isMissingTableError(dataSource, error)) return notSetUp(ns, tableMissingReason(contextOf(dataSource).tableName(RUN_TABLE)));
    throw error;
  }
}

/** The read of {@link readSchedules}, on a DataSource with `ElectionRun`. */
function readRegistered(
  dataSource: DataSource,
  statements: ReturnType<typeof scheduleStatements>,
  ns: string,
  bounds: ReadBounds,
  hosted: readonly Schedule[],
): Promise<NamespaceSchedules> {
  return boundedRead(dataSource, bounds, async (run, context) => {
    const found: string[] = [];
    let after: string | null = null;
    // One more than shown, to tell the page there are more.
    while (found.length <= MAX_SCHEDULES_SHOWN) {
      const row: Record<string, unknown> | undefined = (await run(statements.nextName(ns, after)))[0];
      if (row === undefined) break;
      after = String(row.name);
      found.push(after);
    }
    // The first names in the database's collation, and the hosted ones; shown in the library's
    // order, the same on every database.
    const known = [...new Set([...found.slice(0, MAX_SCHEDULES_SHOWN), ...hosted.map((s) => s.name)])].sort(compareNs);
    const names = known.slice(0, MAX_SCHEDULES_SHOWN);
    const schedules: ScheduleView[] = [];
    for (const name of names) {
      const rows = await run(statements.runs(ns, name));
      const here = hosted.filter((s) => s.name === name);
      schedules.push({
        name,
        hosted: here.length > 0,
        nextSlot: earliestNextSlot(here),
        runs: rows.map(
          (row): RunView => ({
            slot: epochMs(context, row.slot),
            state: String(row.state),
            attempt: Number(row.attempt),
            term: Number(row.term),
            candidateId: String(row.candidate_id),
            startedAt: epochMs(context, row.started_at),
            finishedAt: epochMs(context, row.finished_at),
            error: text(row.error),
          }),
        ),
      });
    }
    return { ns, enabled: true, reason: null, schedules, truncated: found.length > MAX_SCHEDULES_SHOWN || known.length > MAX_SCHEDULES_SHOWN };
  });
}

/** The earliest next slot of `schedules` (one schedule hosted by several loops here), epoch ms; null without one. */
function earliestNextSlot(schedules: readonly Schedule[]): number | null {
  const slots = schedules.map((s) => s.nextSlot()?.getTime()).filter((ms): ms is number => ms !== undefined);
  return slots.length === 0 ? null : Math.min(...slots);
}
