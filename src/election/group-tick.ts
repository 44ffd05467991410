
/*
 * What a group tick takes and answers, and the two rules every database's tick applies (the lock
 * order of namespaces, the fair share). A leaf: the group-tick contract
 * (`src/databases/contract/group.ts`) and the database folders import it without importing the
 * group store, which asks the folders (through `parts.ts`) for their statements.
 */

import type { VacateReason } from './decision';
import type { ElectOutcome } from './rows';

export type { VacateReason };

/** What a tick campaigns with. `namespaces`: distinct, sorted by {@link compareNs}. */
export interface GroupElectInput {
  readonly namespaces: readonly string[];
  readonly candidateId: string;
  readonly expireSeconds: number;
  readonly priority: number;
  readonly eligible: boolean;
  /** Sent when registering (and after a candidate row went missing); undefined: keep what is stored. */
  readonly metadataJson: string | undefined;
  /** Acquire no more than this candidate's fair share (see {@link fairShare}). */
  readonly balance: boolean;
  /**
   * Leases given up (hand-over, resignation), vacated by the same transaction instead of being
   * renewed, each term closed with its reason; not among `namespaces`. PostgreSQL and MySQL only
   * (see {@link GroupStore.foldsVacates}).
   */
  readonly release?: ReadonlyMap<string, VacateReason>;
  /**
   * How long the tick waits for a lock on the leader row of a lease this candidate holds, live
   * (PostgreSQL and MySQL/MariaDB, in milliseconds; MySQL/MariaDB count lock waits in whole
   * seconds, at least one). Its own fenced transactions (`assertLeader`) lock those rows for a
   * moment, and such a row must still be renewed: the tick locks them first, in namespace order,
   * and waits, as an elector's renewal does; a lock held longer (a rival's transaction) makes the
   * tick run again at once without waiting for any row (see {@link GroupStore.elect}).
   * Undefined: never wait (such a row is left for the next tick).
   */
  readonly lockWaitMs?: number;
}

/**
 * What the tick found for one namespace: an {@link ElectOutcome}'s lease fields, where the term
 * (and so the leader) can be unknown this tick (null: a row locked by another transaction, or
 * one that changed hands after the statement's snapshot).
 */
export type GroupNsOutcome = Readonly<Pick<ElectOutcome, 'ns' | 'leaderId' | 'isLeader' | 'acquired' | 'handOver'> & { term: number | null }>;

export interface GroupElectOutcome {
  readonly outcomes: readonly GroupNsOutcome[];
  /**
   * The live eligible candidates of the group's namespaces at the highest priority among them
   * (this caller included when it is one), sorted: who the namespaces are balanced between.
   */
  readonly members: readonly string[];
  /** How many of the namespaces had no candidate row of the caller before the tick. */
  readonly unregistered: number;
  readonly databaseNow: Date;
  /** The leases of `release` vacated (held by the caller, lapsed ones too), with their terms. */
  readonly released?: ReadonlyArray<{ readonly ns: string; readonly term: number }>;
  /** The leases of `release` still held by the caller but locked by another transaction: not vacated, to retry. */
  readonly releaseSkipped?: readonly string[];
}

/**
 * Namespace order of the lock: code points, as the binary collations of the tables sort (UTF-8
 * byte order is code point order). Compared on the UTF-16 code units, without encoding: a group
 * tick sorts all its namespaces with it, and encoding both strings at every comparison cost ten
 * times as much. At the first unit that differs, a surrogate (half of a code point above U+FFFF)
 * outranks every other unit, and U+E000–U+FFFF move down to make room ({@link codePointRank}).
 */
export function compareNs(a: string, b: string): number {
  if (a === b) return 0;
  const length = Math.min(a.length, b.length);
  for (let i = 0; i < length; i++) {
    const x = a.charCodeAt(i);
    const y = b.charCodeAt(i);
    if (x !== y) return codePointRank(x) - codePointRank(y);
  }
  return a.length - b.length;
}

/** A UTF-16 code unit's place in code point order where two strings first differ. */
function codePointRank(unit: number): number {
  if (unit >= 0xd800 && unit <= 0xdfff) return unit + 0x2000;
  return unit >= 0xe000 ? unit - 0x800 : unit;
}

/**
 * THE fair-share rule: how many of `n` namespaces `me` should lead among `members` (the live
 * eligible candidates of the top priority): ⌊n/k⌋, plus one for the first `n mod k` members in id
 * order; 0 when `me` is not a member. Id order is byte order ({@link compareNs}), as the SQL copies
 * compare (PostgreSQL `COLLATE "C"`, SQLite's BINARY collation): `Array#sort` would order by UTF-16
 * code units, which differs above U+FFFF. MySQL/MariaDB call this function; PostgreSQL's group
 * tick (`quota` in `databases/postgres/group/tick-decide.ts`) and SQLite's (`limit` in
 * `databases/sqlite/group/tick-sql.ts`) compute it in SQL and cite it.
 */
export function fairShare(n: number, members: readonly string[], me: string): number {
  const sorted = [...members].sort(compareNs);
  const rank = sorted.indexOf(me);
  if (rank < 0) return 0;
  const k = sorted.length;
  return Math.floor(n / k) + (rank < n % k ? 1 : 0);
}

/**
 * How many namespaces one statement names at most on MySQL/MariaDB (each costs one placeholder,
 * some statements name them twice; the protocol allows 65,535 placeholders per statement). Larger
 * groups are sent in batches of this size inside the same transaction.
 */
export const GROUP_BATCH_SIZE = 1_000;

/** The outcome of a namespace the tick could not judge (its row locked by another transaction, or changed hands meanwhile): unknown this tick. */
export function unknownOutcome(ns: string): GroupNsOutcome {
  return { ns, leaderId: null, term: null, isLeader: false, acquired: false, handOver: false };
}

/** The leases a tick gives up ({@link GroupElectInput.release}) in namespace order, the order their rows are locked in. */
export function sortedRelease(input: GroupElectInput): Array<[string, VacateReason]> {
  return [...(input.release ?? new Map<string, VacateReason>())].sort(([a], [b]) => compareNs(a, b));
}
