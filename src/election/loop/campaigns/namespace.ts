import type { DataSource } from 'typeorm';
import { EntitiesNotRegisteredError } from '../../../errors';
import { assertEntitiesRegistered } from '../../entities-check';
import { ElectionService } from '../../service';
import type { CheckedElectorOptions } from '../elector-options';
import type { Campaign, CampaignAnswer, CampaignRequest, CampaignWords } from '../engine/campaign';

const WORDS: CampaignWords = Object.freeze({
  owner: 'elector',
  tick: 'elect',
  tickInFlight: 'the elect in flight answering',
  startInFlight: 'start() (its LISTEN connection or first elect has not answered)',
  callbacksInFlight: 'onStoppedLeading settling and the scheduled jobs returning (the lease is left to run out, not vacated)',
  unregistering: 'unregistering (vacating the lease)',
  unregisterFailed: 'unregistering failed; the lease and candidate row will expire by themselves',
  vacateFailed: () => 'vacating the lease for a preferred candidate failed (retried on the next tick)',
});

/**
 * One namespace, one `elect` per tick (which is also the heartbeat): `LeaderElector`'s campaign. A
 * lease given up for a preferred candidate is vacated by `handOver` (resign, staying a
 * candidate); the stop unregisters.
 */
export class NamespaceCampaign implements Campaign {
  readonly words = WORDS;
  readonly foldsVacates = false;
  readonly #o: CheckedElectorOptions;
  #service: ElectionService | undefined;
  #dataSource: DataSource | undefined;

  constructor(options: CheckedElectorOptions) {
    this.#o = options;
  }

  get opened(): boolean {
    return this.#service !== undefined;
  }

  open(dataSource: DataSource): void {
    this.#service = new ElectionService(dataSource, { expireSeconds: this.#o.expireSeconds });
    this.#dataSource = dataSource;
  }

  close(): void {
    this.#service = undefined;
  }

  async elect(request: CampaignRequest): Promise<CampaignAnswer> {
    const { ns, candidateId, priority, eligible } = this.#o;
    // Priority and eligibility go with every elect: the statement decides by them, and a row
    // recreated without them (unregistered behind this elector's back) must not make an
    // ineligible elector a leader. Metadata (up to 4 KiB) goes only when registering, and again
    // after an elect found the row missing: a renewal writes no more than a heartbeat does.
    const outcome = await this.#opened().electOutcome(candidateId, {
      ns,
      priority,
      eligible,
      ...(request.sendMetadata ? { metadata: this.#o.metadata } : {}),
    });
    return {
      outcomes: [outcome],
      databaseNow: outcome.databaseNow,
      candidateMissing: !outcome.wasRegistered,
      members: [],
      released: [],
      releaseSkipped: [],
    };
  }

  /**
   * A tick in flight while its DataSource was initialized again without the election entities
   * fails inside TypeORM with an error that says nothing useful (e.g. "Class constructor
   * ElectionLeader cannot be invoked without 'new'"): name the real cause, as the next tick would.
   */
  explain(error: unknown): unknown {
    if (error instanceof EntitiesNotRegisteredError || !this.#dataSource) return error;
    try {
      assertEntitiesRegistered(this.#dataSource);
    } catch (missing) {
      return missing;
    }
    return error;
  }

  surplus(): readonly string[] {
    return [];
  }

  async vacate(): Promise<void> {
    await this.#opened().handOver(this.#o.candidateId, { ns: this.#o.ns });
  }

  unregister(): Promise<void> {
    return this.#opened().unregisterCandidate(this.#o.candidateId, { ns: this.#o.ns });
  }

  #opened(): ElectionService {
    if (!this.#service) throw new Error('gemstone-utils: the campaign was not opened (start() first)');
    return this.#service;
  }
}
