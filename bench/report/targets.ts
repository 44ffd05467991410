/** The targets and the run's correctness checks, evaluated from the results. */
import type { BenchKind } from '../lib/databases';
import type { DatabaseResults, Target } from './types';

export function evaluateTargets(results: Partial<Record<BenchKind, DatabaseResults>>): Target[] {
  const targets: Target[] = [];
  for (const [kind, r] of Object.entries(results) as Array<[BenchKind, DatabaseResults]>) {
    if (kind === 'postgres' && r.hotPath) {
      const value = r.hotPath.ratioToBaseline.renew;
      targets.push({ target: 'renewal throughput ÷ one-statement baseline', database: kind, value, limit: '≥ 0.85', met: value >= 0.85 });
    }
    if (kind === 'sqlite' && r.hotPath) {
      const value = r.hotPath.ratioToBaseline.renew;
      targets.push({ target: 'renewal throughput ÷ two-statement baseline', database: kind, value, limit: '≥ 0.6', met: value >= 0.6 });
    }
    const top = r.contention?.[r.contention.length - 1];
    if (top && top.followerP99Ratio !== null) {
      const value = top.followerP99Ratio;
      targets.push({
        target: `follower p99 ÷ baseline p99 at ${top.concurrency} concurrent`,
        database: kind,
        value,
        limit: '≤ 2',
        met: value <= 2,
      });
    }
    if (kind === 'sqlite' && top) {
      const value = top.library.starved;
      targets.push({
        target: `candidates that completed no call at ${top.concurrency} concurrent (most in one repetition)`,
        database: kind,
        value,
        limit: '= 0',
        met: value === 0,
      });
    }
    if (r.scale) {
      const points = r.scale.points;
      const value = r.scale.p50Ratio;
      targets.push({
        target: `elect p50 at ${points[points.length - 1]?.namespaces} ÷ at ${points[0]?.namespaces} namespaces`,
        database: kind,
        value,
        limit: '≤ 1.2',
        met: value <= 1.2,
      });
    }
    if (r.failover) {
      const { crash, graceful } = r.failover;
      if (kind === 'postgres') {
        targets.push({ target: 'graceful handover median (ms)', database: kind, value: graceful.median, limit: '< 100', met: graceful.median < 100 });
      }
      targets.push({
        target: 'crash failover median (ms)',
        database: kind,
        value: crash.median,
        limit: `≤ ${crash.limitMs} (lease + one tick)`,
        met: crash.median <= crash.limitMs,
      });
    }
    if (r.load) {
      const value = Math.max(r.load.maxTransactionsPerTick, ...Object.values(r.load.elect).map((e) => e.transactions));
      targets.push({ target: 'transactions per tick per candidate', database: kind, value, limit: '≤ 1', met: value <= 1 });
    }
  }
  return targets;
}

/** What must hold in every run, the smoke run included: no errors, exactly one leader. */
export function correctnessFailures(results: Partial<Record<BenchKind, DatabaseResults>>): string[] {
  const failures: string[] = [];
  for (const [kind, r] of Object.entries(results) as Array<[BenchKind, DatabaseResults]>) {
    for (const point of r.contention ?? []) {
      for (const side of ['library', 'baseline'] as const) {
        const s = point[side];
        if (s.errors) failures.push(`${kind} contention x${point.concurrency} ${side}: ${s.errors} errors (${s.errorSamples.join('; ')})`);
        if (!s.exactlyOneLeader) failures.push(`${kind} contention x${point.concurrency} ${side}: not exactly one leader at the end`);
      }
    }
    if (r.failover) {
      const f = r.failover;
      if (f.overlaps) failures.push(`${kind} failover: ${f.overlaps} overlapping leaderships`);
      if (f.crash.failed || f.graceful.failed) failures.push(`${kind} failover: ${f.crash.failed + f.graceful.failed} trials without a new leader`);
      if (f.errors.length) failures.push(`${kind} failover: elector errors: ${f.errors.slice(0, 3).join('; ')}`);
    }
    // Side by side: only the library's own trials count here (the others' are reported, not judged).
    if (r.peer) {
      const failed = r.peer.crash.library.failed + (r.peer.graceful.library?.failed ?? 0);
      if (failed) failures.push(`${kind} peer: ${failed} library trials without a new leader`);
    }
  }
  return failures;
}
