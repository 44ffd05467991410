import { createHash } from 'crypto';
import type { DbContext } from '../db/context';
import type { Dialect } from '../databases/dialect';
import { raw, RawSql } from '../db/sql';

/*
 * The names of the election's tables, indexes and step-2 columns: a leaf module (it imports no
 * module of the library that imports `databases/parts.ts`), so the contracts of the database
 * folders and the folders themselves can name them without an import circle. `schema.ts`
 * re-exports all of it.
 */

/** The candidates' table: one row per namespace and candidate, with its expiry. */
export const CANDIDATE_TABLE = 'gemstone_election_candidate';
/** The leaders' table: one row per namespace, with the lease and its term. */
export const LEADER_TABLE = 'gemstone_election_leader';
/** The history table: one row per term. */
export const HISTORY_TABLE = 'gemstone_election_history';
/**
 * SQLite's proof table of guarded tables (`databases/sqlite/guard.ts`): created by the first
 * `guardTable`; a proving transaction's rows, never committed.
 */
export const PROOF_TABLE = 'gemstone_election_proof';
/** The runs table of schedules: one row per `(ns, name, slot)`. */
export const RUN_TABLE = 'gemstone_election_run';
/**
 * The candidates index on `(ns, expires_at)` that step 1 created (the DDL's name on a DataSource:
 * `candidateIndexName`) and step 4 drops: a heartbeat rewrites `expires_at`, so the index made every
 * heartbeat write index entries.
 */
export const CANDIDATE_INDEX = 'IDX_gemstone_election_candidate_ns_expires_at';
/** The history index on `ended_at`, as the entity declares it (the DDL's name on a DataSource: `historyIndexName`). */
export const HISTORY_INDEX = 'IDX_gemstone_election_history_ended_at';
/**
 * The runs index on `(slot DESC, ns, name, finished_at)`: `getRuns`' order (newest slot first,
 * then namespace and name: a total order, for pages that follow on), and the range on `slot` of
 * pruning finished runs; as the entity declares it (the DDL's name on a DataSource:
 * `runIndexName`).
 */
export const RUN_INDEX = 'IDX_gemstone_election_run_slot';
/**
 * The runs index on `(ns, slot DESC, name)`: `getRuns` of one namespace, in its order (the primary
 * key `(ns, name, slot)` orders a namespace's runs by name first); as the entity
 * declares it (the DDL's name on a DataSource: `runNsIndexName`).
 */
export const RUN_NS_INDEX = 'IDX_gemstone_election_run_ns_slot';

/** The election's three tables on one DataSource, escaped and qualified, with its dialect: what every statement of the election is built from. */
export interface ElectionTables {
  /** The DataSource's dialect (its clock, instants, upserts). */
  readonly d: Dialect;
  readonly candidates: RawSql;
  readonly leaders: RawSql;
  readonly history: RawSql;
}

/** The {@link ElectionTables} of a DataSource's context. */
export function electionTables(context: Pick<DbContext, 'dialect' | 'table'>): ElectionTables {
  return { d: context.dialect, candidates: context.table(CANDIDATE_TABLE), leaders: context.table(LEADER_TABLE), history: context.table(HISTORY_TABLE) };
}

/** PostgreSQL truncates identifiers beyond 63 bytes (MySQL refuses beyond 64). */
const MAX_IDENTIFIER_LENGTH = 63;

/**
 * A constraint or index name derived from the real table name, so two `entityPrefix`es (or
 * naming strategies) in one schema never collide. Without a prefix it is the historical name.
 * Beyond 63 bytes the table part is shortened and a hash of the full name keeps it unique.
 */
export function objectName(kind: 'PK' | 'CHK' | 'IDX', table: string, suffix = ''): string {
  return boundedName(`${kind}_${table}`, suffix);
}

/**
 * `head` + `suffix` as one identifier of at most 63 bytes: beyond, `head` is shortened and a hash
 * of the full name keeps it unique (the suffix is then dropped).
 */
export function boundedName(head: string, suffix = ''): string {
  const full = `${head}${suffix}`;
  if (Buffer.byteLength(full) <= MAX_IDENTIFIER_LENGTH) return full;
  const hash = createHash('sha256').update(full).digest('hex').slice(0, 10);
  let shortened = head;
  while (Buffer.byteLength(`${shortened}_${hash}`) > MAX_IDENTIFIER_LENGTH) shortened = shortened.slice(0, -1);
  return `${shortened}_${hash}`;
}

/**
 * A constraint or index name as the DDL writes it: quoted with `quote` (a double quote on
 * PostgreSQL and SQLite, a backtick on MySQL/MariaDB), which is doubled inside, so that a prefix
 * such as `my-app_` (a hyphen) or one with a quote in it stays one identifier.
 */
export function quotedName(name: string, quote: '"' | '`'): RawSql {
  return raw(`${quote}${name.split(quote).join(quote + quote)}${quote}`);
}

/** The names the DDL needs: the library's table names as this DataSource resolves them. */
export type TableNames = Pick<DbContext, 'table' | 'tableName'>;

/** The candidate index's name on a DataSource. */
export function candidateIndexName(names: Pick<DbContext, 'tableName'>): string {
  return objectName('IDX', names.tableName(CANDIDATE_TABLE), '_ns_expires_at');
}

/** The history index's name on a DataSource. */
export function historyIndexName(names: Pick<DbContext, 'tableName'>): string {
  return objectName('IDX', names.tableName(HISTORY_TABLE), '_ended_at');
}

/** The runs index's name on a DataSource. */
export function runIndexName(names: Pick<DbContext, 'tableName'>): string {
  return objectName('IDX', names.tableName(RUN_TABLE), '_slot');
}

/** The name on a DataSource of the runs index of one namespace ({@link RUN_NS_INDEX}). */
export function runNsIndexName(names: Pick<DbContext, 'tableName'>): string {
  return objectName('IDX', names.tableName(RUN_TABLE), '_ns_slot');
}

/** The candidate columns step 2 adds, in the order it adds them (appended after `expires_at`). */
export const IDENTITY_COLUMNS = ['metadata', 'priority', 'eligible'] as const;
/** One of {@link IDENTITY_COLUMNS}. */
export type IdentityColumn = (typeof IDENTITY_COLUMNS)[number];
