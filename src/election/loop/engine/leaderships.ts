import type { DemotionReason } from '../errors';
import { Leadership, LeadershipHooks, StoppedCallbacks } from './leadership';

/**
 * The leaderships of a loop, one at most per namespace, and the `onStoppedLeading` callbacks in
 * flight. Ending one is always the same three steps: out of the map (so `isLeader` is false at
 * once), then `Leadership.end` (signal, `onStoppedLeading`, `'demoted'`), then tracked until its
 * callback settles (what hand-overs and stops wait for).
 */
export class Leaderships {
  readonly #held = new Map<string, Leadership>();
  readonly stoppedCallbacks = new StoppedCallbacks();
  readonly hooks: LeadershipHooks;

  constructor(hooks: Omit<LeadershipHooks, 'expired'>) {
    this.hooks = {
      ...hooks,
      expired: (leadership) => {
        if (this.#held.get(leadership.lease.ns) === leadership) this.demote(leadership.lease.ns, 'lease-expired-locally');
      },
    };
  }

  get size(): number {
    return this.#held.size;
  }

  /** The namespaces led (deadlines not checked), in the order their leaderships began. */
  names(): string[] {
    return [...this.#held.keys()];
  }

  /** The leadership of `ns` as recorded, its deadline not checked. */
  get(ns: string): Leadership | undefined {
    return this.#held.get(ns);
  }

  /** The leadership of `ns` if its local deadline has not passed; ends it on the spot if it has. */
  current(ns: string): Leadership | undefined {
    const leadership = this.#held.get(ns);
    if (leadership && leadership.passed) {
      this.demote(ns, 'lease-expired-locally');
      return undefined;
    }
    return leadership;
  }

  /** Records `granted` as the leadership of its namespace and starts it (`onStartedLeading`, `'elected'`). */
  begin(granted: Leadership): void {
    this.#held.set(granted.lease.ns, granted);
    granted.start();
  }

  /** Ends the leadership of `ns`: isLeader false, then (see `leadership.ts`) signal aborted, onStoppedLeading, 'demoted'. */
  demote(ns: string, reason: DemotionReason): void {
    const leadership = this.#held.get(ns);
    if (!leadership) return;
    this.#held.delete(ns);
    void leadership.end(reason);
    this.stoppedCallbacks.track(leadership);
  }
}

/** What a loop last observed of a namespace's leader. */
export interface Observed {
  readonly leaderId: string | null;
  readonly term: number | null;
}

/**
 * The observed leader per namespace, from ticks and notifications. Stale news (an older term, or
 * the grant of a term already seen vacated) is ignored. Another holder at the same rank is news: a
 * term granted twice (a failover that lost an acknowledged grant) names a new leader under the
 * number already seen, and the database's answer wins.
 */
export class ObservedLeaders {
  /** rank orders observations: term * 2, + 1 once that term's lease is known vacated. */
  readonly #byNs = new Map<string, Observed & { readonly rank: number }>();

  of(ns: string): Observed | undefined {
    return this.#byNs.get(ns);
  }

  /** Records an observation; what is now observed when that changed, else undefined. */
  observe(ns: string, leaderId: string | null, term: number): Observed | undefined {
    const rank = term * 2 + (leaderId === null ? 1 : 0);
    const previous = this.#byNs.get(ns) ?? { leaderId: null, term: null, rank: -1 };
    if (rank < previous.rank || (rank === previous.rank && leaderId === previous.leaderId)) return undefined;
    const observed = { leaderId, term: leaderId === null ? null : term };
    this.#byNs.set(ns, { ...observed, rank });
    if (previous.leaderId === observed.leaderId && previous.term === observed.term) return undefined;
    return observed;
  }
}
