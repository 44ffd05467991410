import type { DbContext } from '../../../db/context';
import { ElectionTables, electionTables } from '../../../election/tables';
import { leaseAnnouncement } from '../announce';

/*
 * What the group statements of one DataSource are built from: its tables, and the NOTIFY call
 * that announces each lease change (see `announce.ts`).
 */

export interface GroupContext {
  readonly context: DbContext;
  readonly t: ElectionTables;
  /** The `pg_notify(…)` of a lease change, of three expressions of the calling statement. */
  readonly announcement: ReturnType<typeof leaseAnnouncement>;
}

export function groupContext(context: DbContext): GroupContext {
  return { context, t: electionTables(context), announcement: leaseAnnouncement(context) };
}

/** Parses a json column (the driver hands back json parsed, and text as text). */
export const parseJson = (value: unknown): unknown => (typeof value === 'string' ? JSON.parse(value) : value);

