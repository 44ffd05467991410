import { createHash, randomBytes } from 'crypto';
import type { DataSource, EntitySubscriberInterface } from 'typeorm';
import type { GuardedTable } from './contract/guards';

/*
 * What the row-trigger guards of MySQL/MariaDB and SQLite share (`mysql/guard.ts`,
 * `sqlite/guard.ts`): how a trigger body is marked as a guard of one installation and namespace,
 * how the catalog's trigger bodies are read back as guarded tables, the name of a new trigger, and
 * the JSON detail a refusal's message ends with. PostgreSQL's guard is one statement trigger whose
 * arguments carry the same facts (`postgres/guard.ts`).
 */

const MARK = 'gemstone-guard';

const hex = (value: string) => Buffer.from(value, 'utf8').toString('hex');

/** The mark of one installation's guards, `gemstone-guard leaders=<hex> `: its leader table, as the database names it. */
export function installationMark(leaders: string): string {
  return `${MARK} leaders=${hex(leaders)} `;
}

/** The comment a guard's trigger body carries: the installation's mark and the namespace (hex: no name can break out of the comment). */
export function markComment(mark: string, ns: string): string {
  return `/* ${mark}ns=${hex(ns)} */`;
}

/** The guarded tables of the catalog's trigger bodies (one row per guarded table) that carry `mark`. */
export function markedGuards(rows: ReadonlyArray<{ tbl: unknown; body: unknown }>, mark: string): GuardedTable[] {
  const guarded: GuardedTable[] = [];
  for (const row of rows) {
    const found = new RegExp(`${mark}ns=([0-9a-f]*) `).exec(String(row.body));
    if (found) guarded.push({ table: String(row.tbl), schema: null, ns: Buffer.from(found[1]!, 'hex').toString('utf8') });
  }
  return guarded;
}

/**
 * A trigger name unique to one guard of `table` by the installation `leaders`, for the event
 * `letter` (i, u, d): a fresh suffix, so that a new guard is created before the old one is dropped.
 */
export function guardTriggerName(leaders: string, table: string, letter: string): string {
  const of = createHash('sha256').update(`${leaders}\u0000${table}`).digest('hex').slice(0, 12);
  return `gemstone_guard_${of}_${randomBytes(4).toString('hex')}_${letter}`;
}

/** What every refusal's message ends with: ` Detail: ` and a JSON object. */
export const DETAIL = ' Detail: ';

/** The JSON detail a refusal's message ends with, or undefined when it has none. */
export function refusalDetail(message: string): Record<string, unknown> | undefined {
  const at = message.lastIndexOf(`${DETAIL}{`);
  if (at < 0) return undefined;
  try {
    const detail: unknown = JSON.parse(message.slice(at + DETAIL.length));
    return typeof detail === 'object' && detail !== null ? (detail as Record<string, unknown>) : undefined;
  } catch {
    return undefined;
  }
}

/**
 * Adds the subscriber that ends proofs with their transactions to the DataSource, once (at the
 * first proof: a DataSource that never proves carries none). TypeORM calls a DataSource's
 * subscribers for every transaction of its QueryRunners.
 */
export function subscribeOnce(dataSource: DataSource, Subscriber: new () => EntitySubscriberInterface): void {
  const subscribers = dataSource.subscribers as EntitySubscriberInterface[];
  if (!subscribers.some((s) => s instanceof Subscriber)) subscribers.push(new Subscriber());
}
