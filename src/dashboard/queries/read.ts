import type { DbContext } from '../../db/context';
import { sql, SqlFragment } from '../../db/sql';

/**
 * Every read of the dashboard is a `boundedRead`: reads only, outside any transaction of the
 * application's, stopped at the database when `bounds.signal` aborts (the dashboard closes, the
 * client went away, the stream ended) or after `bounds.timeoutMs`.
 */
export { boundedRead, type ReadBounds } from '../../db/bounded-read';

function commaList(items: readonly unknown[]): SqlFragment {
  if (items.length <= 1) return sql`${items[0]}`;
  const half = Math.ceil(items.length / 2);
  return sql`${commaList(items.slice(0, half))}, ${commaList(items.slice(half))}`;
}

/** The few list lengths {@link inList} pads to (MySQL/MariaDB keep one prepared statement per text). */
const LIST_SIZES = [1, 4, 16, 64, 256, 1024];

/** `(?, ?, …)` of the values for `IN`, the last value repeated up to one of a few lengths. */
export function inList(values: readonly unknown[]): SqlFragment {
  const size = LIST_SIZES.find((s) => s >= values.length) ?? values.length;
  const padded = [...values];
  while (padded.length < size) padded.push(values[values.length - 1]);
  return sql`(${commaList(padded)})`;
}

/** Epoch milliseconds of an instant read with `dialect.instant`, or null. */
export function epochMs(context: DbContext, value: unknown): number | null {
  const date = context.dialect.parseInstant(value);
  return date === null || Number.isNaN(date.getTime()) ? null : date.getTime();
}

/** A count as drivers return it (bigint as text from pg and mysql2). */
export function count(value: unknown): number {
  const n = Number(value ?? 0);
  return Number.isFinite(n) ? n : 0;
}
