import type { DbContext } from '../../db/context';
import { raw, RawSql, sql, SqlFragment } from '../../db/sql';
import { NOTIFY_CHANNEL } from '../../election/observe/listen-options';
import { LEADER_TABLE } from '../../election/schema';

/**
 * The NOTIFY payload of a lease change (`LeaseChange` plus the leader table's schema and name, so
 * a listener of one schema ignores another's), built here once for every statement that announces:
 * the one-statement elect, the locked path's `announce`, and the group tick's acquisitions and
 * vacates. Delivered at commit, so a rolled-back change is never announced.
 *
 * Returns a function of three SQL expressions (`ns`, `leaderId`, `term`: columns of the calling
 * statement or bound values) giving the `pg_notify(…)` call; the text is the same on every call,
 * which keeps the calling statements' prepared texts stable.
 */
/** A column or expression of the calling statement ({@link raw}), or a fragment binding a value. */
type Expression = RawSql | SqlFragment;

export function leaseAnnouncement(context: DbContext): (ns: Expression, leaderId: Expression, term: Expression) => SqlFragment {
  // An unqualified leader table lives in current_schema(), which the listener compares against.
  const leaderSchema = context.schemaName(LEADER_TABLE);
  const schema = leaderSchema === undefined ? raw('current_schema()') : sql`CAST(${leaderSchema} AS text)`;
  const table = sql`CAST(${context.tableName(LEADER_TABLE)} AS text)`;
  return (ns, leaderId, term) =>
    sql`pg_notify(CAST(${NOTIFY_CHANNEL} AS text), json_build_object('schema', ${schema}, 'table', ${table},
    'ns', ${ns}, 'leaderId', ${leaderId}, 'term', ${term})::text)`;
}
