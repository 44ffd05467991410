/**
 * Hot path: one caller, one connection, calls back to back. `elect` by the renewing leader, by a
 * follower (another holds the lease) and as a takeover (the lease was ended just before, untimed),
 * next to the baseline (lib/baseline.ts) and, on PostgreSQL, the stored function — all
 * interleaved in chunks of calls, so they share the machine's noise.
 */
import type { ElectionService, ElectOutcome } from 'gemstone-utils';
import { installStoredFunction, openRaw, RawClient, StoredFunction } from '../lib/baseline';
import type { BenchTarget } from '../lib/databases';
import { candidateIds, openLibrary, service } from '../lib/library';
import { combine, concatRuns, pairedRatio, RepeatedResult, RunSample, timeCalls } from '../lib/measure';

export type Scenario = 'renew' | 'follower' | 'takeover';
export const SCENARIOS: readonly Scenario[] = ['renew', 'follower', 'takeover'];
export type Implementation = 'library' | 'baseline' | 'storedFn';

export interface HotPathSizes {
  warmup: number;
  calls: number;
  reps: number;
}

export interface HotPathResult {
  sizes: HotPathSizes;
  scenarios: Record<Scenario, Partial<Record<Implementation, RepeatedResult>>>;
  /** library ÷ baseline throughput (median of per-repetition ratios). */
  ratioToBaseline: Record<Scenario, number>;
  /** library ÷ stored fn throughput (PostgreSQL only). */
  ratioToStoredFunction?: Record<Scenario, number>;
}

const EXPIRE = 60;

type Runner = Record<Scenario, (count: number) => Promise<RunSample>>;

function check(condition: boolean, message: string): void {
  if (!condition) throw new Error(`hot path: ${message}`);
}

function libraryRunner(election: ElectionService, raw: RawClient): Runner {
  const [leader, follower] = candidateIds(2) as [string, string];
  const ns = 'hot-library';
  const takeoverNs = 'hot-library-takeover';
  return {
    async renew(count) {
      const run = await timeCalls(count, () => election.electOutcome(leader, { ns }));
      check((await election.electOutcome(leader, { ns })).isLeader, 'the renewing leader lost its lease');
      return run;
    },
    async follower(count) {
      await election.elect(leader, { ns });
      const run = await timeCalls(count, () => election.electOutcome(follower, { ns }));
      check((await election.electOutcome(follower, { ns })).leaderId === leader, 'a follower took an unexpired lease');
      return run;
    },
    async takeover(count) {
      const ids = [leader, follower];
      const outcomes: ElectOutcome[] = [];
      const first = await election.electOutcome(leader, { ns: takeoverNs });
      const run = await timeCalls(
        count,
        async (i) => outcomes.push(await election.electOutcome(ids[(i + 1) % 2] as string, { ns: takeoverNs })),
        () => raw.expireLease(takeoverNs),
      );
      outcomes.forEach((outcome, i) =>
        check(outcome.acquired && outcome.term === first.term + i + 1, `takeover ${i} did not acquire under the next term`),
      );
      return run;
    },
  };
}

async function baselineRunner(election: ElectionService, raw: RawClient): Promise<Runner> {
  const [leader, follower] = candidateIds(2) as [string, string];
  const ns = 'hot-baseline';
  const takeoverNs = 'hot-baseline-takeover';
  // Start with the leader holding the lease and the follower registered, set up through the
  // library (untimed); the baseline's upserts would create the rows too. On MariaDB the baseline
  // is one round trip of START TRANSACTION, a plain read of the leader row, the leader upsert
  // (INSERT … SELECT … ON DUPLICATE KEY UPDATE, which selects a row only when no other candidate
  // holds a live lease), the candidate upsert and COMMIT — no multi-table UPDATE (lib/baseline.ts).
  for (const n of [ns, takeoverNs]) {
    await election.registerCandidate(follower, { ns: n });
    await election.elect(leader, { ns: n });
  }
  return {
    async renew(count) {
      const run = await timeCalls(count, () => raw.elect(ns, leader, EXPIRE));
      check((await raw.leader(ns))?.leaderId === leader, 'baseline: the renewing leader lost its lease');
      return run;
    },
    async follower(count) {
      const run = await timeCalls(count, () => raw.elect(ns, follower, EXPIRE));
      check((await raw.leader(ns))?.leaderId === leader, 'baseline: a follower took an unexpired lease');
      return run;
    },
    async takeover(count) {
      const before = await raw.leader(takeoverNs);
      const ids = [follower, leader];
      const run = await timeCalls(
        count,
        (i) => raw.elect(takeoverNs, ids[i % 2] as string, EXPIRE),
        () => raw.expireLease(takeoverNs),
      );
      const after = await raw.leader(takeoverNs);
      check(after?.term === (before?.term ?? 0) + count, `baseline: ${count} takeovers moved the term from ${before?.term} to ${after?.term}`);
      check(after?.leaderId === ids[(count - 1) % 2] && after.live, 'baseline: the last takeover did not leave its caller leading');
      return run;
    },
  };
}

function storedFunctionRunner(fn: StoredFunction): Runner {
  const [leader, follower] = candidateIds(2) as [string, string];
  const service = 'hot-stored-fn';
  const takeoverService = 'hot-stored-fn-takeover';
  return {
    async renew(count) {
      return timeCalls(count, async () => check(await fn.tryBecomeLeader(service, leader, EXPIRE), 'stored function: renewal failed'));
    },
    async follower(count) {
      await fn.tryBecomeLeader(service, leader, EXPIRE);
      return timeCalls(count, async () => check(!(await fn.tryBecomeLeader(service, follower, EXPIRE)), 'stored function: a follower took the lease'));
    },
    async takeover(count) {
      const ids = [follower, leader];
      await fn.tryBecomeLeader(takeoverService, leader, EXPIRE);
      return timeCalls(
        count,
        async (i) => check(await fn.tryBecomeLeader(takeoverService, ids[i % 2] as string, EXPIRE), 'stored function: takeover failed'),
        () => fn.expire(takeoverService),
      );
    },
  };
}

export async function runHotPath(target: BenchTarget, sizes: HotPathSizes, log: (line: string) => void): Promise<HotPathResult> {
  const dataSource = await openLibrary(target);
  const raw = await openRaw(target);
  try {
    const election = service(dataSource, EXPIRE);
    if (target.kind === 'postgres') await installStoredFunction(target.url);
    const runners: Partial<Record<Implementation, Runner>> = {
      library: libraryRunner(election, raw),
      baseline: await baselineRunner(election, raw),
      ...(raw.storedFunction ? { storedFn: storedFunctionRunner(raw.storedFunction) } : {}),
    };
    const implementations = Object.keys(runners) as Implementation[];
    const runs: Record<Scenario, Partial<Record<Implementation, RunSample[]>>> = { renew: {}, follower: {}, takeover: {} };
    // Implementations take turns in chunks of calls, so a burst of load from elsewhere on the
    // machine hits them alike; a repetition's result is its chunks together.
    const CHUNK = 100;
    for (let rep = 0; rep < sizes.reps; rep++) {
      for (const scenario of SCENARIOS) {
        const chunks: Partial<Record<Implementation, RunSample[]>> = {};
        for (const implementation of implementations) await (runners[implementation] as Runner)[scenario](sizes.warmup);
        for (let done = 0; done < sizes.calls; done += CHUNK) {
          for (const implementation of implementations) {
            const run = await (runners[implementation] as Runner)[scenario](Math.min(CHUNK, sizes.calls - done));
            (chunks[implementation] ??= []).push(run);
          }
        }
        for (const implementation of implementations) (runs[scenario][implementation] ??= []).push(concatRuns(chunks[implementation] ?? []));
      }
      log(`  hot path ${target.kind}: repetition ${rep + 1}/${sizes.reps} done`);
    }
    const scenarios = {} as HotPathResult['scenarios'];
    const ratioToBaseline = {} as Record<Scenario, number>;
    const ratioToStoredFunction = {} as Record<Scenario, number>;
    for (const scenario of SCENARIOS) {
      const combined: Partial<Record<Implementation, RepeatedResult>> = {};
      for (const implementation of implementations) combined[implementation] = combine(runs[scenario][implementation] ?? []);
      scenarios[scenario] = combined;
      ratioToBaseline[scenario] = pairedRatio(combined.library!, combined.baseline!, (r) => r.throughput);
      if (combined.storedFn) ratioToStoredFunction[scenario] = pairedRatio(combined.library!, combined.storedFn, (r) => r.throughput);
    }
    return { sizes, scenarios, ratioToBaseline, ...(target.kind === 'postgres' ? { ratioToStoredFunction } : {}) };
  } finally {
    await raw.close();
    await dataSource.destroy();
  }
}
