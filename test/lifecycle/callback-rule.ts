import type { DataSource } from 'typeorm';
import { LeaderElector, LeaderElectorGroup, Lease, DemotionReason } from 'gemstone-utils';

/**
 * The callback rule of both loops, checked per leadership (a Lease object: a term granted twice
 * is two leaderships under one number): `started` (signal not aborted), `elected`, and — once it
 * ends — `stopped` (signal aborted), `demoted`, nothing more.
 */
export type Step = 'started' | 'elected' | 'stopped' | 'demoted';

export interface Recorder {
  /** Every callback and event in order, with its leadership. */
  readonly log: Array<{ step: Step; lease: Lease; aborted: boolean; reason?: DemotionReason }>;
  /** Leaderships in the order they were first seen. */
  readonly leases: Lease[];
  /** Called (synchronously) by onStoppedLeading before it records: a test's slow callback. */
  onStopped?: (lease: Lease) => void | Promise<void>;
  /** Called by onStartedLeading. */
  onStarted?: (lease: Lease) => void;
  /** Errors the loop reported. */
  readonly errors: Error[];
}

export function recorder(): Recorder {
  return { log: [], leases: [], errors: [] };
}

function push(r: Recorder, step: Step, lease: Lease, reason?: DemotionReason): void {
  if (!r.leases.includes(lease)) r.leases.push(lease);
  r.log.push({ step, lease, aborted: lease.signal.aborted, ...(reason ? { reason } : {}) });
}

/** The options that record into `r`. */
export function recordingCallbacks(r: Recorder) {
  return {
    onStartedLeading: (lease: Lease) => {
      push(r, 'started', lease);
      r.onStarted?.(lease);
    },
    onStoppedLeading: (lease: Lease) => {
      const slow = r.onStopped?.(lease);
      push(r, 'stopped', lease);
      return slow;
    },
  };
}

export function recordEvents(r: Recorder, loop: LeaderElector | LeaderElectorGroup): void {
  (loop as LeaderElector).on('elected', (lease) => push(r, 'elected', lease));
  (loop as LeaderElector).on('demoted', (lease, reason) => push(r, 'demoted', lease, reason));
  (loop as LeaderElector).on('error', (error) => void r.errors.push(error));
}

/**
 * Violations of the rule, per leadership: its steps must be a prefix of started, elected,
 * stopped, demoted that holds `started, elected` whenever it holds anything (`complete`: all
 * four), with the signal aborted exactly from `stopped` on; and no leadership of a namespace
 * starts before the previous one of that namespace was demoted.
 */
export function violations(r: Recorder, complete: boolean): string[] {
  const out: string[] = [];
  const name = (lease: Lease) => `${lease.ns}#${lease.term} (leadership ${r.leases.indexOf(lease) + 1})`;
  for (const lease of r.leases) {
    const steps = r.log.filter((e) => e.lease === lease);
    const seen = steps.map((e) => e.step).join(', ');
    const want = complete ? 'started, elected, stopped, demoted' : undefined;
    if (want ? seen !== want : !['started, elected', 'started, elected, stopped, demoted'].includes(seen)) out.push(`${name(lease)}: ${seen}`);
    for (const e of steps) {
      const shouldBeAborted = e.step === 'stopped' || e.step === 'demoted';
      if (e.aborted !== shouldBeAborted) out.push(`${name(lease)}: signal ${e.aborted ? 'aborted' : 'not aborted'} at ${e.step}`);
    }
  }
  const open = new Map<string, Lease>();
  for (const e of r.log) {
    const ns = e.lease.ns;
    if (e.step === 'started') {
      const before = open.get(ns);
      if (before && before !== e.lease) out.push(`${name(e.lease)} started before ${name(before)} was demoted`);
      open.set(ns, e.lease);
    } else if (e.step === 'demoted' && open.get(ns) === e.lease) {
      open.delete(ns);
    }
  }
  return out;
}

/** Blocks the event loop for `ms`: a synchronous callback that takes that long. */
export function blockFor(ms: number): void {
  const until = performance.now() + ms;
  while (performance.now() < until) {
    // spin
  }
}

export type Loop = 'elector' | 'group';

/** An elector or a one-namespace group on `ns`, recording into `r`. */
export function makeLoop(kind: Loop, dataSource: DataSource, ns: string, r: Recorder, options: { expireSeconds: number; intervalMs: number; clock?: () => number; stopTimeoutMs?: number }): LeaderElector | LeaderElectorGroup {
  const common = { dataSource, listen: false as const, ...options, ...recordingCallbacks(r) };
  const loop = kind === 'elector' ? new LeaderElector({ ns, ...common }) : new LeaderElectorGroup({ namespaces: [ns], ...common });
  recordEvents(r, loop);
  return loop;
}
