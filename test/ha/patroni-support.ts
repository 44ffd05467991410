/**
 * Shared by the Patroni tests: typed access to tools/patroni.js, and the accounting of what the
 * elector worker processes were told (their JSON lines) against the history that survived
 * (`ha_ledger`, see ledger.ts). Every worker runs on this machine, as does the database, so the
 * workers' `Date.now()` and the database's `clock_timestamp()` are the same clock: a commit the
 * database acknowledged is found in the history by its writer, term and moment.
 */
import * as path from 'path';
import type { WorkerLine } from '../elector/worker-process';
import { LedgerRow } from './ledger';

const ROOT = path.join(__dirname, '..', '..');

export interface DcsState {
  leader: string | undefined;
  members: Record<string, { role: string; state: string; timeline?: number }>;
  syncStandby: string | undefined;
}

export interface PatroniCluster {
  root: string;
  synchronous: boolean;
  strict: boolean;
  timing: { ttl: number; loopWait: number; retryTimeout: number };
  check: { interMs: number; fall: number; rise: number; timeoutMs: number };
  url: string;
  haproxyPort: number;
  members: Array<{ name: string; pgPort: number; restPort: number; dataDir: string; log: string }>;
  dcs(): Promise<DcsState>;
  query(member: string, text: string, params?: unknown[], database?: string): Promise<Array<Record<string, unknown>>>;
  routed(): Promise<{ port: number; name: string | undefined } | undefined>;
  waitHealthy(options?: { timeoutMs?: number }): Promise<DcsState>;
  assertRunning(): void;
  switchover(leader: string, candidate: string | undefined): Promise<string>;
  killPostmaster(member: string): number;
  pausePatroni(member: string): void;
  resumePatroni(member: string): void;
  cutFromEtcd(member: string): void;
  healEtcd(member: string): void;
  tails(): string;
  stop(): void;
}

// eslint-disable-next-line @typescript-eslint/no-var-requires
export const patroni = require(path.join(ROOT, 'tools', 'patroni.js')) as {
  startPatroni(options?: { synchronous?: boolean; strict?: boolean }): Promise<PatroniCluster>;
};

/** What one worker process said, with its candidate id. */
export interface WorkerLog {
  candidateId: string;
  lines: WorkerLine[];
}

/** A lease commit the database acknowledged to a worker: a grant ('acquired') or a renewal. */
export interface AckedLease {
  candidateId: string;
  outcome: 'acquired' | 'renewed';
  term: number;
  sentAt: number;
  ackedAt: number;
  /** The database's clock read by the commit's own statement (the tick's `clockSkew.databaseNow`); null if not reported. */
  databaseNow: number | null;
}

/** A fenced commit the database acknowledged to a worker. */
export interface AckedWrite {
  candidateId: string;
  term: number;
  seq: number;
  at: number;
}

export function ackedLeases(workers: WorkerLog[]): AckedLease[] {
  return workers.flatMap((w) =>
    w.lines
      .filter((l) => l.event === 'tick')
      .map((l) => ({
        candidateId: w.candidateId,
        outcome: l.outcome as AckedLease['outcome'],
        term: Number(l.term),
        sentAt: l.t - Number(l.durationMs),
        ackedAt: l.t,
        databaseNow: typeof l.databaseNow === 'number' ? l.databaseNow : null,
      })),
  );
}

/** Leader work acknowledged, and the deliberate write under a term that had just ended when it committed. */
export function ackedWrites(workers: WorkerLog[]): AckedWrite[] {
  return workers.flatMap((w) =>
    w.lines
      .filter((l) => l.event === 'work-done' || (l.event === 'stale-write' && l.outcome === 'committed'))
      .map((l) => ({ candidateId: w.candidateId, term: Number(l.term), seq: Number(l.seq), at: l.t })),
  );
}

/** How far a history row's time may lie outside its commit's send/acknowledge window (clock reads, rounding). */
const SLACK_MS = 20;

/**
 * Whether `row` is the commit `a` was acknowledged for: its kind, holder and term, at a moment
 * inside the commit's window. The window is the worker's (its wall clock at the answer, less the
 * call's monotonic duration) or, as well, the database's: from the clock the statement itself
 * read to that plus the call's duration (the ledger row is written later in the same statement).
 * Both clocks are this host's, but the wall clock can step (seen on the loaded test machine: a
 * few hundred ms behind, then caught up at once), and a step between the send and the answer
 * moves the worker's window off the row; the database's anchor is read inside the statement.
 */
const sameCommit = (a: AckedLease, row: LedgerRow) => sameLease(a, row) && (inWorkerWindow(a, row) || inDatabaseWindow(a, row));
const sameLease = (a: AckedLease, row: LedgerRow) => row.kind === (a.outcome === 'acquired' ? 'grant' : 'renew') && row.holder === a.candidateId && row.term === a.term;
const inWorkerWindow = (a: AckedLease, row: LedgerRow) => row.at >= a.sentAt - SLACK_MS && row.at <= a.ackedAt + SLACK_MS;
const inDatabaseWindow = (a: AckedLease, row: LedgerRow) =>
  a.databaseNow !== null && row.at >= a.databaseNow - SLACK_MS && row.at <= a.databaseNow + (a.ackedAt - a.sentAt) + SLACK_MS;

/** Acknowledged lease commits found in the history only by the database's window: the worker's wall clock stepped during the call. */
export function foundOnlyByDatabaseClock(ledger: LedgerRow[], acked: AckedLease[]): number {
  return acked.filter((a) => {
    const rows = ledger.filter((row) => sameLease(a, row));
    return !rows.some((row) => inWorkerWindow(a, row)) && rows.some((row) => inDatabaseWindow(a, row));
  }).length;
}

/** Acknowledged grants and renewals that the history does not have. */
export function lostLeaseCommits(ledger: LedgerRow[], acked: AckedLease[]): AckedLease[] {
  const byTerm = new Map<number, LedgerRow[]>();
  for (const row of ledger) {
    if (row.kind !== 'grant' && row.kind !== 'renew') continue;
    if (!byTerm.has(row.term)) byTerm.set(row.term, []);
    byTerm.get(row.term)!.push(row);
  }
  return acked.filter((a) => !(byTerm.get(a.term) ?? []).some((row) => sameCommit(a, row)));
}

/**
 * Terms granted twice: every grant in the surviving history, plus every acquisition a worker was
 * told of that the history does not have (it was lost), counted per term number.
 */
export function termsGrantedTwice(ledger: LedgerRow[], acked: AckedLease[]): number[] {
  const grants = ledger.filter((r) => r.kind === 'grant');
  const count = new Map<number, number>();
  for (const g of grants) count.set(g.term, (count.get(g.term) ?? 0) + 1);
  for (const a of acked) {
    if (a.outcome === 'acquired' && !grants.some((g) => sameCommit(a, g))) count.set(a.term, (count.get(a.term) ?? 0) + 1);
  }
  return [...count].filter(([, n]) => n > 1).map(([term]) => term);
}

export interface Leadership {
  candidateId: string;
  term: number;
  from: number;
  to: number;
}

/**
 * Each worker's local leaderships: from 'elected' to 'demoted', or to the local deadline (the last
 * acknowledged lease commit's send time + the lease) if that came first — `isLeader` turns false
 * at the deadline even before the timer that reports it has run.
 */
export function leaderships(workers: WorkerLog[], leaseMs: number, endAt: number): Leadership[] {
  const all: Leadership[] = [];
  for (const w of workers) {
    let open: { term: number; from: number; lastSent: number | undefined } | undefined;
    const close = (at: number) => {
      if (!open) return;
      const deadline = open.lastSent === undefined ? Infinity : open.lastSent + leaseMs;
      all.push({ candidateId: w.candidateId, term: open.term, from: open.from, to: Math.max(open.from, Math.min(at, deadline)) });
      open = undefined;
    };
    for (const line of w.lines) {
      if (line.event === 'elected') {
        close(line.t);
        open = { term: Number(line.term), from: line.t, lastSent: undefined };
      } else if (line.event === 'tick' && open && Number(line.term) === open.term) {
        open.lastSent = line.t - Number(line.durationMs);
      } else if (line.event === 'demoted') {
        close(line.t);
      }
    }
    close(endAt);
  }
  return all;
}

/** Pairs of local leaderships of different workers that overlapped, and by how much. */
export function overlaps(all: Leadership[]): Array<{ a: Leadership; b: Leadership; ms: number }> {
  const found: Array<{ a: Leadership; b: Leadership; ms: number }> = [];
  for (let i = 0; i < all.length; i++) {
    for (let j = i + 1; j < all.length; j++) {
      const a = all[i]!;
      const b = all[j]!;
      if (a.candidateId === b.candidateId) continue;
      const ms = Math.min(a.to, b.to) - Math.max(a.from, b.from);
      if (ms > 0) found.push({ a, b, ms });
    }
  }
  return found;
}

export function stats(values: Array<number | null>): { n: number; min: number | null; median: number | null; max: number | null } {
  const v = values.filter((x): x is number => x !== null).sort((a, b) => a - b);
  if (!v.length) return { n: 0, min: null, median: null, max: null };
  const mid = Math.floor(v.length / 2);
  return { n: v.length, min: v[0]!, median: v.length % 2 ? v[mid]! : Math.round((v[mid - 1]! + v[mid]!) / 2), max: v[v.length - 1]! };
}
