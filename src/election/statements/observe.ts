import { raw, sql, SqlFragment } from '../../db/sql';
import type { ObservedLeader } from '../rows';
import type { ElectionTables } from '../tables';
import { parseMetadata } from '../validate';
import { leaderColumns, toLeaderRow } from './leader-row';

/*
 * What a watcher reads of a namespace in one statement: the leader row (if any), its term's
 * history row and the database clock. The clock is read even without a leader row (the join
 * starts from a one-row `clock`), so an observer always learns the database time.
 */

/** The observation of `ns`; the leader's metadata comes from the leader columns' subquery. */
export function observeStatement(t: ElectionTables, ns: string): SqlFragment {
  const { d, leaders, history } = t;
  return sql`SELECT ${raw(leaderColumns(t, 'l'))}, ${d.instant(d.now.text)} AS db_now, ${d.instant('h.acquired_at')} AS acquired_at,
  ${d.instant('h.ended_at')} AS ended_at
FROM (SELECT 1 AS one) clock
LEFT JOIN ${leaders} l ON l.ns = ${ns}
LEFT JOIN ${history} h ON h.ns = l.ns AND h.term = l.term`;
}

/** What {@link observeStatement} read (its one row). */
export function toObserved(t: ElectionTables, raw: Record<string, unknown> | undefined): ObservedLeader {
  const { d } = t;
  if (!raw) throw new Error('gemstone-utils: the database clock read returned no row');
  const now = d.parseInstant(raw.db_now) as Date;
  const row = raw.ns === null || raw.ns === undefined ? undefined : toLeaderRow(t, raw);
  return { row, now, acquiredAt: d.parseInstant(raw.acquired_at), endedAt: d.parseInstant(raw.ended_at), metadata: parseMetadata(raw.metadata) };
}
