import { raw, RawSql, sql, SqlFragment } from '../../../db/sql';
import { GroupElectInput, sortedRelease, VacateReason } from '../../../election/group-tick';
import type { GroupContext } from './group-context';

/*
 * The inputs of one group tick as the pieces of its statement use them: the caller's id and
 * options cast to their column types (a parameter the planner cannot type otherwise), the
 * namespaces read back from `params`, the lease's end, the optional metadata column.
 */

export interface TickSql extends GroupContext {
  readonly input: GroupElectInput;
  /** The bound of the tick's lock waits ({@link GroupElectInput.lockWaitMs}); undefined: it waits for none. */
  readonly wait: number | undefined;
  readonly me: SqlFragment;
  readonly eligible: SqlFragment;
  readonly priority: SqlFragment;
  /** The tick's namespaces, as an array, from `params`. */
  readonly nss: RawSql;
  /** The lease's end: now + expireSeconds. */
  readonly until: SqlFragment;
  readonly metaColumn: RawSql;
  readonly metaValue: SqlFragment;
  readonly metaUpdate: RawSql;
  /** The leases given up, in namespace order. */
  readonly release: Array<[string, VacateReason]>;
}

export function tickSql(gc: GroupContext, input: GroupElectInput): TickSql {
  return {
    ...gc,
    input,
    wait: input.lockWaitMs,
    me: sql`CAST(${input.candidateId} AS varchar)`,
    eligible: sql`CAST(${input.eligible} AS boolean)`,
    priority: sql`CAST(${input.priority} AS integer)`,
    nss: raw('CAST((SELECT nss FROM params) AS varchar[])'),
    until: gc.t.d.nowPlus(input.expireSeconds),
    metaColumn: raw(input.metadataJson === undefined ? '' : ', metadata'),
    metaValue: input.metadataJson === undefined ? sql`` : sql`, ${input.metadataJson}`,
    metaUpdate: raw(input.metadataJson === undefined ? '' : ', metadata = EXCLUDED.metadata'),
    release: sortedRelease(input),
  };
}
