import { nowMs, summarize, Summary } from './stats';

export interface RunSample {
  /** Latency of each timed call, ms. */
  samples: number[];
  /** Calls per second: timed calls over the time they took (setup between calls excluded). */
  throughput: number;
}

/**
 * Runs `call` `count` times one after another, timing each call. `before` runs untimed ahead of
 * every call (e.g. expiring a lease so the next call is a takeover).
 */
export async function timeCalls(
  count: number,
  call: (i: number) => Promise<unknown>,
  before?: (i: number) => Promise<unknown>,
): Promise<RunSample> {
  const samples: number[] = new Array(count);
  let busy = 0;
  const loopStart = nowMs();
  for (let i = 0; i < count; i++) {
    if (before) await before(i);
    const start = nowMs();
    await call(i);
    const took = nowMs() - start;
    samples[i] = took;
    busy += took;
  }
  const elapsed = before ? busy : nowMs() - loopStart;
  return { samples, throughput: (count / elapsed) * 1000 };
}

/** One implementation's result over several repetitions. */
export interface RepeatedResult {
  /** Per repetition: throughput (calls/s) and latency percentiles (ms). */
  reps: Array<{ throughput: number; p50: number; p99: number }>;
  /** Median over repetitions of the per-repetition throughput. */
  throughput: number;
  /** Percentiles over the samples of all repetitions pooled. */
  latency: Summary;
}

export function combine(runs: RunSample[]): RepeatedResult {
  const reps = runs.map((run) => {
    const s = summarize(run.samples);
    return { throughput: run.throughput, p50: s.p50, p99: s.p99 };
  });
  const throughputs = reps.map((r) => r.throughput).sort((a, b) => a - b);
  return {
    reps,
    throughput: throughputs[Math.floor((throughputs.length - 1) / 2)] as number,
    latency: summarize(runs.flatMap((run) => run.samples)),
  };
}

/** Median of the per-repetition ratios a/b: both sides were measured in the same repetition. */
export function pairedRatio(a: RepeatedResult, b: RepeatedResult, pick: (rep: RepeatedResult['reps'][number]) => number): number {
  const ratios = a.reps.map((rep, i) => pick(rep) / pick(b.reps[i] as RepeatedResult['reps'][number])).sort((x, y) => x - y);
  return ratios[Math.floor((ratios.length - 1) / 2)] as number;
}

/** Several runs of the same thing as one (e.g. chunks interleaved with other measurements). */
export function concatRuns(runs: RunSample[]): RunSample {
  const samples = runs.flatMap((run) => run.samples);
  const busy = runs.reduce((sum, run) => sum + (run.samples.length / run.throughput) * 1000, 0);
  return { samples, throughput: (samples.length / busy) * 1000 };
}
