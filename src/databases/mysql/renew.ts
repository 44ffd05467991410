import type { EntityManager } from 'typeorm';
import { executeRaw } from '../../db/session';
import { raw, sql, SqlFragment } from '../../db/sql';
import type { CandidateFields } from '../../election/validate';
import type { ElectDecision } from '../../election/rows';
import type { RenewInOneStatement, SharedStore } from '../contract/store';
import { isMariadbServer } from './session';

/**
 * MariaDB: a leader's renewal of its own live lease in ONE autocommit statement, one round trip
 * instead of the locked path's seven (START TRANSACTION, the follower read, the lock, the locked
 * read, the renewal, the heartbeat, COMMIT).
 *
 * It renews only where the reference renews without a hand-over (branch R of `decision.ts`): the
 * row names the caller under the term it last led under, the lease is live, the caller is
 * eligible and no live eligible rival outranks it. Anything else writes nothing and is decided by
 * the locked path, which also covers what this statement cannot see.
 *
 * Why it decides as the locked path does, although MariaDB fixes `UTC_TIMESTAMP(6)` when a
 * statement starts (the defect the locked path avoids by locking first):
 * - it never waits for a lock: `innodb_lock_wait_timeout = 0` (row locks, the rivals' candidate
 *   rows its subquery reads included) and `lock_wait_timeout = 0` (metadata locks) for this
 *   statement only; a lock held elsewhere fails it at once (1205) and the locked path decides;
 * - so its clock is read microseconds before its rows, and it asks for the lease to outlive that
 *   clock by half a lease (`margin`): a lease that could end between the two is left to the
 *   locked path. Only a statement stalled for half a lease between its start and its row read,
 *   with no lock to wait for, could renew a lease that had just ended.
 * - rivals are judged at the same clock; a rival that expires in between only makes the
 *   statement not renew.
 *
 * What it writes is what the locked path writes for branch R: the lease (`now + expire`), the
 * leader row's `updated_at` moved at least one microsecond forward, the caller's heartbeat and the
 * candidate options given. The leader row is locked first (STRAIGHT_JOIN), as everywhere.
 *
 * The database clock comes back in the OK packet: `LAST_INSERT_ID(expr)` makes `expr` the
 * connection's insert id, which the server sends with the affected-row count (and which a later
 * `SELECT LAST_INSERT_ID()` on that pooled connection also returns).
 *
 * MySQL has no `SET STATEMENT` (its lock wait counts whole seconds): there it is not used.
 */
export function createRenewInOneStatement(shared: SharedStore): RenewInOneStatement {
  const { context, leaders, candidates } = shared;
  const d = context.dialect;

  interface Values {
    ns: string;
    id: string;
    term: number;
    expireMicros: number;
    marginMicros: number;
    fields: CandidateFields;
  }

  /** The statement; its text depends only on which candidate options are given. */
  function statement(v: Values): SqlFragment {
    const { names, values: given } = shared.fieldColumns(v.fields);
    let options = sql``;
    names.forEach((name, i) => (options = sql`${options}, c.${raw(name)} = ${given[i]}`));
    const eligible = v.fields.eligible === undefined ? raw('c.eligible') : sql`${shared.bool(v.fields.eligible)}`;
    const priority = v.fields.priority === undefined ? raw('c.priority') : sql`${v.fields.priority}`;
    const now = d.now;
    return sql`SET STATEMENT innodb_lock_wait_timeout = 0, lock_wait_timeout = 0 FOR
UPDATE ${leaders} l STRAIGHT_JOIN ${candidates} c ON c.ns = l.ns AND c.candidate_id = l.leader_id
SET l.lease_expires_at = ${now} + INTERVAL ${v.expireMicros} MICROSECOND,
  l.updated_at = GREATEST(${now}, l.updated_at + INTERVAL 1 MICROSECOND),
  c.last_heartbeat_at = ${now},
  c.expires_at = ${now} + INTERVAL (${v.expireMicros} + 0 * LAST_INSERT_ID(${d.instant(now.text)})) MICROSECOND${options}
WHERE l.ns = ${v.ns} AND l.leader_id = ${v.id} AND l.term = ${v.term}
  AND l.lease_expires_at > ${now} + INTERVAL ${v.marginMicros} MICROSECOND
  AND COALESCE(${eligible}, 1)
  AND NOT EXISTS (SELECT 1 FROM ${candidates} r WHERE r.ns = l.ns AND r.candidate_id <> l.leader_id AND r.eligible
    AND r.expires_at > ${now} AND r.priority > COALESCE(${priority}, 0))`;
  }

  return async (m: EntityManager, ns: string, id: string, term: number, expireSeconds: number, fields: CandidateFields = {}): Promise<ElectDecision | undefined> => {
    if (!m.queryRunner || !(await isMariadbServer(context.dataSource, m.queryRunner))) return undefined;
    const expireMicros = Math.round(expireSeconds * 1e6);
    let result: { affectedRows?: unknown; insertId?: unknown } | undefined;
    try {
      result = (await executeRaw(context, m, statement({ ns, id, term, expireMicros, marginMicros: Math.round(expireMicros / 2), fields }))) as typeof result;
    } catch (error) {
      // A lock held elsewhere (1205, at once), a deadlock or a Galera certification conflict
      // (1213): nothing was written; the locked path decides.
      if (d.isRetryableConflict(error)) return undefined;
      throw error;
    }
    if (!(Number(result?.affectedRows) > 0)) return undefined;
    const databaseNow = d.parseInstant(result?.insertId);
    if (!databaseNow) throw new Error('gemstone-utils: the one-statement renewal returned no database clock');
    return { leaderId: id, term, isLeader: true, acquired: false, handOver: false, wasRegistered: true, databaseNow };
  };
}
