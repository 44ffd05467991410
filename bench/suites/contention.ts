/**
 * Contention: 1, 8 and 64 candidates electing on ONE namespace at the same time, each in a
 * worker thread with one connection of its own, in a closed loop until a shared deadline; the
 * library and the baseline (lib/baseline.ts) take turns, repetition by repetition. The first
 * candidate leads (it elected first, with a 60 s lease), so every other call is a follower's.
 * A first repetition of each side warms the workers up and is not recorded (its errors and
 * leader check are).
 */
import * as path from 'path';
import { Worker } from 'worker_threads';
import { openRaw } from '../lib/baseline';
import type { BenchTarget } from '../lib/databases';
import { candidateIds, openLibrary, service } from '../lib/library';
import { median, summarize } from '../lib/stats';
import type { ContentionCommand, ContentionRunReport, ContentionWorkerData } from '../workers/contention-worker';

export interface ContentionSizes {
  concurrency: number[];
  warmupMs: number;
  durationMs: number;
  reps: number;
}

export interface ContentionSide {
  /** Medians over repetitions of each repetition's percentile (ms). */
  p50: number;
  p99: number;
  followerP50: number | null;
  followerP99: number | null;
  /** Calls per second, all candidates together (median over repetitions). */
  throughput: number;
  calls: number;
  errors: number;
  errorSamples: string[];
  /** Exactly one leader at the end of every repetition (checked in the database; for the library also by the callers' outcomes). */
  exactlyOneLeader: boolean;
  /** Starved candidates: the most, in one repetition, that completed no call inside the window. */
  starved: number;
}

export interface ContentionPoint {
  concurrency: number;
  library: ContentionSide;
  baseline: ContentionSide;
  /** library ÷ baseline follower p99 (median of per-repetition ratios; null at concurrency 1). */
  followerP99Ratio: number | null;
  p50Ratio: number;
}

const EXPIRE = 60;

class Candidate {
  readonly worker: Worker;
  #pending: ((value: unknown) => void) | undefined;
  #failed: ((error: Error) => void) | undefined;

  constructor(data: ContentionWorkerData) {
    this.worker = new Worker(path.join(__dirname, '..', 'workers', 'contention-worker.js'), { workerData: data });
    this.worker.on('message', (message: { type: string; error?: string }) => {
      if (message.type === 'failed') this.#failed?.(new Error(message.error));
      else this.#pending?.(message);
    });
    this.worker.on('error', (error) => this.#failed?.(error));
  }

  send<T>(command: ContentionCommand): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      this.#pending = resolve as (value: unknown) => void;
      this.#failed = reject;
      this.worker.postMessage(command);
    });
  }
}

/** One repetition's figures: a {@link ContentionSide} before the medians, with its errors listed. */
type RepOutcome = Omit<ContentionSide, 'errors' | 'errorSamples'> & { errors: string[] };

export async function runContention(target: BenchTarget, sizes: ContentionSizes, log: (line: string) => void): Promise<ContentionPoint[]> {
  const setup = await openLibrary(target);
  const raw = await openRaw(target);
  const points: ContentionPoint[] = [];
  try {
    const election = service(setup, EXPIRE);
    for (const concurrency of sizes.concurrency) {
      const ids = candidateIds(concurrency);
      const leader = ids[0] as string;
      const namespaces = { library: `contention-${concurrency}-library`, baseline: `contention-${concurrency}-baseline` };
      // The first candidate leads and every candidate is registered, for both sides alike (untimed,
      // through the library): the calls measured are a renewal and followers' heartbeats.
      for (const ns of Object.values(namespaces)) {
        await election.elect(leader, { ns });
        for (const id of ids) await election.registerCandidate(id, { ns });
      }
      const candidates = ids.map((candidateId) => new Candidate({ target, candidateId, expireSeconds: EXPIRE }));
      const reps: Record<'library' | 'baseline', RepOutcome[]> = { library: [], baseline: [] };
      const warmUps: Record<'library' | 'baseline', Pick<RepOutcome, 'errors' | 'exactlyOneLeader'>> = {
        library: { errors: [], exactlyOneLeader: true },
        baseline: { errors: [], exactlyOneLeader: true },
      };
      try {
        // Repetition 0 is a warm-up, not recorded: each worker is a V8 isolate of its own, whose
        // first calls run cold code (64 isolates compiling on two cores took seconds, and the
        // library, run first, paid it alone: the baseline's driver code was warm by its turn).
        for (let rep = -1; rep < sizes.reps; rep++) {
          const warmUp = rep < 0;
          for (const mode of ['library', 'baseline'] as const) {
            await Promise.all(candidates.map((c) => c.send({ type: 'open', mode })));
            // The first candidate leads at the start of every run, whatever the slow start of many
            // workers on a loaded machine took (untimed; a lapsed lease is taken again).
            await election.elect(leader, { ns: namespaces[mode] });
            const measureFrom = Date.now() + 100 + sizes.warmupMs;
            const until = measureFrom + sizes.durationMs;
            const reports = await Promise.all(candidates.map((c) => c.send<ContentionRunReport>({ type: 'run', ns: namespaces[mode], measureFrom, until })));
            await Promise.all(candidates.map((c) => c.send({ type: 'close' })));
            const row = await raw.leader(namespaces[mode]);
            const problems: string[] = [];
            if (!(row?.live === true && row.leaderId === leader)) problems.push(`database: ${JSON.stringify(row)}, expected ${leader}`);
            if (mode === 'library') {
              const claiming = reports.filter((r) => r.lastIsLeader).length;
              const seen = new Set(reports.map((r) => r.lastLeader));
              if (claiming !== 1) problems.push(`${claiming} candidates say they lead`);
              if (seen.size !== 1 || !seen.has(leader)) problems.push(`candidates see leaders ${JSON.stringify([...seen])}`);
            }
            const idle = reports.filter((r) => r.samples.length === 0).length;
            if (warmUp) {
              log(`  contention ${target.kind} x${concurrency} ${mode}: warm-up${idle ? `, ${idle} candidates completed no call inside its window` : ''}${problems.length ? `, NOT exactly one leader: ${problems.join('; ')}` : ''}`);
              // Its correctness counts as any repetition's does.
              warmUps[mode] = { errors: reports.flatMap((r) => r.errors), exactlyOneLeader: problems.length === 0 };
              continue;
            }
            if (idle) log(`  contention ${target.kind} x${concurrency} ${mode}: ${idle} candidates completed no call inside the window`);
            const exactlyOneLeader = problems.length === 0;
            if (!exactlyOneLeader) log(`  contention ${target.kind} x${concurrency} ${mode}: NOT exactly one leader: ${problems.join('; ')}`);
            const all = reports.flatMap((r) => r.samples);
            const followers = reports.slice(1).flatMap((r) => r.samples);
            const s = summarize(all);
            const f = followers.length ? summarize(followers) : null;
            reps[mode].push({
              starved: idle,
              p50: s.p50,
              p99: s.p99,
              followerP50: f?.p50 ?? null,
              followerP99: f?.p99 ?? null,
              throughput: (all.length / sizes.durationMs) * 1000,
              calls: all.length,
              errors: reports.flatMap((r) => r.errors),
              exactlyOneLeader,
            });
          }
          if (!warmUp) log(`  contention ${target.kind} x${concurrency}: repetition ${rep + 1}/${sizes.reps} done`);
        }
      } finally {
        await Promise.all(candidates.map((c) => c.worker.terminate()));
      }
      const side = (outcomes: RepOutcome[], warmUp: Pick<RepOutcome, 'errors' | 'exactlyOneLeader'>): ContentionSide => ({
        p50: median(outcomes.map((o) => o.p50)),
        p99: median(outcomes.map((o) => o.p99)),
        followerP50: concurrency > 1 ? median(outcomes.map((o) => o.followerP50 as number)) : null,
        followerP99: concurrency > 1 ? median(outcomes.map((o) => o.followerP99 as number)) : null,
        throughput: median(outcomes.map((o) => o.throughput)),
        calls: outcomes.reduce((sum, o) => sum + o.calls, 0),
        errors: outcomes.reduce((sum, o) => sum + o.errors.length, warmUp.errors.length),
        errorSamples: [...warmUp.errors, ...outcomes.flatMap((o) => o.errors)].slice(0, 5),
        exactlyOneLeader: warmUp.exactlyOneLeader && outcomes.every((o) => o.exactlyOneLeader),
        starved: Math.max(0, ...outcomes.map((o) => o.starved)),
      });
      points.push({
        concurrency,
        library: side(reps.library, warmUps.library),
        baseline: side(reps.baseline, warmUps.baseline),
        followerP99Ratio:
          concurrency > 1
            ? median(reps.library.map((o, i) => (o.followerP99 as number) / (reps.baseline[i]?.followerP99 as number)))
            : null,
        p50Ratio: median(reps.library.map((o, i) => o.p50 / (reps.baseline[i]?.p50 as number))),
      });
    }
    return points;
  } finally {
    await raw.close();
    await setup.destroy();
  }
}
