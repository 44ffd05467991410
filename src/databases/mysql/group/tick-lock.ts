import type { EntityManager } from 'typeorm';
import { sql, SqlFragment } from '../../../db/sql';
import { compareNs, GROUP_BATCH_SIZE, GroupElectInput } from '../../../election/group-tick';
import { sqlBool } from '../../dialect';
import { isMariadbServer, padded } from '../session';
import { GroupContext, run } from './group-context';
import { chunks, commaList, list } from './lists';

/*
 * Step 1 of the group tick: the leader rows. Rows the group has not seen yet are created first
 * (vacant; a locking read of a missing row would take gap locks). A plain read then sorts the
 * rows: those held live by others are only reported, never locked, so a follower never waits for
 * a leader's renewal (nor makes it wait). The caller's own live leases are locked first, WAITING,
 * bounded; then the rows this tick may change, without waiting. All locks in namespace order.
 */

/** A leader row as the tick reads it. */
export interface TickRow {
  readonly ns: string;
  readonly leaderId: string | null;
  readonly term: number;
  readonly live: boolean;
  readonly leaseExpired: boolean;
}

/** The rows of the tick: judged (`rows`), or locked by another transaction (`skipped`: unknown this tick). */
export interface TickRows {
  readonly rows: Map<string, TickRow>;
  readonly skipped: Set<string>;
  /** The database clock of the first read, if any row was read. */
  readonly databaseNow: Date | undefined;
}

function toRow(r: Record<string, unknown>): TickRow {
  const leaderId = (r.leader_id as string | null) ?? null;
  return { ns: String(r.ns), leaderId, term: Number(r.term), live: leaderId !== null && sqlBool(r.live), leaseExpired: leaderId !== null && !sqlBool(r.live) };
}

const liveCase = ({ d }: GroupContext['t']): SqlFragment => sql`CASE WHEN leader_id IS NOT NULL AND lease_expires_at > ${d.now} THEN 1 ELSE 0 END`;

/** Creates the leader rows of the namespaces the group has not seen yet (vacant, term 0). */
export async function createRows(gc: GroupContext, m: EntityManager, batches: readonly string[][], known: Set<string>): Promise<void> {
  const { d, leaders } = gc.t;
  for (const batch of batches) {
    const fresh = batch.filter((ns) => !known.has(ns));
    if (fresh.length === 0) continue;
    const values = commaList(padded(fresh).map((ns) => sql`(${ns}, NULL, NULL, ${d.now}, 0)`));
    await run(gc, m, sql`INSERT INTO ${leaders} (ns, leader_id, lease_expires_at, updated_at, term) VALUES ${values} ${d.insertIfAbsent(['ns'])}`);
  }
}

/** Reads the rows, locks them as the file's comment says, and returns what the tick judges. */
export async function lockRows(gc: GroupContext, m: EntityManager, input: GroupElectInput, batches: readonly string[][], known: Set<string>): Promise<TickRows> {
  const rows = new Map<string, TickRow>();
  const seen = await readRows(gc, m, input.candidateId, batches, known, rows);
  if (input.lockWaitMs !== undefined && seen.ownLive.length > 0) await lockOwnLive(gc, m, input.lockWaitMs, seen.ownLive);
  const skipped = await lockWanted(gc, m, input.candidateId, seen.wantedByBatch, rows);
  return { rows, skipped, databaseNow: seen.databaseNow };
}

/**
 * The plain (non-locking) read: rows held live by others go to `rows` as read; the others are
 * wanted (to lock), batch by batch; the caller's own live leases are listed apart.
 */
async function readRows(gc: GroupContext, m: EntityManager, me: string, batches: readonly string[][], known: Set<string>, rows: Map<string, TickRow>) {
  const { d, leaders } = gc.t;
  const wantedByBatch: string[][] = [];
  const ownLive: string[] = [];
  let databaseNow: Date | undefined;
  for (const batch of batches) {
    const seen = await run(gc, m, sql`SELECT ns, leader_id, term, ${liveCase(gc.t)} AS live, ${d.instant(d.now.text)} AS db_now FROM ${leaders} WHERE ns IN ${list(batch)}`);
    const wanted: string[] = [];
    for (const r of seen) {
      const row = toRow(r);
      known.add(row.ns);
      databaseNow ??= d.parseInstant(r.db_now) as Date;
      if (row.live && row.leaderId !== me) rows.set(row.ns, row);
      else wanted.push(row.ns);
      if (row.live && row.leaderId === me) ownLive.push(row.ns);
    }
    wantedByBatch.push(wanted);
  }
  return { wantedByBatch, ownLive, databaseNow };
}

/**
 * The leases this candidate holds, live: locked first, in namespace order, WAITING for a lock
 * another transaction holds (its own fenced transactions lock these rows and write them), each
 * wait bounded, for these statements only: by `innodb_lock_wait_timeout` (whole seconds, rounded
 * up, one at least), and on MariaDB first by `max_statement_time` (fractions of a second).
 * MariaDB keeps the whole seconds as a backstop: `max_statement_time` ends a wait by killing the
 * statement from a timer, and a wait that kill does not end still ends within them instead of the
 * server's default 50 s. (A test's group tick on MariaDB once went unanswered past its 5 s lease
 * while another transaction held one of its rows for 7 s; why the kill did not end that wait was
 * not found.)
 */
async function lockOwnLive(gc: GroupContext, m: EntityManager, lockWaitMs: number, ownLive: string[]): Promise<void> {
  const { leaders } = gc.t;
  const mariadb = await isMariadbServer(gc.context.dataSource, m.queryRunner!);
  const wholeSeconds = sql`SET @gemstone_lock_bound = @@SESSION.innodb_lock_wait_timeout, SESSION innodb_lock_wait_timeout = CAST(${Math.max(1, Math.ceil(lockWaitMs / 1000))} AS UNSIGNED)`;
  await run(
    gc,
    m,
    mariadb ? sql`${wholeSeconds}, @gemstone_wait_bound = @@SESSION.max_statement_time, SESSION max_statement_time = CAST(${lockWaitMs / 1000} AS DECIMAL(12, 6))` : wholeSeconds,
  );
  try {
    for (const batch of chunks(ownLive.sort(compareNs), GROUP_BATCH_SIZE)) {
      // Only the locks: the rows are read again, and judged by a later statement's clock, in lockWanted.
      await run(gc, m, sql`SELECT ns FROM ${leaders} WHERE ns IN ${list(batch)} ORDER BY ns FOR UPDATE`);
    }
  } finally {
    await run(
      gc,
      m,
      mariadb
        ? sql`SET SESSION max_statement_time = @gemstone_wait_bound, SESSION innodb_lock_wait_timeout = @gemstone_lock_bound`
        : sql`SET SESSION innodb_lock_wait_timeout = @gemstone_lock_bound`,
    );
  }
}

/**
 * Then the rows this tick may change (vacant, lapsed, ours), locked in namespace order and
 * re-checked on their newest version; SKIP LOCKED: a row another transaction holds is left for
 * the next tick rather than waited for (the rows lockOwnLive locked are this transaction's: not
 * skipped). Returns the wanted rows that were skipped.
 */
async function lockWanted(gc: GroupContext, m: EntityManager, me: string, wantedByBatch: readonly string[][], rows: Map<string, TickRow>): Promise<Set<string>> {
  const { d, leaders } = gc.t;
  const skipped = new Set<string>();
  for (const wanted of wantedByBatch) {
    if (wanted.length === 0) continue;
    const locked = await run(
      gc,
      m,
      sql`SELECT ns, leader_id, term, ${liveCase(gc.t)} AS live FROM ${leaders} WHERE ns IN ${list(wanted)}
  AND (leader_id IS NULL OR leader_id = ${me} OR lease_expires_at IS NULL OR lease_expires_at <= ${d.now}) ORDER BY ns FOR UPDATE SKIP LOCKED`,
    );
    for (const r of locked) rows.set(String(r.ns), toRow(r));
    for (const ns of wanted) if (!rows.has(ns)) skipped.add(ns);
  }
  return skipped;
}
