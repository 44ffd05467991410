import type { VacateReason } from '../../observe/history';
import type { DemotionReason } from '../errors';
import type { LocalDeadline } from '../monotonic';
import type { CampaignAnswer } from './campaign';
import { Leadership } from './leadership';
import type { Leaderships } from './leaderships';

/** What {@link applyAnswer} reads and changes of the engine. */
export interface AnswerTarget {
  /** This candidate. */
  readonly me: string;
  readonly leaderships: Leaderships;
  /** The namespaces campaigned for now. */
  readonly namespaces: ReadonlySet<string>;
  /** Leases being given up, with the reason their term ends with. */
  readonly giving: Map<string, VacateReason>;
  /** Whether a vacate of given-up leases is in flight. */
  readonly vacating: boolean;
  /** Starts a grant unless something made it moot meanwhile; whether it started. */
  begin(granted: Leadership): boolean;
  observe(ns: string, leaderId: string | null, term: number): void;
  /** An answer that this candidate leads `ns` under a term no grant hands out (see {@link isGrantedTerm}). */
  refused(ns: string, term: number): void;
  /** The campaign's leases to hand over beyond its share, `held` being led now. */
  surplus(held: readonly string[]): readonly string[];
}

/**
 * Whether `term` can be a granted lease's: a leader row starts vacant at term 0 and every grant
 * adds 1, so a lease is never held under a term below 1 (nor under a fraction, NaN or a number
 * past exact integers, which only a misread answer could carry).
 */
export function isGrantedTerm(term: number): boolean {
  return Number.isSafeInteger(term) && term >= 1;
}

/**
 * Applies one tick's answer, the same for every campaign: leaderships granted, renewed, lost and
 * given up, and the observed leaders. Returns how many leaderships began and ended.
 */
export function applyAnswer(s: AnswerTarget, answer: CampaignAnswer, deadline: LocalDeadline): { acquired: number; lost: number } {
  const counts = { acquired: 0, lost: 0 };
  const demote = (ns: string, reason: DemotionReason) => {
    s.leaderships.demote(ns, reason);
    counts.lost++;
  };
  // First, before any user code runs (a namespace's callbacks must not eat into another's
  // lease, nor an old term's into its successor's): this tick's renewals and grants arm their
  // deadlines. A renewal keeps the lease. An acquisition that hands out the term we believe we
  // hold is another grant of that number (ours was lost, e.g. with an unreplicated commit): a
  // new leadership, so that work fenced by the old lease stops. An answer that arrived after
  // its own deadline grants nothing: the next tick renews.
  const granted = new Map<string, Leadership>();
  if (!deadline.passed) {
    for (const { ns, isLeader, term, acquired, handOver } of answer.outcomes) {
      if (!isLeader || term === null || !isGrantedTerm(term) || handOver || !s.namespaces.has(ns) || s.giving.has(ns)) continue;
      const held = s.leaderships.get(ns);
      if (held && held.lease.term === term && !acquired && !held.passed) held.renew(deadline);
      else granted.set(ns, new Leadership(s.leaderships.hooks, ns, s.me, term, deadline));
    }
  }
  for (const outcome of answer.outcomes) {
    const { ns } = outcome;
    const current = s.leaderships.current(ns);
    if (!s.namespaces.has(ns)) {
      // Removed while the tick was in flight: a lease it took or renewed is given up.
      if (outcome.isLeader && !s.giving.has(ns)) s.giving.set(ns, 'resigned');
      continue;
    }
    if (outcome.term === null) {
      // Unknown this tick (its row was locked by another transaction and skipped, it changed
      // hands after the statement began, or a racing first insert won): not renewed, so a
      // leadership held here keeps its local deadline unextended and ends by it unless a later
      // tick renews it. Safe as for a failed tick: nobody can take the lease before its end by
      // the database clock, which is no earlier than the local deadline. Ending it at once
      // would make a lock held for a moment by a rival's tick demote and re-elect the same term.
      continue;
    }
    if (outcome.isLeader && !isGrantedTerm(outcome.term)) {
      // Leading under a term no grant hands out: not a lease this candidate was granted, so
      // nothing starts. A leadership held here ends (which term the database holds for it is
      // unknown), the answer is reported, and the lease is given up, so that the next grant is a
      // real one.
      if (current) demote(ns, 'lost');
      if (!s.giving.has(ns)) s.giving.set(ns, 'resigned');
      s.refused(ns, outcome.term);
      continue;
    }
    if (outcome.isLeader && (outcome.handOver || s.giving.has(ns))) {
      // Held in the database, but to be given up: no (new) local leadership.
      if (current) demote(ns, 'handed-over');
      if (!s.giving.has(ns)) s.giving.set(ns, 'handed-over');
      s.observe(ns, outcome.leaderId, outcome.term);
      continue;
    }
    if (!outcome.isLeader && s.giving.has(ns) && !s.vacating) s.giving.delete(ns);
    const grant = granted.get(ns);
    if (grant) {
      granted.delete(ns);
      if (current) demote(ns, 'lost');
      if (s.begin(grant)) counts.acquired++;
    } else if (current && !(outcome.isLeader && outcome.term === current.lease.term)) {
      demote(ns, 'lost');
    }
    s.observe(ns, outcome.leaderId, outcome.term);
  }
  // Grants a callback made moot (a namespace removed or handed over meanwhile): never started.
  for (const unused of granted.values()) void unused.end('stopped');
  for (const ns of s.surplus(s.leaderships.names())) {
    demote(ns, 'handed-over');
    s.giving.set(ns, 'handed-over');
  }
  return counts;
}
