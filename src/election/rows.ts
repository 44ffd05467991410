import type { CandidateMetadata } from './validate';

/*
 * The election's rows as the library reads them, and what one `elect` decided: plain types, in a
 * leaf module, so the database contracts (`databases/contract/`) can name them without importing
 * the store (which asks the database parts). Re-exported by `store.ts`.
 */

/** The leader row as the library reads it: `live` is decided by the database clock. */
export interface LeaderRow {
  ns: string;
  leaderId: string | null;
  term: number;
  /** `leader_id` is set and `lease_expires_at > now`. */
  live: boolean;
  leaseExpiresAt: Date | null;
  updatedAt: Date;
  /** The metadata of the candidate row named by `leader_id`; null without one (or without metadata). */
  metadata: CandidateMetadata | null;
  /** The database clock when the row was read. */
  now: Date;
}

/** The leader row as a watcher sees it, with the database clock of the read (see `watch.ts`). */
export interface ObservedLeader {
  /** Undefined when the namespace has no leader row yet. */
  row: LeaderRow | undefined;
  /** The database clock at the read. */
  now: Date;
  /** When the row's current term was acquired, from its history row (null without one). */
  acquiredAt: Date | null;
  /** When the row's current term ended, from its history row (null while open or without one). */
  endedAt: Date | null;
  /** The named leader's candidate metadata (null when none or the candidate row is gone). */
  metadata: Record<string, unknown> | null;
}

/**
 * Where the caller of `elect` stands among the candidates, read with the leader row (in the same
 * statement, so it costs no round trip): its stored priority and eligibility, whether its row
 * exists, and the highest priority among the OTHER live eligible candidates.
 */
export interface Standing {
  registered: boolean;
  storedPriority: number | null;
  storedEligible: boolean | null;
  /** Null when no other live eligible candidate exists. */
  rivalPriority: number | null;
}

/** What one `elect` decided: `elect` returns `leaderId`; the LeaderElector needs the rest. */
export interface ElectOutcome {
  /** The namespace. */
  ns: string;
  /**
   * The leader after the call: the caller or whoever holds an unexpired lease; null when nobody
   * does (the caller is ineligible, or deferred to a live eligible candidate of higher priority).
   */
  leaderId: string | null;
  /** The leader row's term (the leader's, when there is one). */
  term: number;
  /** The caller holds the lease after this call. */
  isLeader: boolean;
  /** The caller acquired a lease it did not already hold unexpired (the term went up). */
  acquired: boolean;
  /**
   * The caller renewed its lease but should give it up: it is not eligible, or a live eligible
   * candidate of strictly higher priority exists. `elect` never gives a lease up by itself (the
   * leader's work has to stop first); a `LeaderElector` ends its leadership, then resigns.
   */
  handOver: boolean;
  /** The caller's candidate row existed before this call (false: it was created by it). */
  wasRegistered: boolean;
  /**
   * The database clock during the call, read by one of its statements (no extra round trip):
   * what the lease was judged by. Compare with the host clock around the call for the skew.
   */
  databaseNow: Date;
}

/**
 * What one `elect` decided, as a statement, a program or the locked path reports it: the
 * {@link ElectOutcome} before the service names its namespace.
 */
export type ElectDecision = Omit<ElectOutcome, 'ns'>;

/** An active candidate, as `getCandidates` reports it. */
export interface CandidateInfo {
  /** The candidate's UUID, lower-case. */
  candidateId: string;
  /** Database clock at its last register / heartbeat / elect. */
  lastHeartbeatAt: Date;
  /** It is inactive from this instant on (database clock) unless it heartbeats again. */
  expiresAt: Date;
  /** Default 0. */
  priority: number;
  /** Default true; false: it observes but never acquires the lease. */
  eligible: boolean;
  /** Null when it gave none. */
  metadata: CandidateMetadata | null;
}

/** A candidate row as the store reads it: what `getCandidates` reports. */
export type CandidateRow = CandidateInfo;
