/**
 * The reference model of the election's whole state — leader rows, candidate rows, history rows
 * and the fenced writes of the application — for the namespaces of one schedule, changed by
 * every operation through the reference decision (src/election/decision.ts) at an explicit `now`.
 * Pure: no database, no clock, no randomness. Instants are milliseconds on a virtual clock.
 */
import type { CandidateMetadata } from 'gemstone-utils';
import { decideElect, decideFence, decideVacate, isLive, type CallerStanding, type FenceVerdict, type LeaseRow } from '../../dist/src/election/decision';

export type JsonObject = CandidateMetadata;
export type EndReason = 'resigned' | 'handed-over' | 'unregistered' | 'expired' | 'operator';
export type VacateReason = Exclude<EndReason, 'expired'>;

export interface CandidateState {
  priority: number;
  eligible: boolean;
  /** JSON text as stored; null without metadata. */
  metadata: string | null;
  lastHeartbeatAt: number;
  expiresAt: number;
}

export interface LeaderState {
  leaderId: string | null;
  term: number;
  leaseExpiresAt: number | null;
}

export interface TermState {
  leaderId: string;
  acquiredAt: number;
  endedAt: number | null;
  endReason: EndReason | null;
}

export interface NsState {
  leader?: LeaderState;
  candidates: Map<string, CandidateState>;
  history: Map<number, TermState>;
}

export interface FencedWrite {
  ns: string;
  term: number;
  writer: string;
}

export interface ModelState {
  readonly expireMs: number;
  readonly ns: Map<string, NsState>;
  readonly fenced: FencedWrite[];
}

/** What a call says about its candidate; omitted: keep what is stored. */
export interface Fields {
  priority?: number;
  eligible?: boolean;
  metadata?: JsonObject;
}

export interface ElectResult {
  leaderId: string | null;
  term: number;
  isLeader: boolean;
  acquired: boolean;
  handOver: boolean;
  wasRegistered: boolean;
}

export interface GroupNsResult {
  ns: string;
  leaderId: string | null;
  term: number | null;
  isLeader: boolean;
  acquired: boolean;
  handOver: boolean;
}

export interface TickResult {
  outcomes: GroupNsResult[];
  members: string[];
  unregistered: number;
  /** Leases of `release` vacated (held by the caller, lapsed ones too), with their terms. */
  released: Array<{ ns: string; term: number }>;
  /** The namespaces of `release` whose LIVE lease was vacated. */
  releasedLive: string[];
}

export interface TickInput {
  /** Distinct, in the order the group locks them (byte order). */
  namespaces: readonly string[];
  candidateId: string;
  priority: number;
  eligible: boolean;
  metadata?: JsonObject;
  balance: boolean;
  /** Leases given up, vacated before the tick decides; not among `namespaces`. */
  release?: ReadonlyMap<string, VacateReason>;
  /**
   * Namespaces the tick found locked by another candidate's transaction and left alone this tick
   * (unknown outcome, nothing changed but the heartbeat).
   */
  skipped?: ReadonlySet<string>;
}

export function emptyModel(expireMs: number): ModelState {
  return { expireMs, ns: new Map(), fenced: [] };
}

export function cloneModel(state: ModelState): ModelState {
  return structuredClone(state);
}

function nsOf(state: ModelState, ns: string): NsState {
  let s = state.ns.get(ns);
  if (!s) state.ns.set(ns, (s = { candidates: new Map(), history: new Map() }));
  return s;
}

function leaseRow(s: NsState): LeaseRow | undefined {
  return s.leader ? { leaderId: s.leader.leaderId, term: s.leader.term, leaseExpiresAt: s.leader.leaseExpiresAt } : undefined;
}

/**
 * The caller's standing at `now`: its row, and the highest priority of the other live eligible
 * candidates — as read in `rivals` (the candidate rows a statement saw; see `CandidateView`).
 */
function standingOf(s: NsState, id: string, now: number, rivals: NsState | undefined = s): CallerStanding {
  const mine = s.candidates.get(id);
  let rival: number | null = null;
  for (const [other, c] of rivals?.candidates ?? []) {
    if (other === id || !c.eligible || !(c.expiresAt > now)) continue;
    rival = rival === null ? c.priority : Math.max(rival, c.priority);
  }
  return { registered: mine !== undefined, storedPriority: mine?.priority ?? null, storedEligible: mine?.eligible ?? null, rivalPriority: rival };
}

/** register / heartbeat: create or extend the candidate row, storing the fields given. */
export function touch(state: ModelState, ns: string, id: string, fields: Fields, now: number): void {
  const s = nsOf(state, ns);
  const old = s.candidates.get(id);
  s.candidates.set(id, {
    priority: fields.priority ?? old?.priority ?? 0,
    eligible: fields.eligible ?? old?.eligible ?? true,
    metadata: fields.metadata !== undefined ? JSON.stringify(fields.metadata) : (old?.metadata ?? null),
    lastHeartbeatAt: now,
    expiresAt: now + state.expireMs,
  });
}

function closeTerm(s: NsState, term: number, reason: EndReason, at: number): void {
  const entry = s.history.get(term);
  if (entry && entry.endedAt === null) {
    entry.endedAt = at;
    entry.endReason = reason;
  }
}

/**
 * One namespace of an elect or a tick: the reference decision on the row and standing at `now`,
 * written (row created, lapsed term closed, lease taken or renewed, term opened). `mayAcquire`
 * false: an acquisition is not made (a group over its fair share). No heartbeat here.
 */
function decideAndWrite(state: ModelState, ns: string, id: string, fields: Fields, now: number, mayAcquire: boolean, seen: CandidateView): ElectResult {
  const s = nsOf(state, ns);
  const row = leaseRow(s);
  const verdict = decideElect({ row, now, candidateId: id, standing: standingOf(s, id, now, (seen ?? state).ns.get(ns)), fields, expireMs: state.expireMs });
  const acquires = verdict.takes && !verdict.renewing;
  if (verdict.createsRow) s.leader = { leaderId: null, term: 0, leaseExpiresAt: null };
  const leader = s.leader!;
  if (acquires && !mayAcquire) {
    return { leaderId: null, term: leader.term, isLeader: false, acquired: false, handOver: false, wasRegistered: verdict.wasRegistered };
  }
  if (verdict.closes) closeTerm(s, verdict.closes.term, 'expired', verdict.closes.endedAt);
  if (verdict.takes) {
    leader.leaderId = id;
    leader.term = verdict.term;
    leader.leaseExpiresAt = verdict.leaseExpiresAt!;
  }
  if (acquires) s.history.set(verdict.term, { leaderId: id, acquiredAt: now, endedAt: null, endReason: null });
  return {
    leaderId: verdict.leaderId,
    term: verdict.term,
    isLeader: verdict.takes,
    acquired: acquires,
    handOver: verdict.handOver,
    wasRegistered: verdict.wasRegistered,
  };
}

/**
 * Where the other candidates' rows are read from: the state itself, or an earlier one. Candidate
 * rows are read without locks (the leader row is the only lock), so an operation running beside
 * another one's heartbeat may see the other's row as it was before (a consistent read of an
 * earlier snapshot): rivals, members and priorities then come from that earlier state.
 */
export type CandidateView = ModelState | undefined;

/** `elect`: decide, write, heartbeat. */
export function elect(state: ModelState, ns: string, id: string, fields: Fields, now: number, seen?: CandidateView): ElectResult {
  const result = decideAndWrite(state, ns, id, fields, now, true, seen);
  touch(state, ns, id, fields, now);
  return result;
}

/**
 * `resign` / `handOver` / `unregisterCandidate` (`deleteCandidate`: also deletes the caller's
 * candidate row): the answer of resign.
 */
export function vacate(state: ModelState, ns: string, id: string, reason: VacateReason, now: number, deleteCandidate = reason === 'unregistered'): boolean {
  const s = state.ns.get(ns);
  const verdict = decideVacate(s ? leaseRow(s) : undefined, now, id, reason);
  if (s && verdict.vacates) {
    closeTerm(s, verdict.closes!.term, verdict.closes!.reason, verdict.closes!.endedAt);
    s.leader = { leaderId: null, term: s.leader!.term, leaseExpiresAt: null };
  }
  if (deleteCandidate) s?.candidates.delete(id);
  return verdict.result;
}

/** `assertLeader` in a transaction that then makes a fenced write when it passed. */
export function fence(state: ModelState, ns: string, id: string, term: number | undefined, now: number, write: boolean): FenceVerdict {
  const s = state.ns.get(ns);
  const verdict = decideFence(s ? leaseRow(s) : undefined, now, id, term);
  if (verdict.pass && write) state.fenced.push({ ns, term: verdict.term, writer: id });
  return verdict;
}

/**
 * How many of `n` namespaces `me` should lead among `members` (sorted ids): ⌊n/k⌋, plus one
 * for the first `n mod k` members; 0 when `me` is not a member.
 */
export function fairShareOf(n: number, members: readonly string[], me: string): number {
  const rank = members.indexOf(me);
  if (rank < 0) return 0;
  const k = members.length;
  return Math.floor(n / k) + (rank < n % k ? 1 : 0);
}

/**
 * The live eligible candidates of the namespaces at the highest priority among them (a
 * candidate's priority: its highest over those namespaces); the caller counts with the priority
 * and eligibility it campaigns with. Sorted.
 */
function membersOf(state: ModelState, input: TickInput, now: number): string[] {
  const others = new Map<string, number>();
  for (const ns of input.namespaces) {
    for (const [id, c] of state.ns.get(ns)?.candidates ?? []) {
      if (id === input.candidateId || !c.eligible || !(c.expiresAt > now)) continue;
      others.set(id, Math.max(others.get(id) ?? -Infinity, c.priority));
    }
  }
  let top = input.eligible ? input.priority : -Infinity;
  for (const p of others.values()) top = Math.max(top, p);
  const members = [...others].filter(([, p]) => p === top).map(([id]) => id);
  if (input.eligible && input.priority === top) members.push(input.candidateId);
  return members.sort();
}

/** Vacates the caller's leases of `namespaces` (lapsed ones too); the namespaces whose live lease it vacated, and all with their terms. */
export function groupVacate(
  state: ModelState,
  namespaces: readonly string[],
  id: string,
  reason: VacateReason,
  unregister: boolean,
  now: number,
): { live: string[]; all: Array<{ ns: string; term: number }> } {
  const live: string[] = [];
  const all: Array<{ ns: string; term: number }> = [];
  for (const ns of namespaces) {
    const s = state.ns.get(ns);
    const term = s?.leader?.term;
    if (s?.leader?.leaderId === id) all.push({ ns, term: term! });
    if (vacate(state, ns, id, reason, now, unregister)) live.push(ns);
  }
  return { live: live.sort(), all };
}

/**
 * One `LeaderElectorGroup` tick: the leases given up are vacated; then each namespace, in lock
 * order, is decided as `elect` decides it (priority and eligibility as the group campaigns with),
 * with `balance` capping the acquisitions at the caller's fair share among the members minus
 * what it holds; every candidate row of the caller is heartbeated (priority and eligibility
 * always written, metadata when given).
 */
export function tick(state: ModelState, input: TickInput, now: number, seen?: CandidateView): TickResult {
  const me = input.candidateId;
  const released = input.release ? groupVacateByReason(state, input.release, me, now) : { live: [], all: [] };
  const fields: Fields = { priority: input.priority, eligible: input.eligible, metadata: input.metadata };
  const skipped = input.skipped ?? new Set<string>();
  const members = membersOf(seen ?? state, input, now);
  let unregistered = 0;
  let held = 0;
  for (const ns of input.namespaces) {
    const s = state.ns.get(ns);
    if (!s?.candidates.has(me)) unregistered++;
    if (!skipped.has(ns) && s?.leader?.leaderId === me && isLive(leaseRow(s), now)) held++;
  }
  let quota = input.balance ? Math.max(0, fairShareOf(input.namespaces.length, members, me) - held) : Infinity;
  const outcomes: GroupNsResult[] = [];
  for (const ns of input.namespaces) {
    if (skipped.has(ns)) {
      outcomes.push({ ns, leaderId: null, term: null, isLeader: false, acquired: false, handOver: false });
      continue;
    }
    const r = decideAndWrite(state, ns, me, fields, now, quota > 0, seen);
    if (r.acquired) quota--;
    outcomes.push({ ns, leaderId: r.leaderId, term: r.term, isLeader: r.isLeader, acquired: r.acquired, handOver: r.handOver });
  }
  for (const ns of input.namespaces) touch(state, ns, me, fields, now);
  return { outcomes, members, unregistered, released: released.all, releasedLive: released.live };
}

function groupVacateByReason(state: ModelState, release: ReadonlyMap<string, VacateReason>, me: string, now: number) {
  const live: string[] = [];
  const all: Array<{ ns: string; term: number }> = [];
  for (const [ns, reason] of release) {
    const r = groupVacate(state, [ns], me, reason, false, now);
    live.push(...r.live);
    all.push(...r.all);
  }
  return { live: live.sort(), all };
}

/** Test-owned SQL inside a holder's transaction: a live lease of `ns` is made to end at `until`. */
export function shortenLease(state: ModelState, ns: string, until: number, now: number): void {
  const leader = state.ns.get(ns)?.leader;
  if (leader && isLive(leader, now)) leader.leaseExpiresAt = until;
}

/** Reads: `isLeader`, `getLeader` (live only), `listCandidates` (live, sorted). */
export function read(state: ModelState, ns: string, id: string, now: number): { isLeader: boolean; leader: { leaderId: string; term: number } | null; candidates: string[] } {
  const s = state.ns.get(ns);
  const row = s ? leaseRow(s) : undefined;
  const live = isLive(row, now);
  const candidates = [...(s?.candidates ?? [])].filter(([, c]) => c.expiresAt > now).map(([cid]) => cid).sort();
  return {
    isLeader: live && row!.leaderId === id,
    leader: live ? { leaderId: row!.leaderId!, term: row!.term } : null,
    candidates,
  };
}
