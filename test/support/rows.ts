import { randomBytes } from 'crypto';
import type { DataSource } from 'typeorm';
import type { DbKind } from './databases';
import { query } from './databases';

/** A namespace no other test uses. */
export const ns = (): string => `ns-${randomBytes(6).toString('hex')}`;

/**
 * Milliseconds of an instant column as the driver returned it: a Date (pg, mysql2) or SQLite's
 * UTC text. Differences between two columns of one row are exact whatever the driver's time zone.
 */
export function instantMs(value: unknown): number {
  if (value instanceof Date) return value.getTime();
  const text = String(value);
  return new Date(/Z$/.test(text) ? text : `${text.replace(' ', 'T')}Z`).getTime();
}

/** An instant column read with plain SQL as UTC text, as an operator would: epoch ms. */
export async function plainUtcMs(ds: DataSource, kind: DbKind, table: string, column: string, nsValue: string): Promise<number> {
  const expression =
    kind === 'postgres'
      ? `to_char(${column} AT TIME ZONE 'UTC', 'YYYY-MM-DD HH24:MI:SS.MS')`
      : kind === 'mariadb'
        ? `DATE_FORMAT(${column}, '%Y-%m-%d %H:%i:%s.%f')`
        : column;
  const [row] = await query<{ t: string }>(ds, `SELECT ${expression} AS t FROM ${table} WHERE ns = ?`, [nsValue]);
  return instantMs(String(row!.t).slice(0, 23));
}
