import type { DataSource } from 'typeorm';
import { explainDatabaseError } from '../../../db/explain-error';
import { compareNs, fairShare, groupStoreOf, GroupStore } from '../../group-store';
import type { VacateReason } from '../../observe/history';
import { TICK_JITTER } from '../elector-options';
import type { CheckedGroupOptions } from '../group-options';
import type { Campaign, CampaignAnswer, CampaignRequest, CampaignWords } from '../engine/campaign';

const WORDS: CampaignWords = Object.freeze({
  owner: 'group',
  tick: "the group's tick",
  tickInFlight: 'the tick in flight answering',
  startInFlight: 'start() (its LISTEN connection or first tick has not answered)',
  callbacksInFlight: 'onStoppedLeading settling and the scheduled jobs returning (the leases are left to run out, not vacated)',
  unregistering: 'vacating the leases',
  unregisterFailed: 'vacating the leases failed; they and the candidate rows will expire by themselves',
  vacateFailed: (count: number) => `vacating ${count} lease(s) failed (retried after the next tick)`,
});

/**
 * Many namespaces, one batched tick for all of them (PostgreSQL: one statement once their rows
 * exist): `LeaderElectorGroup`'s campaign. With `balance` it gives back leases beyond its fair
 * share, as far as the others lack theirs.
 */
export class GroupCampaign implements Campaign {
  readonly words = WORDS;
  readonly #o: CheckedGroupOptions;
  #store: GroupStore | undefined;
  #dataSource: DataSource | undefined;
  /** MySQL: namespaces whose leader row is known to exist (the tick skips creating them). */
  readonly #known = new Set<string>();

  constructor(options: CheckedGroupOptions) {
    this.#o = options;
  }

  get opened(): boolean {
    return this.#store !== undefined;
  }

  get foldsVacates(): boolean {
    return this.#store?.foldsVacates ?? false;
  }

  open(dataSource: DataSource): void {
    this.#dataSource = dataSource;
    this.#store = groupStoreOf(dataSource);
  }

  close(): void {
    this.#store = undefined;
  }

  async elect(request: CampaignRequest): Promise<CampaignAnswer> {
    const o = this.#o;
    const result = await this.#opened().elect(
      {
        namespaces: [...request.namespaces].sort(compareNs),
        candidateId: o.candidateId,
        expireSeconds: o.expireSeconds,
        priority: o.priority,
        eligible: o.eligible,
        metadataJson: request.sendMetadata ? o.metadataJson : undefined,
        balance: o.balance,
        release: request.release,
        lockWaitMs: this.#lockWaitMs(),
      },
      { known: this.#known, beforeAttempt: request.beforeAttempt },
    );
    return {
      outcomes: result.outcomes,
      databaseNow: result.databaseNow,
      candidateMissing: result.unregistered > 0,
      members: result.members,
      released: result.released ?? [],
      releaseSkipped: result.releaseSkipped ?? [],
    };
  }

  explain(error: unknown): unknown {
    return this.#dataSource ? explainDatabaseError(this.#dataSource, error) : error;
  }

  /** With `balance`: surplus over the fair share goes back, as far as the others lack theirs. */
  surplus(answer: CampaignAnswer, namespaces: ReadonlySet<string>, held: readonly string[]): readonly string[] {
    if (!this.#o.balance) return [];
    const me = this.#o.candidateId;
    const n = namespaces.size;
    const { members } = answer;
    const target = fairShare(n, members, me);
    const heldBy = new Map<string, number>();
    let vacant = 0;
    for (const outcome of answer.outcomes) {
      if (!namespaces.has(outcome.ns)) continue;
      if (outcome.leaderId === null) vacant++;
      else heldBy.set(outcome.leaderId, (heldBy.get(outcome.leaderId) ?? 0) + 1);
    }
    let deficit = 0;
    for (const member of members) if (member !== me) deficit += Math.max(0, fairShare(n, members, member) - (heldBy.get(member) ?? 0));
    const mine = [...held].sort(compareNs).reverse();
    const give = Math.max(0, Math.min(mine.length - target, deficit - vacant));
    return mine.slice(0, give);
  }

  async vacate(names: readonly string[], reason: VacateReason): Promise<void> {
    await this.#opened().vacate(names, this.#o.candidateId, reason, false);
  }

  async unregister(names: readonly string[]): Promise<void> {
    await this.#opened().vacate(names, this.#o.candidateId, 'unregistered', true);
  }

  /**
   * How long a tick waits for a lock on the leader row of a lease this group holds (its own
   * fenced transactions take it for a moment): half a tick interval, and at most half of what
   * is left of a lease the previous tick renewed (the lease minus the longest interval), so that
   * a transaction holding such a row for longer (a rival's) delays the renewal of the other
   * leases by a fraction of their remaining time. From the options alone: a lease that could not
   * be renewed for a while must not shorten the wait for the others.
   */
  #lockWaitMs(): number {
    const left = this.#o.expireSeconds * 1000 - this.#o.intervalMs * (1 + TICK_JITTER);
    return Math.max(1, Math.floor(Math.min(this.#o.intervalMs, left) / 2));
  }

  #opened(): GroupStore {
    if (!this.#store) throw new Error('gemstone-utils: the campaign was not opened (start() first)');
    return this.#store;
  }
}
