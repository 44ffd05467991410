import type { DataSource } from 'typeorm';
import { HISTORY_END_REASONS } from '../../../entities/ElectionHistory';
import type { DbContext } from '../../db/context';
import { sql, SqlFragment } from '../../db/sql';
import { CANDIDATE_TABLE, HISTORY_TABLE } from '../../election/schema';
import { parseMetadata, type CandidateMetadata } from '../../election/validate';
import { MAX_GROUP_TIMELINE_TERMS, MAX_TIMELINE_TERMS } from '../options';
import { epochMs, inList, ReadBounds, boundedRead } from './read';

const REASONS: readonly string[] = HISTORY_END_REASONS;

/** One term in a timeline; instants are epoch ms by the database clock. */
export interface TermView {
  ns: string;
  term: number;
  leaderId: string;
  acquiredAt: number | null;
  /** Null while the term is open in the history (current, or expired and not yet closed by a taker). */
  endedAt: number | null;
  endReason: string | null;
  /** The leader's metadata while its candidate row exists. */
  metadata: CandidateMetadata | null;
}

export interface Timeline {
  dbNow: number;
  /** The window's start: `dbNow - window`. */
  since: number;
  /** Terms that overlap the window, newest first. */
  terms: TermView[];
  /** More terms overlap the window than were read: the oldest are left out. */
  truncated: boolean;
}

export function timelineStatements(context: DbContext) {
  const d = context.dialect;
  const history = context.table(HISTORY_TABLE);
  const candidates = context.table(CANDIDATE_TABLE);
  const columns = sql`h.ns AS ns, h.term AS term, h.leader_id AS leader_id, ${d.instant('h.acquired_at')} AS acquired_at,
  ${d.instant('h.ended_at')} AS ended_at, h.end_reason AS end_reason, c.metadata AS metadata, ${d.instant(d.now.text)} AS db_now`;
  const join = sql`LEFT JOIN ${candidates} c ON c.ns = h.ns AND c.candidate_id = h.leader_id`;
  // Every acquisition is in the past: a term overlaps the window unless it ended before its start.
  const overlaps = (windowSeconds: number) => sql`(h.ended_at IS NULL OR h.ended_at > ${d.nowPlus(-windowSeconds)})`;
  return {
    one(ns: string, windowSeconds: number): SqlFragment {
      return sql`SELECT ${columns} FROM ${history} h ${join}
WHERE h.ns = ${ns} AND ${overlaps(windowSeconds)} ORDER BY h.term DESC ${d.limit(MAX_TIMELINE_TERMS + 1)}`;
    },
    many(namespaces: readonly string[], windowSeconds: number): SqlFragment {
      return sql`SELECT ${columns} FROM ${history} h ${join}
WHERE h.ns IN ${inList(namespaces)} AND ${overlaps(windowSeconds)} ORDER BY h.acquired_at DESC ${d.limit(MAX_GROUP_TIMELINE_TERMS + 1)}`;
    },
    clock(): SqlFragment {
      return sql`SELECT ${d.instant(d.now.text)} AS db_now`;
    },
  };
}

function toTerm(context: DbContext, row: Record<string, unknown>): TermView {
  const reason = row.end_reason === null || row.end_reason === undefined ? null : String(row.end_reason);
  return {
    ns: String(row.ns),
    term: Number(row.term),
    leaderId: String(row.leader_id),
    acquiredAt: epochMs(context, row.acquired_at),
    endedAt: epochMs(context, row.ended_at),
    endReason: reason !== null && REASONS.includes(reason) ? reason : null,
    metadata: parseMetadata(row.metadata),
  };
}

/**
 * The terms of one namespace (`namespaces` of one) or of several that overlap the last
 * `windowSeconds`, newest first, at most {@link MAX_TIMELINE_TERMS} (one) or
 * {@link MAX_GROUP_TIMELINE_TERMS} (several) of them; stopped at the database as `bounds` says.
 */
export async function readTimeline(
  dataSource: DataSource,
  statements: ReturnType<typeof timelineStatements>,
  namespaces: readonly string[],
  windowSeconds: number,
  bounds: ReadBounds,
): Promise<Timeline> {
  return boundedRead(dataSource, bounds, async (run, context) => {
    const one = namespaces.length === 1;
    const max = one ? MAX_TIMELINE_TERMS : MAX_GROUP_TIMELINE_TERMS;
    const rows = namespaces.length === 0 ? [] : await run(one ? statements.one(namespaces[0]!, windowSeconds) : statements.many(namespaces, windowSeconds));
    const dbNow = epochMs(context, (rows[0] ?? (await run(statements.clock()))[0])?.db_now) ?? 0;
    return {
      dbNow,
      since: dbNow - windowSeconds * 1000,
      terms: rows.slice(0, max).map((row) => toTerm(context, row)),
      truncated: rows.length > max,
    };
  });
}
