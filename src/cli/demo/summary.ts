import pc from 'picocolors';
import { duration, roundMs } from '../format';
import type { LedgerVerdict, StaleWrite } from './ledger';
import type { Observations } from './supervisor';

/** The end-of-run report. `--json` prints exactly this object; durations are milliseconds to one decimal. */
export interface DemoSummary {
  runId: string;
  url: string;
  ns: string;
  workers: number;
  durationMs: number;
  fencing: boolean;
  /** Terms acquired during the run: the leader row's term at the end minus at the start. */
  elections: number;
  /** Consecutive terms in the term history held by different candidates. */
  failovers: number;
  kills: number;
  pauses: number;
  /** Longest stretch without a live lease (database clock); null if no leader was ever seen. */
  longestLeaderlessMs: number | null;
  /** Longest time from a chaos action to the election of another worker (includes waiting out the lease). */
  longestTakeoverMs: number | null;
  /** Ledger rows of this run, counted in the database. */
  ledgerWrites: number;
  /** Writes that `assertLeader` refused (reported by the workers). */
  fencedRejections: number;
  /** Ledger rows written under a stale term, from the ledger and the term history: must be 0. */
  staleWrites: number;
  staleDetails: StaleWrite[];
  workerErrors: number;
}

export function buildSummary(
  base: Pick<DemoSummary, 'runId' | 'url' | 'ns' | 'workers' | 'durationMs' | 'fencing'>,
  initialTerm: number,
  observed: Observations,
  verdict: LedgerVerdict,
): DemoSummary {
  return {
    ...base,
    durationMs: roundMs(base.durationMs),
    elections: Math.max(0, (observed.finalTerm ?? initialTerm) - initialTerm),
    failovers: verdict.failovers,
    kills: observed.kills,
    pauses: observed.pauses,
    longestLeaderlessMs: roundMs(observed.longestLeaderlessMs),
    longestTakeoverMs: roundMs(observed.longestTakeoverMs),
    ledgerWrites: verdict.writes,
    fencedRejections: observed.fencedRejections,
    staleWrites: verdict.stale.length,
    staleDetails: verdict.stale,
    workerErrors: observed.workerErrors,
  };
}

/** The summary as aligned `label: value` lines. */
export function summaryText(summary: DemoSummary): string {
  const stale =
    summary.staleWrites === 0
      ? pc.green('0')
      : pc.red(`${summary.staleWrites}${summary.fencing ? '  (BUG: fencing should make this impossible)' : '  (fencing was off: --unfenced)'}`);
  const lines: Array<[string, string]> = [
    ['elections', String(summary.elections)],
    ['failovers', String(summary.failovers)],
    ['chaos', `${summary.kills} killed, ${summary.pauses} paused`],
    ['longest time without a leader', `${duration(summary.longestLeaderlessMs)} ${pc.dim('(no live lease, database clock)')}`],
    ['longest takeover after chaos', `${duration(summary.longestTakeoverMs)} ${pc.dim('(kill/pause until another worker leads)')}`],
    ['ledger writes committed', String(summary.ledgerWrites)],
    ['writes refused by fencing', String(summary.fencedRejections)],
    ['writes by a stale term', stale],
  ];
  const width = Math.max(...lines.map(([label]) => label.length)) + 1;
  const head = `${pc.bold('summary')} ${pc.dim(
    `(${(summary.durationMs / 1000).toFixed(1)}s, ${summary.workers} workers, ${summary.url}, namespace ${JSON.stringify(summary.ns)}, run ${summary.runId.slice(0, 8)})`,
  )}`;
  const details = summary.staleDetails.map((s) => pc.red(`  stale: ledger #${s.id} term ${s.term} by ${s.workerId.slice(0, 8)}: ${s.reason}`));
  return [head, ...lines.map(([label, value]) => `  ${`${label}:`.padEnd(width + 1)} ${value}`), ...details].join('\n');
}
