import type { DataSource } from 'typeorm';
import type { GroupNsOutcome } from '../../group-tick';
import type { VacateReason } from '../../observe/history';

/**
 * What the engine asks of the store, client-go's `resourcelock.Interface` in this loop: what one
 * tick sends and what it found per namespace, how leases given up are vacated, and the stop's last
 * statement. Everything else — deadlines, callbacks, events, hand-over order, LISTEN, pruning,
 * the bounded stop — is the engine's (`engine.ts`). Two implementations: one namespace, one
 * `elect` per tick (`campaigns/namespace.ts`), and a group, one batched tick for many
 * (`campaigns/group.ts`).
 */
export interface Campaign {
  /** Messages that name what this campaign sends (one lease or many). */
  readonly words: CampaignWords;
  /**
   * Whether {@link elect} vacates {@link CampaignRequest.release} in the tick's own transaction;
   * where not, the engine vacates given-up leases by {@link vacate}. Read after {@link open}.
   */
  readonly foldsVacates: boolean;
  /** `start()` found `dataSource` usable: prepare the statements. */
  open(dataSource: DataSource): void;
  /** `start()` failed before anything was written: the stop that undoes it sends nothing. */
  close(): void;
  /** Whether {@link open} was called and not {@link close}d since. */
  readonly opened: boolean;
  /** One tick: at most one transaction (a rerun after a lock wait ran out aside, see `beforeAttempt`). */
  elect(request: CampaignRequest): Promise<CampaignAnswer>;
  /** What a failed {@link elect}'s error means, in the words of the library's errors. */
  explain(error: unknown): unknown;
  /**
   * Leases held beyond this candidate's share, to hand over (a group with `balance`); `held` are
   * the namespaces led after the answer was applied. None for a single namespace.
   */
  surplus(answer: CampaignAnswer, namespaces: ReadonlySet<string>, held: readonly string[]): readonly string[];
  /** Vacates leases given up (their leadership has ended and its `onStoppedLeading` settled); stays a candidate. */
  vacate(names: readonly string[], reason: VacateReason): Promise<void>;
  /** The stop's statement: vacates every lease of `names` this candidate holds and deletes its candidate rows. */
  unregister(names: readonly string[]): Promise<void>;
}

export interface CampaignRequest {
  /** The namespaces to campaign for, in the order given and added (those in `release` left out). */
  readonly namespaces: readonly string[];
  /** Given-up leases whose `onStoppedLeading` settled: vacated by this tick (only where `foldsVacates`). */
  readonly release: ReadonlyMap<string, VacateReason>;
  /** Send the candidate's metadata (registering, or its row went missing). */
  readonly sendMetadata: boolean;
  /** Call before a further transaction of the same tick begins: the local deadline restarts there. */
  readonly beforeAttempt: () => void;
}

export interface CampaignAnswer {
  /**
   * What the tick found per namespace, in the store's own outcome type (a single elect's
   * `ElectOutcome` is one of them): no vocabulary of the loop's own.
   */
  readonly outcomes: readonly GroupNsOutcome[];
  /** The database clock during the tick. */
  readonly databaseNow: Date;
  /** A candidate row of the caller was missing before the tick: metadata goes with the next one. */
  readonly candidateMissing: boolean;
  /** The live eligible candidates the namespaces are balanced between (empty for one namespace). */
  readonly members: readonly string[];
  /** The leases of `release` vacated, with their terms. */
  readonly released: ReadonlyArray<{ readonly ns: string; readonly term: number }>;
  /** The leases of `release` locked by another transaction: not vacated, retried. */
  readonly releaseSkipped: readonly string[];
}

/** The words of the engine's messages that depend on the campaign. */
export interface CampaignWords {
  /** What `start()` is called on in the not-initialized message: `elector` or `group`. */
  readonly owner: string;
  /** The tick's statement: `elect`, or `the group's tick`. */
  readonly tick: string;
  /** A stop's pending steps. */
  readonly tickInFlight: string;
  readonly startInFlight: string;
  readonly callbacksInFlight: string;
  readonly unregistering: string;
  readonly unregisterFailed: string;
  vacateFailed(count: number): string;
}
