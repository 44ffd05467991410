import type { LeaderChange, LeaderWatch } from 'gemstone-utils';
import { waitFor } from '../elector/helpers';

/** A watch consumed in the background: every change it yields, in order, and how it ended. */
export interface Collected {
  readonly changes: LeaderChange[];
  /** Settles when the `for await` loop has exited: `error` is what it threw, if anything. */
  readonly ended: Promise<{ error?: unknown }>;
  /** The (leaderId, term) pairs seen so far. */
  states(): Array<[string | null, number | null]>;
  /** Waits until a change matching `leaderId` and `term` has been yielded. */
  waitForState(leaderId: string | null, term: number | null, timeoutMs?: number): Promise<void>;
}

export function collect(watch: LeaderWatch | AsyncIterable<LeaderChange>): Collected {
  const changes: LeaderChange[] = [];
  const ended = (async () => {
    try {
      for await (const change of watch) changes.push(change);
      return {};
    } catch (error) {
      return { error };
    }
  })();
  const states = () => changes.map((c): [string | null, number | null] => [c.leaderId, c.term]);
  return {
    changes,
    ended,
    states,
    waitForState: (leaderId, term, timeoutMs = 15_000) =>
      waitFor(
        `the watch to yield (${leaderId}, ${term}); it yielded ${JSON.stringify(states())}`,
        () => changes.some((c) => c.leaderId === leaderId && c.term === term),
        timeoutMs,
      ).then(() => undefined),
  };
}

/**
 * Checks the rules of a watch's output: states strictly ordered (term k's leader, then the
 * vacancy after it, then term k + 1), none twice; another leader under the same term (a term
 * granted twice) follows the one before it.
 */
export function expectWellOrdered(changes: readonly LeaderChange[]): void {
  const rank = (c: LeaderChange) => (c.term === null ? 0 : c.term * 2 + (c.leaderId === null ? 1 : 0));
  const after = (c: LeaderChange, before: LeaderChange) =>
    rank(c) > rank(before) || (rank(c) === rank(before) && c.leaderId !== null && c.leaderId !== before.leaderId);
  for (let i = 1; i < changes.length; i++) {
    if (!after(changes[i]!, changes[i - 1]!)) {
      throw new Error(`change ${i} is not after change ${i - 1}: ${JSON.stringify(changes.map((c) => [c.leaderId, c.term]))}`);
    }
  }
}
