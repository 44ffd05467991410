import type { DemotionReason, LeaderElector } from '../election/loop/elector';
import type { ClockSkew, ElectorTick, TickOutcome } from '../election/loop/tick';
import type { Lease } from '../election/loop/elector-options';
import { ValidationError } from '../errors';
import type { ScheduleRunEnded } from '../schedules/run-ended';
import type { TransitionReason } from './names';
import { hasMethods } from '../db/shape';
import type { ElectorMetrics } from './elector-metrics';

/** Where the events of attached electors go: one implementation per metrics library. */
export interface MetricsSink {
  /** A namespace got its first attached elector: create its counters at 0. */
  initialize(ns: string): void;
  transition(ns: string, reason: TransitionReason): void;
  tick(ns: string, outcome: TickOutcome, durationSeconds: number): void;
  electError(ns: string): void;
  /** A schedule (`ns`, `schedule`) got its first recorded slot: create its counters at 0. */
  initializeSchedule(ns: string, schedule: string): void;
  /** A slot's final state was recorded (the elector's `'scheduleRun'` event). */
  scheduleRun(run: ScheduleRunEnded): void;
}

/**
 * The last success of one schedule, kept while an elector of its namespace is attached: the last
 * elector's detach drops it, as it drops the namespace's gauges (one entry per schedule name would
 * otherwise be kept, and reported, for the life of the process).
 */
export interface ScheduleState {
  readonly ns: string;
  readonly schedule: string;
  /** Unix seconds by the database's clock; undefined before a slot was done. */
  readonly lastSuccess: number | undefined;
}

/** The gauges of one namespace at collection time, summed over this process's electors. */
export interface NamespaceState {
  readonly ns: string;
  /** How many of the attached electors lead it right now (0 or 1 unless something is badly wrong). */
  readonly isLeader: number;
  /** The highest term seen; undefined before any tick or notification told one. */
  readonly term: number | undefined;
  /** The latest measurement; undefined before a tick succeeded. */
  readonly clockSkew: ClockSkew | undefined;
}

interface Attachment {
  readonly elector: LeaderElector;
  readonly detach: () => void;
  term: number | undefined;
  clockSkew: ClockSkew | undefined;
}

function isElector(value: unknown): value is LeaderElector {
  return hasMethods(value, ['on', 'off', 'health']) && typeof (value as LeaderElector).ns === 'string';
}

/**
 * The electors a metrics object observes, through their public events only (`'elected'`,
 * `'demoted'`, `'leader'`, `'tick'`, `'scheduleRun'`) and their synchronous `isLeader`/`term` at collection.
 */
export class ElectorObserver {
  readonly #sink: MetricsSink;
  readonly #attached = new Map<LeaderElector, Attachment>();
  readonly #initialized = new Set<string>();
  /** Per namespace with an attached elector (the electors' `ns`), per schedule name: its last success. */
  readonly #schedules = new Map<string, Map<string, ScheduleState>>();
  #closed = false;

  constructor(sink: MetricsSink) {
    this.#sink = sink;
  }

  get electors(): readonly LeaderElector[] {
    return [...this.#attached.keys()];
  }

  attach(elector: LeaderElector): () => void {
    if (this.#closed) throw new ValidationError('this', 'is closed: create a new metrics object to attach electors');
    if (!isElector(elector)) throw new ValidationError('elector', 'must be a LeaderElector');
    const existing = this.#attached.get(elector);
    if (existing) return existing.detach;
    const { ns } = elector;
    if (!this.#initialized.has(ns)) {
      this.#initialized.add(ns);
      this.#sink.initialize(ns);
    }
    const onElected = () => this.#sink.transition(ns, 'elected');
    const onDemoted = (_lease: Lease, reason: DemotionReason) => this.#sink.transition(ns, reason);
    const onLeader = (_leaderId: string | null, term: number | null) => {
      if (term !== null) raise(attachment, term);
    };
    const onTick = (tick: ElectorTick) => {
      this.#sink.tick(ns, tick.outcome, tick.durationSeconds);
      if (tick.outcome === 'error') this.#sink.electError(ns);
      if (tick.term !== null) raise(attachment, tick.term);
      if (tick.clockSkew) attachment.clockSkew = tick.clockSkew;
    };
    const onScheduleRun = (run: ScheduleRunEnded) => this.#scheduleRun(ns, run);
    const detach = () => {
      if (this.#attached.get(elector) !== attachment) return;
      this.#attached.delete(elector);
      elector.off('elected', onElected);
      elector.off('demoted', onDemoted);
      elector.off('leader', onLeader);
      elector.off('tick', onTick);
      elector.off('scheduleRun', onScheduleRun);
      // The namespace's gauges are computed from the attached electors; its schedules go with them.
      if (!this.#isAttached(ns)) this.#schedules.delete(ns);
    };
    const attachment: Attachment = { elector, detach, term: elector.term ?? undefined, clockSkew: undefined };
    this.#attached.set(elector, attachment);
    elector.on('elected', onElected);
    elector.on('demoted', onDemoted);
    elector.on('leader', onLeader);
    elector.on('tick', onTick);
    elector.on('scheduleRun', onScheduleRun);
    return detach;
  }

  detach(elector: LeaderElector): void {
    this.#attached.get(elector)?.detach();
  }

  /** Detaches every elector; later `attach` calls throw. */
  close(): void {
    this.#closed = true;
    for (const attachment of [...this.#attached.values()]) attachment.detach();
  }

  /** The schedules seen in the namespaces that have an attached elector, with their last success. */
  collectSchedules(): ScheduleState[] {
    return [...this.#schedules.values()].flatMap((byName) => [...byName.values()]);
  }

  #isAttached(ns: string): boolean {
    for (const elector of this.#attached.keys()) if (elector.ns === ns) return true;
    return false;
  }

  /** Records `run`, reported by an elector of `ns` (the entry goes when `ns` has no elector left). */
  #scheduleRun(ns: string, run: ScheduleRunEnded): void {
    let byName = this.#schedules.get(ns);
    if (!byName) this.#schedules.set(ns, (byName = new Map()));
    let state = byName.get(run.name);
    if (!state) {
      state = { ns: run.ns, schedule: run.name, lastSuccess: undefined };
      byName.set(run.name, state);
      // Adding 0 to a series that exists (the namespace was detached and attached again) keeps its total.
      this.#sink.initializeSchedule(run.ns, run.name);
    }
    if (run.state === 'done') {
      const at = run.endedAt.getTime() / 1000;
      if (state.lastSuccess === undefined || at > state.lastSuccess) byName.set(run.name, { ...state, lastSuccess: at });
    }
    this.#sink.scheduleRun(run);
  }

  /** The gauges per namespace of the attached electors, read now. */
  collect(): NamespaceState[] {
    const byNs = new Map<string, { isLeader: number; term: number | undefined; clockSkew: ClockSkew | undefined }>();
    for (const attachment of this.#attached.values()) {
      const { elector } = attachment;
      // Reading isLeader ends an overdue leadership on the spot: the gauge never reports one.
      const leading = elector.isLeader;
      if (leading && elector.term !== null) raise(attachment, elector.term);
      const state = byNs.get(elector.ns) ?? { isLeader: 0, term: undefined, clockSkew: undefined };
      state.isLeader += leading ? 1 : 0;
      if (attachment.term !== undefined) state.term = Math.max(state.term ?? attachment.term, attachment.term);
      const skew = attachment.clockSkew;
      if (skew && (!state.clockSkew || skew.databaseNow.getTime() > state.clockSkew.databaseNow.getTime())) state.clockSkew = skew;
      byNs.set(elector.ns, state);
    }
    return [...byNs].map(([ns, state]) => ({ ns, ...state }));
  }
}

function raise(attachment: Attachment, term: number): void {
  if (attachment.term === undefined || term > attachment.term) attachment.term = term;
}

/**
 * The {@link ElectorMetrics} of a backend fed by `observer`: attaching, detaching and the list of
 * electors are the observer's; `close` closes the observer, then `release`s what the backend holds.
 */
export function observedMetrics(observer: ElectorObserver, release: () => void): ElectorMetrics {
  return {
    attach: (elector) => observer.attach(elector),
    detach: (elector) => observer.detach(elector),
    get electors() {
      return observer.electors;
    },
    close() {
      observer.close();
      release();
    },
  };
}
