import { sql, SqlFragment } from '../../../db/sql';
import { padded } from '../session';

/*
 * How the group statements name many namespaces: in batches (`chunks`, at most
 * GROUP_BATCH_SIZE per statement, the protocol's placeholder limit in mind) and as `IN (?, ?, …)`
 * lists padded to a few lengths, so that a handful of prepared texts serve every group size.
 */

export function chunks<T>(items: readonly T[], size: number): T[][] {
  const out: T[][] = [];
  for (let i = 0; i < items.length; i += size) out.push(items.slice(i, i + size));
  return out;
}

/**
 * The items separated by commas, as a balanced tree of fragments: rendering recurses once per
 * level, so 10,000 items nest 14 deep rather than 10,000.
 */
export function commaList(items: readonly unknown[]): SqlFragment {
  if (items.length <= 1) return sql`${items[0]}`;
  const half = Math.ceil(items.length / 2);
  return sql`${commaList(items.slice(0, half))}, ${commaList(items.slice(half))}`;
}

/** `(?, ?, …)` of the values, for `IN` (padded to a few lengths, see {@link padded}). */
export function list(values: readonly unknown[]): SqlFragment {
  return sql`(${commaList(padded(values))})`;
}
