import type { ElectOutcome } from './rows';

/** What an `elect` outcome tells about its namespace's lease (the fields of `ElectOutcome` read here). */
export type SeenOutcome = Readonly<Pick<ElectOutcome, 'ns' | 'leaderId' | 'term' | 'isLeader'>>;

/** What this process last saw of one namespace's lease: who led it, under which term, and when. */
interface Seen {
  readonly leaderId: string;
  readonly term: number;
  /** `performance.now()` when the call that saw it began (the lease was written after that). */
  readonly at: number;
}

/**
 * The term each namespace was last led under, as this process saw it (one per DataSource): what
 * a one-statement renewal needs, and whether trying it is worth a round trip.
 *
 * Only the path is chosen here, never the outcome: the statement itself checks the term, the
 * lease and the rivals at the database's clock, and whatever it does not renew goes the locked
 * path. What this saves is a statement that could only fail (a round trip, and a MariaDB
 * takeover counted as two transactions): a caller that did not lead at the last outcome seen for
 * its namespace, or whose lease, by this host's monotonic clock, has less than the statement's
 * margin (half a lease) left.
 */
export class LeadingTerms {
  readonly #seen = new Map<string, Seen>();

  /** The term to renew under in one statement, or undefined when that statement could not renew. */
  renewable(ns: string, id: string, expireSeconds: number, now = performance.now()): number | undefined {
    const seen = this.#seen.get(ns);
    if (seen?.leaderId !== id) return undefined;
    return now - seen.at < (expireSeconds * 1000) / 2 ? seen.term : undefined;
  }

  /**
   * Records an `elect` outcome of `ns`, `at` taken when that call began. A follower's outcome
   * that names the leader and term already seen keeps them (another candidate of this process
   * still leads); any other forgets them.
   */
  observe(outcome: SeenOutcome, at: number): void {
    const { ns, leaderId, term } = outcome;
    if (outcome.isLeader && leaderId !== null) {
      this.#seen.set(ns, { leaderId, term, at });
      return;
    }
    const seen = this.#seen.get(ns);
    if (seen && (seen.leaderId !== leaderId || seen.term !== term)) this.#seen.delete(ns);
  }

  /** The caller stepped down (or tried to): its next `elect` decides under the lock. */
  forget(ns: string): void {
    this.#seen.delete(ns);
  }
}
