import { raw, RawSql, sql, SqlFragment } from '../../../db/sql';
import type { GroupElectInput } from '../../../election/group-tick';
import { GroupContext, inInput, nowOnce, nowOnceText } from './group-context';

/*
 * The pieces the statements of one group tick share: the caller's id and options, the
 * namespaces (one JSON parameter), the clock and the lease's end (each read once per statement),
 * whether a lease is over, the best rival, the top-priority members, the caller's fair share of
 * them (`limit`, as `fairShare` in election/group-tick.ts), and `unless`, which skips a statement
 * by changes() (the statements of the program run together or not at all).
 */

export interface TickSql extends GroupContext {
  readonly input: GroupElectInput;
  readonly me: string;
  readonly nsJson: string;
  readonly inNs: SqlFragment;
  readonly now: SqlFragment;
  readonly until: SqlFragment;
  /** The caller's eligibility as the column stores it (1 or 0). */
  readonly eligible: number;
  /** How many namespaces the tick names. */
  readonly n: SqlFragment;
  /** Whether the lease of the leader row aliased `l` is over (vacant, or lapsed with its term closed). */
  over(l: string): RawSql;
  /** The best priority of the other live eligible candidates of the leader row aliased `l`. */
  rivalOf(l: string): SqlFragment;
  /** The CTEs `others`, `top`, `members`: the group's top-priority live eligible candidates. */
  readonly members: SqlFragment;
  /** How many leases the caller may take (-1: no cap, without balance). */
  readonly limit: SqlFragment | RawSql;
  readonly metaColumn: RawSql;
  readonly metaValue: SqlFragment;
  readonly metaSet: SqlFragment;
  /** The namespaces, or none unless `condition` (a changes() test) holds. */
  unless(condition: SqlFragment): SqlFragment;
}

export function tickSql(gc: GroupContext, input: GroupElectInput): TickSql {
  const { d, candidates, leaders, history } = gc.t;
  const me = input.candidateId;
  const nsJson = JSON.stringify(input.namespaces);
  const inNs = inInput(nsJson);
  const now = nowOnce(gc);
  const clockText = nowOnceText(gc);
  const until = sql`(SELECT ${d.nowPlus(input.expireSeconds)})`;
  const eligible = input.eligible ? 1 : 0;
  const over = (l: string) =>
    raw(`(${l}.leader_id IS NULL OR ${l}.lease_expires_at IS NULL OR (${l}.lease_expires_at <= ${clockText}
  AND NOT EXISTS (SELECT 1 FROM ${history.text} h WHERE h.ns = ${l}.ns AND h.term = ${l}.term AND h.ended_at IS NULL)))`);
  const rivalOf = (l: string) =>
    sql`(SELECT MAX(c.priority) FROM ${candidates} c WHERE c.ns = ${raw(l)}.ns AND c.candidate_id <> ${me} AND c.eligible AND c.expires_at > ${now})`;
  const members = sql`WITH others AS (
  SELECT candidate_id, MAX(priority) AS p FROM ${candidates} WHERE ns ${inNs} AND candidate_id <> ${me} AND eligible AND expires_at > ${now}
  GROUP BY candidate_id
), top AS (
  SELECT MAX(p) AS p FROM (SELECT p FROM others UNION ALL SELECT ${input.priority} WHERE ${eligible} = 1)
), members AS (
  SELECT candidate_id FROM others WHERE p = (SELECT p FROM top)
  UNION ALL SELECT ${me} WHERE ${eligible} = 1 AND ${input.priority} = (SELECT p FROM top)
)`;
  const n = sql`CAST(${input.namespaces.length} AS INTEGER)`;
  // fairShare (election/group-tick.ts) of the top-priority members, less what the caller holds.
  const limit = input.balance
    ? sql`(${members} SELECT CASE WHEN NOT EXISTS (SELECT 1 FROM members WHERE candidate_id = ${me}) THEN 0
  ELSE MAX(0, ${n} / k + CASE WHEN rank < ${n} % k THEN 1 ELSE 0 END
    - (SELECT COUNT(*) FROM ${leaders} l WHERE l.ns ${inNs} AND l.leader_id = ${me} AND l.lease_expires_at > ${now})) END
  FROM (SELECT COUNT(*) AS k, COALESCE(SUM(candidate_id < ${me}), 0) AS rank FROM members))`
    : raw('-1');
  const metaColumn = raw(input.metadataJson === undefined ? '' : ', metadata');
  const metaValue = input.metadataJson === undefined ? sql`` : sql`, ${input.metadataJson}`;
  const metaSet = input.metadataJson === undefined ? sql`` : sql`, metadata = ${input.metadataJson}`;
  // Statements skipped by changes(): the statements of the program run together or not at all.
  const unless = (condition: SqlFragment) => sql`SELECT value FROM json_each(${nsJson}) WHERE ${condition}`;
  return { ...gc, input, me, nsJson, inNs, now, until, eligible, n, over, rivalOf, members, limit, metaColumn, metaValue, metaSet, unless };
}
