import type { EntityManager } from 'typeorm';
import type { DbContext } from '../../db/context';
import { execute, inTransaction } from '../../db/session';
import { raw, sql, SqlFragment } from '../../db/sql';
import { compareNs, fairShare, GROUP_BATCH_SIZE, GroupElectInput, GroupElectOutcome, GroupNsOutcome, VacateReason } from '../../election/group-tick';
import { CANDIDATE_TABLE, HISTORY_TABLE, LEADER_TABLE } from '../../election/schema';
import { decide } from '../../election/decision';
import type { GroupParts, GroupStatements } from '../contract/group';
import { sqlBool } from '../dialect';
import { isMariadbServer, padded } from './session';

/**
 * The group tick on MySQL/MariaDB: one transaction, a constant number of statements per batch of
 * {@link GROUP_BATCH_SIZE} namespaces (the decision made in JavaScript by `decide`, on rows read
 * under their locks), and one transaction that vacates many leases. A wait for a lock on the
 * caller's own live lease is bounded by `innodb_lock_wait_timeout` (1205) on MySQL and by
 * `max_statement_time` (1969) on MariaDB.
 */
export const mysqlGroup: GroupParts = {
  foldsVacates: true,
  boundedLockWaits: true,
  isLockTimeout(error: unknown): boolean {
    const inner = ((error as { driverError?: unknown } | null)?.driverError ?? error) as { errno?: unknown } | null;
    return Number(inner?.errno) === 1205 || Number(inner?.errno) === 1969;
  },
  statements: mysqlGroupStatements,
};

function chunks<T>(items: readonly T[], size: number): T[][] {
  const out: T[][] = [];
  for (let i = 0; i < items.length; i += size) out.push(items.slice(i, i + size));
  return out;
}

/**
 * The items separated by commas, as a balanced tree of fragments: rendering recurses once per
 * level, so 10,000 items nest 14 deep rather than 10,000.
 */
function commaList(items: readonly unknown[]): SqlFragment {
  if (items.length <= 1) return sql`${items[0]}`;
  const half = Math.ceil(items.length / 2);
  return sql`${commaList(items.slice(0, half))}, ${commaList(items.slice(half))}`;
}

/** `(?, ?, …)` of the values, for `IN` (MySQL/MariaDB only: padded to a few lengths, see {@link padded}). */
function list(values: readonly unknown[]): SqlFragment {
  return sql`(${commaList(padded(values))})`;
}

function mysqlGroupStatements(context: DbContext): GroupStatements {
  const { dialect: d } = context;
  const candidates = context.table(CANDIDATE_TABLE);
  const leaders = context.table(LEADER_TABLE);
  const history = context.table(HISTORY_TABLE);
  const dataSource = context.dataSource;

  async function electMysql(m: EntityManager, input: GroupElectInput, known: Set<string>): Promise<GroupElectOutcome> {
    const me = input.candidateId;
    const batches = chunks(input.namespaces, GROUP_BATCH_SIZE);
    // 0. The leases given up: vacated first, in the same transaction, rather than renewed.
    const released: Array<{ ns: string; term: number }> = [];
    const releaseSkipped: string[] = [];
    const release = [...(input.release ?? new Map<string, VacateReason>())].sort(([a], [b]) => compareNs(a, b));
    for (const batch of chunks(release, GROUP_BATCH_SIZE)) {
      const ours = await execute(context, m, sql`SELECT ns FROM ${leaders} WHERE ns IN ${list(batch.map(([ns]) => ns))} AND leader_id = ${me}`);
      const held = await execute(
        context,
        m,
        sql`SELECT ns, term FROM ${leaders} WHERE ns IN ${list(batch.map(([ns]) => ns))} AND leader_id = ${me} ORDER BY ns FOR UPDATE SKIP LOCKED`,
      );
      const lockedNs = new Set(held.map((r) => String(r.ns)));
      for (const r of ours) if (!lockedNs.has(String(r.ns))) releaseSkipped.push(String(r.ns));
      if (held.length === 0) continue;
      const reasons = new Map(batch);
      for (const reason of new Set(held.map((r) => reasons.get(String(r.ns))))) {
        const names = held.filter((r) => reasons.get(String(r.ns)) === reason).map((r) => String(r.ns));
        await execute(
          context,
          m,
          sql`UPDATE ${history} h JOIN ${leaders} l ON l.ns = h.ns AND l.term = h.term
SET h.end_reason = CASE WHEN l.lease_expires_at > ${d.now} THEN ${reason} ELSE ${'expired'} END,
  h.ended_at = CASE WHEN l.lease_expires_at > ${d.now} THEN ${d.now} ELSE l.lease_expires_at END
WHERE h.ns IN ${list(names)} AND h.ended_at IS NULL AND l.leader_id = ${me}`,
        );
      }
      const names = held.map((r) => String(r.ns));
      await execute(context, m, sql`UPDATE ${leaders} SET leader_id = NULL, lease_expires_at = NULL, updated_at = ${d.now} WHERE ns IN ${list(names)} AND leader_id = ${me}`);
      for (const r of held) released.push({ ns: String(r.ns), term: Number(r.term) });
    }
    // 1. Rows the group has not seen yet are created first (vacant; a locking read of a missing
    //    row would take gap locks), then every row is locked, in namespace order.
    for (const batch of batches) {
      const fresh = batch.filter((ns) => !known.has(ns));
      if (fresh.length === 0) continue;
      const values = commaList(padded(fresh).map((ns) => sql`(${ns}, NULL, NULL, ${d.now}, 0)`));
      await execute(context, m, sql`INSERT INTO ${leaders} (ns, leader_id, lease_expires_at, updated_at, term) VALUES ${values} ${d.insertIfAbsent(['ns'])}`);
    }
    type Row = { ns: string; leaderId: string | null; term: number; live: boolean; leaseExpired: boolean };
    const rows = new Map<string, Row>();
    // Rows this tick may change but found locked by another transaction: unknown this tick.
    const skipped = new Set<string>();
    let databaseNow: Date | undefined;
    const toRow = (r: Record<string, unknown>): Row => {
      const leaderId = (r.leader_id as string | null) ?? null;
      return { ns: String(r.ns), leaderId, term: Number(r.term), live: leaderId !== null && sqlBool(r.live), leaseExpired: leaderId !== null && !sqlBool(r.live) };
    };
    const liveCase = sql`CASE WHEN leader_id IS NOT NULL AND lease_expires_at > ${d.now} THEN 1 ELSE 0 END`;
    // A plain (non-locking) read first: rows held live by others are only reported, never locked,
    // so a follower never waits for a leader's renewal (nor makes it wait).
    const wantedByBatch: string[][] = [];
    const ownLive: string[] = [];
    for (const batch of batches) {
      const seen = await execute(
        context,
        m,
        sql`SELECT ns, leader_id, term, ${liveCase} AS live, ${d.instant(d.now.text)} AS db_now FROM ${leaders} WHERE ns IN ${list(batch)}`,
      );
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
    // The leases this candidate holds, live: locked first, in namespace order, WAITING for a lock
    // another transaction holds (its own fenced transactions lock these rows and write them), each
    // wait bounded, for these statements only: MariaDB by `max_statement_time` (fractions of a
    // second), MySQL by `innodb_lock_wait_timeout` (whole seconds, one at least).
    if (input.lockWaitMs !== undefined && ownLive.length > 0) {
      const mariadb = await isMariadbServer(context.dataSource, m.queryRunner!);
      await execute(
        context,
        m,
        mariadb
          ? sql`SET @gemstone_wait_bound = @@SESSION.max_statement_time, SESSION max_statement_time = CAST(${input.lockWaitMs / 1000} AS DECIMAL(12, 6))`
          : sql`SET @gemstone_wait_bound = @@SESSION.innodb_lock_wait_timeout, SESSION innodb_lock_wait_timeout = CAST(${Math.max(1, Math.round(input.lockWaitMs / 1000))} AS UNSIGNED)`,
      );
      try {
        for (const batch of chunks(ownLive.sort(compareNs), GROUP_BATCH_SIZE)) {
          // Only the locks: the rows are read again, and judged by a later statement's clock, below.
          await execute(context, m, sql`SELECT ns FROM ${leaders} WHERE ns IN ${list(batch)} ORDER BY ns FOR UPDATE`);
        }
      } finally {
        await execute(context, m, mariadb ? sql`SET SESSION max_statement_time = @gemstone_wait_bound` : sql`SET SESSION innodb_lock_wait_timeout = @gemstone_wait_bound`);
      }
    }
    for (const wanted of wantedByBatch) {
      if (wanted.length === 0) continue;
      // Then the rows this tick may change (vacant, lapsed, ours), locked in namespace order and
      // re-checked on their newest version; SKIP LOCKED: a row another transaction holds is
      // left for the next tick rather than waited for (the rows locked above are this
      // transaction's: not skipped).
      const locked = await execute(
        context,
        m,
        sql`SELECT ns, leader_id, term, ${liveCase} AS live FROM ${leaders} WHERE ns IN ${list(wanted)}
  AND (leader_id IS NULL OR leader_id = ${me} OR lease_expires_at IS NULL OR lease_expires_at <= ${d.now}) ORDER BY ns FOR UPDATE SKIP LOCKED`,
      );
      for (const r of locked) rows.set(String(r.ns), toRow(r));
      for (const ns of wanted) if (!rows.has(ns)) skipped.add(ns);
    }
    // 2. The candidates of those namespaces, by a plain read (the leader rows are locked).
    const rival = new Map<string, number>();
    const others = new Map<string, number>();
    const registered = new Set<string>();
    for (const batch of batches) {
      const found = await execute(
        context,
        m,
        sql`SELECT ns, candidate_id, priority, CASE WHEN eligible AND expires_at > ${d.now} THEN 1 ELSE 0 END AS live_eligible
FROM ${candidates} WHERE ns IN ${list(batch)} AND (candidate_id = ${me} OR (eligible AND expires_at > ${d.now}))`,
      );
      for (const r of found) {
        const ns = String(r.ns);
        const id = String(r.candidate_id);
        if (id === me) {
          registered.add(ns);
          continue;
        }
        if (!sqlBool(r.live_eligible)) continue;
        const p = Number(r.priority);
        rival.set(ns, Math.max(rival.get(ns) ?? -Infinity, p));
        others.set(id, Math.max(others.get(id) ?? -Infinity, p));
      }
    }
    const members = membersOf(others, input);
    // 3. Decide, namespace by namespace, as `elect` does; balance caps the acquisitions.
    let held = 0;
    for (const row of rows.values()) if (row.live && row.leaderId === me) held++;
    let quota = input.balance ? Math.max(0, fairShare(input.namespaces.length, members, me) - held) : Infinity;
    const renew: string[] = [];
    const take: Row[] = [];
    const outcomes: GroupNsOutcome[] = [];
    for (const ns of input.namespaces) {
      const row = rows.get(ns);
      if (skipped.has(ns)) {
        outcomes.push({ ns, leaderId: null, term: null, isLeader: false, acquired: false, handOver: false });
        continue;
      }
      if (!row) {
        // Deleted behind our back after we saw it: created again by the next tick.
        known.delete(ns);
        outcomes.push({ ns, leaderId: null, term: null, isLeader: false, acquired: false, handOver: false });
        continue;
      }
      const standing = { registered: registered.has(ns), storedPriority: null, storedEligible: null, rivalPriority: rival.get(ns) ?? null };
      const { renewing, takes, handOver } = decide(row, me, standing, { priority: input.priority, eligible: input.eligible });
      if (renewing) {
        renew.push(ns);
        outcomes.push({ ns, leaderId: me, term: row.term, isLeader: true, acquired: false, handOver });
      } else if (takes && quota > 0) {
        quota--;
        take.push(row);
        outcomes.push({ ns, leaderId: me, term: row.term + 1, isLeader: true, acquired: true, handOver: false });
      } else {
        outcomes.push({ ns, leaderId: row.live ? row.leaderId : null, term: row.term, isLeader: false, acquired: false, handOver: false });
      }
    }
    // 4. Write: close lapsed terms, take, renew, open the new terms, heartbeat.
    const until = d.nowPlus(input.expireSeconds);
    for (const batch of chunks(take, GROUP_BATCH_SIZE)) {
      const lapsed = batch.filter((r) => r.leaderId !== null).map((r) => r.ns);
      if (lapsed.length > 0) {
        await execute(
          context,
          m,
          sql`UPDATE ${history} h JOIN ${leaders} l ON l.ns = h.ns AND l.term = h.term
SET h.ended_at = l.lease_expires_at, h.end_reason = ${'expired'}
WHERE h.ns IN ${list(lapsed)} AND h.ended_at IS NULL AND l.leader_id IS NOT NULL`,
        );
      }
      const names = batch.map((r) => r.ns);
      await execute(
        context,
        m,
        sql`UPDATE ${leaders} SET leader_id = ${me}, term = term + 1, lease_expires_at = ${until}, updated_at = ${d.now} WHERE ns IN ${list(names)}`,
      );
      await execute(
        context,
        m,
        sql`INSERT INTO ${history} (ns, term, leader_id, acquired_at, ended_at, end_reason)
SELECT l.ns, l.term, l.leader_id, l.updated_at, NULL, NULL FROM ${leaders} l WHERE l.ns IN ${list(names)}
${d.upsert(['ns', 'term'], ['leader_id', 'acquired_at', 'ended_at', 'end_reason'])}`,
      );
    }
    for (const batch of chunks(renew, GROUP_BATCH_SIZE)) {
      await execute(context, m, sql`UPDATE ${leaders} SET lease_expires_at = ${until}, updated_at = ${d.now} WHERE ns IN ${list(batch)} AND leader_id = ${me}`);
    }
    const metaColumn = raw(input.metadataJson === undefined ? '' : ', metadata');
    const updated = ['last_heartbeat_at', 'expires_at', 'priority', 'eligible', ...(input.metadataJson === undefined ? [] : ['metadata'])];
    for (const batch of batches) {
      const row = (ns: string) =>
        input.metadataJson === undefined
          ? sql`(${ns}, ${me}, ${d.now}, ${until}, ${input.priority}, ${d.bool(input.eligible)})`
          : sql`(${ns}, ${me}, ${d.now}, ${until}, ${input.priority}, ${d.bool(input.eligible)}, ${input.metadataJson})`;
      const values = commaList(padded(batch).map(row));
      await execute(
        context,
        m,
        sql`INSERT INTO ${candidates} (ns, candidate_id, last_heartbeat_at, expires_at, priority, eligible${metaColumn}) VALUES ${values}
${d.upsert(['ns', 'candidate_id'], updated)}`,
      );
    }
    if (!databaseNow) {
      const [clock] = await execute(context, m, sql`SELECT ${d.instant(d.now.text)} AS db_now`);
      databaseNow = d.parseInstant(clock?.db_now) as Date;
    }
    return { outcomes, members, unregistered: input.namespaces.length - registered.size, databaseNow, released, releaseSkipped };
  }

  /** The top-priority live eligible candidates (this one included when it qualifies), sorted. */
  function membersOf(others: Map<string, number>, input: GroupElectInput): string[] {
    let top = input.eligible ? input.priority : -Infinity;
    for (const p of others.values()) top = Math.max(top, p);
    const members = [...others].filter(([, p]) => p === top).map(([id]) => id);
    if (input.eligible && input.priority === top) members.push(input.candidateId);
    return members.sort();
  }

  async function vacateMysql(m: EntityManager, namespaces: readonly string[], me: string, reason: VacateReason, unregister: boolean): Promise<string[]> {
    const vacated: string[] = [];
    for (const batch of chunks(namespaces, GROUP_BATCH_SIZE)) {
      const held = await execute(
        context,
        m,
        sql`SELECT ns, CASE WHEN lease_expires_at > ${d.now} THEN 1 ELSE 0 END AS live FROM ${leaders}
WHERE ns IN ${list(batch)} AND leader_id = ${me} ORDER BY ns FOR UPDATE`,
      );
      if (held.length > 0) {
        const names = held.map((r) => String(r.ns));
        for (const r of held) if (sqlBool(r.live)) vacated.push(String(r.ns));
        await execute(
          context,
          m,
          sql`UPDATE ${history} h JOIN ${leaders} l ON l.ns = h.ns AND l.term = h.term
SET h.end_reason = CASE WHEN l.lease_expires_at > ${d.now} THEN ${reason} ELSE ${'expired'} END,
  h.ended_at = CASE WHEN l.lease_expires_at > ${d.now} THEN ${d.now} ELSE l.lease_expires_at END
WHERE h.ns IN ${list(names)} AND h.ended_at IS NULL AND l.leader_id = ${me}`,
        );
        await execute(
          context,
          m,
          sql`UPDATE ${leaders} SET leader_id = NULL, lease_expires_at = NULL, updated_at = ${d.now} WHERE ns IN ${list(names)} AND leader_id = ${me}`,
        );
      }
      if (unregister) await execute(context, m, sql`DELETE FROM ${candidates} WHERE ns IN ${list(batch)} AND candidate_id = ${me}`);
    }
    return vacated;
  }

  return {
    elect: (input, known, retries) => inTransaction(dataSource, undefined, (m) => electMysql(m, input, known), retries),
    vacate: (namespaces, me, reason, unregister) => inTransaction(dataSource, undefined, (m) => vacateMysql(m, namespaces, me, reason, unregister)),
    read: (statement) => execute(context, dataSource.manager, statement),
  };
}
