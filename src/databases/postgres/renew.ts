import type { EntityManager } from 'typeorm';
import { executeBound } from '../../db/session';
import { prepare, slot, sql } from '../../db/sql';
import { preparedByFields } from './by-fields';
import { standingOf } from './standing';
import type { ElectDecision } from '../../election/rows';
import type { CandidateFields } from '../../election/validate';
import type { RenewInOneStatement, SharedStore } from '../contract/store';

/**
 * PostgreSQL: a leader's renewal of its own live lease in ONE statement that sends only what a
 * renewal needs — the leader row's lock, the lease, the rivals' standing, the heartbeat — where
 * the whole `elect` (see `elect.ts`) also plans the follower's read, the takeover, the history
 * and the announcement on every call. Tried only when this process last saw the caller lead
 * under `term` (see `election/leading-terms.ts`); whatever it does not renew is decided by the
 * whole `elect` next, which writes as if this statement had not run (it wrote nothing).
 *
 * It renews only where the reference renews without a hand-over (branch R of `decision.ts`),
 * judged as the whole statement judges it:
 * - `locked` locks the leader row `FOR UPDATE` only while it names the caller under `term` (the
 *   newest committed version, after any wait: READ COMMITTED re-reads a row changed meanwhile);
 *   a takeover or vacancy since changes the term or the holder, and nothing is renewed.
 * - `judged` reads only from `locked`, so its clock (`clock_timestamp()`) is read after the lock
 *   was granted — also when the lock's holder left the row as it was (a fenced transaction's
 *   `FOR SHARE` held past the lease's end): the lease must be live then. The caller must be
 *   eligible and not outranked by a live eligible rival, by the options given or as stored
 *   (defaults for a missing row), by the same `standing.ts` as the whole statement's `ranked`; the candidates are read
 *   from the statement's snapshot there as here.
 * - `lease` renews while the lease is still live at the write (a lease that ran out in between is
 *   left to the whole `elect`, which takes it as term + 1), and `touch` heartbeats the caller as
 *   the whole statement does (its row created when missing: `xmax = 0` tells). Lock order: the
 *   leader row, then the candidate row.
 */
export function createPostgresRenew(shared: SharedStore): RenewInOneStatement {
  const { context, candidates, leaders, bool } = shared;
  const d = context.dialect;

  /** Rendered once per combination of the candidate options given (the columns `touch` writes: see `by-fields.ts`). */
  const statement = preparedByFields(shared, ({ ns, me, later, columns, values, updated }) => {
    return prepare(
      sql`WITH locked AS (
  SELECT ns, lease_expires_at FROM ${leaders} WHERE ns = ${ns} AND leader_id = ${me} AND term = CAST(${slot('term')} AS bigint) FOR UPDATE
), judged AS MATERIALIZED (
  SELECT k.ns FROM locked k ${standingOf(candidates, 'k', me)}
  WHERE k.lease_expires_at > clock_timestamp() AND st.eligible AND NOT COALESCE(st.rival_priority > st.priority, false)
), lease AS (
  UPDATE ${leaders} AS l SET lease_expires_at = ${later}, updated_at = clock_timestamp()
  FROM judged WHERE l.ns = judged.ns AND l.lease_expires_at > clock_timestamp()
  RETURNING l.ns
), touch AS (
  INSERT INTO ${candidates} (ns, candidate_id, last_heartbeat_at, expires_at${columns})
  SELECT ns, ${me}, clock_timestamp(), ${later}${values} FROM lease
  ON CONFLICT (ns, candidate_id) DO UPDATE SET last_heartbeat_at = EXCLUDED.last_heartbeat_at, expires_at = EXCLUDED.expires_at${updated}
  RETURNING (xmax = 0) AS inserted
)
SELECT (SELECT NOT inserted FROM touch) AS registered, ${d.instant(d.now.text)} AS db_now FROM lease`,
      d.placeholders,
      'gemstone_renew',
    );
  });

  return async (m: EntityManager, ns: string, id: string, term: number, expireSeconds: number, fields: CandidateFields = {}): Promise<ElectDecision | undefined> => {
    let row: Record<string, unknown> | undefined;
    try {
      [row] = await executeBound(context, m, statement(fields), {
        ns,
        id,
        term,
        expire: expireSeconds,
        metadata: fields.metadataJson,
        priority: fields.priority ?? null,
        eligible: bool(fields.eligible),
      });
    } catch (error) {
      // A deadlock, or a serialization failure where the session's default isolation is above
      // READ COMMITTED (the row changed since the snapshot): the statement wrote nothing, and
      // the whole `elect`, which reruns such conflicts, decides.
      if (d.isRetryableConflict(error)) return undefined;
      throw error;
    }
    if (!row) return undefined;
    return { leaderId: id, term, isLeader: true, acquired: false, handOver: false, wasRegistered: row.registered === true, databaseNow: d.parseInstant(row.db_now) as Date };
  };
}
