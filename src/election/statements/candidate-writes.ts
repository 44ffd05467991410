import { Bound, raw, RawSql, sql, SqlFragment } from '../../db/sql';
import type { ElectionTables } from '../tables';
import type { BoundCandidateFields } from '../validate';

/*
 * The writes of a candidate row: the upsert of every call that heartbeats (the heartbeat columns
 * always, the options the call gave; omitted options keep what is stored) and its deletion.
 */

/** A boolean option as a statement parameter, as the driver takes it (see `Dialect.bool`); null when not given. */
export function boolParameter({ d }: ElectionTables, value: boolean | undefined): boolean | number | null {
  return value === undefined ? null : d.bool(value);
}

/** The columns and values of the candidate options a call gave (omitted ones keep what is stored). */
export function fieldColumns(t: ElectionTables, fields: BoundCandidateFields): { names: string[]; values: unknown[] } {
  const names: string[] = [];
  const values: unknown[] = [];
  if (fields.metadataJson !== undefined) names.push('metadata'), values.push(fields.metadataJson);
  if (fields.priority !== undefined) names.push('priority'), values.push(fields.priority);
  if (fields.eligible !== undefined) names.push('eligible'), values.push(boolParameter(t, fields.eligible));
  return { names, values };
}

/** `, col1, col2` and `, $a, $b` for the INSERT of a candidate row, or nothing. */
function fieldInsert(t: ElectionTables, fields: BoundCandidateFields): { columns: RawSql; values: SqlFragment } {
  const { names, values } = fieldColumns(t, fields);
  let list = sql``;
  for (const value of values) list = sql`${list}, ${value}`;
  return { columns: raw(names.map((name) => `, ${name}`).join('')), values: list };
}

/** The candidate upsert: heartbeat columns always, the given options too. */
export function candidateUpsert(t: ElectionTables, ns: Bound<string>, candidateId: Bound<string>, expireSeconds: number, fields: BoundCandidateFields): SqlFragment {
  const { d, candidates } = t;
  const { columns, values } = fieldInsert(t, fields);
  const updated = ['last_heartbeat_at', 'expires_at', ...fieldColumns(t, fields).names];
  return sql`INSERT INTO ${candidates} (ns, candidate_id, last_heartbeat_at, expires_at${columns})
VALUES (${ns}, ${candidateId}, ${d.now}, ${d.nowPlus(expireSeconds)}${values})
${d.upsert(['ns', 'candidate_id'], updated)}`;
}

/** Removes the candidate's row (resign, unregister). */
export function deleteCandidateStatement({ candidates }: ElectionTables, ns: string, candidateId: string): SqlFragment {
  return sql`DELETE FROM ${candidates} WHERE ns = ${ns} AND candidate_id = ${candidateId}`;
}
