import { PreparedSql, raw, RawSql, slot, sql, SqlFragment } from '../../db/sql';
import type { CandidateFields } from '../../election/validate';
import type { SharedStore } from '../contract/store';

/** What PostgreSQL's `elect` statements share: the call's slots, and the parts of the candidate upsert that depend on which options a call gives. */
export interface TouchColumns {
  /** The namespace (slot `ns`). */
  readonly ns: SqlFragment;
  /** The caller's id (slot `id`). */
  readonly me: SqlFragment;
  /** The new lease's (and heartbeat's) end: `clock_timestamp()` plus slot `expire` seconds. */
  readonly later: SqlFragment;
  /** `, metadata, priority` …: the option columns after the fixed ones. */
  readonly columns: RawSql;
  /** Their values, as slots named by the column (`metadata`, `priority`, `eligible`). */
  readonly values: SqlFragment;
  /** `, metadata = EXCLUDED.metadata` …: what the upsert's update sets. */
  readonly updated: RawSql;
}

/**
 * A statement that heartbeats the caller with the candidate options a call gives, rendered by
 * `render` once per combination of those options (which columns the candidate upsert writes) and
 * kept: a call only binds its values. The same text on every call is also what lets it run as a
 * named prepared statement (planned once per connection). Used by `elect.ts` and `renew.ts`.
 */
export function preparedByFields(shared: SharedStore, render: (touch: TouchColumns) => PreparedSql): (fields: CandidateFields) => PreparedSql {
  const rendered = new Map<number, PreparedSql>();
  return (fields) => {
    const key = (fields.metadataJson !== undefined ? 1 : 0) | (fields.priority !== undefined ? 2 : 0) | (fields.eligible !== undefined ? 4 : 0);
    let prepared = rendered.get(key);
    if (!prepared) {
      const names = shared.fieldColumns(fields).names;
      let values = sql``;
      for (const name of names) values = sql`${values}, ${slot(name)}`;
      prepared = render({
        ns: sql`CAST(${slot('ns')} AS varchar)`,
        me: sql`CAST(${slot('id')} AS varchar)`,
        later: sql`(clock_timestamp() + make_interval(secs => ${slot('expire')}))`,
        columns: raw(names.map((name) => `, ${name}`).join('')),
        values,
        updated: raw(names.map((name) => `, ${name} = EXCLUDED.${name}`).join('')),
      });
      rendered.set(key, prepared);
    }
    return prepared;
  };
}
