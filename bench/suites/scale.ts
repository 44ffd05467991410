/**
 * Scale: `elect` latency with 10, 1,000 and 10,000 namespaces (3 candidates each), each size in
 * a database of its own so the sizes can be measured side by side, repetition by repetition.
 * Every call picks a random namespace and a random one of its candidates (a third are the
 * leader's renewals). And `listCandidates` on a namespace of 10,000 active candidates.
 *
 * Beside the library, the raw baseline (`lib/baseline.ts`) does the same calls on the same
 * database, taking turns: how much of a larger database's cost is the database's own. And the
 * statements the library sent per call at each size (TypeORM logger, warm-up included): a path
 * that depends on what the process saw before (MariaDB's one-statement renewal needs the
 * caller's last outcome in that namespace) shows there.
 */
import type { ElectionService } from 'gemstone-utils';
import type { DataSource } from 'typeorm';
import { openRaw, RawClient } from '../lib/baseline';
import { BenchDatabase, BenchKind } from '../lib/databases';
import { candidateIds, CountingLogger, openLibrary, service } from '../lib/library';
import { combine, concatRuns, RepeatedResult, RunSample, timeCalls } from '../lib/measure';
import { median } from '../lib/stats';
import { seedCandidates, seedLeaders } from '../lib/seed';

export interface ScaleSizes {
  namespaces: number[];
  candidatesPerNamespace: number;
  warmup: number;
  calls: number;
  reps: number;
  listCandidates: number;
  listCalls: number;
}

export interface ScaleResult {
  sizes: ScaleSizes;
  /** Per size: the library's calls, the baseline's, and the library's statements per call. */
  points: Array<{ namespaces: number; elect: RepeatedResult; baseline: RepeatedResult; statementsPerCall: number }>;
  /** Largest ÷ smallest namespace count: median of per-repetition p50 ratios. */
  p50Ratio: number;
  /** The same for the baseline's calls. */
  baselineP50Ratio: number;
  list: { candidates: number; result: RepeatedResult; returned: number };
}

const EXPIRE = 60;

interface Sized {
  namespaces: number;
  db: BenchDatabase;
  dataSource: DataSource;
  election: ElectionService;
  ids: string[][];
  raw: RawClient;
  logger: CountingLogger;
  calls: number;
}

/** Largest ÷ smallest size: the median of the per-repetition p50 ratios. */
function p50RatioOf(smallest: RepeatedResult, largest: RepeatedResult): number {
  return median(largest.reps.map((rep, i) => rep.p50 / (smallest.reps[i]?.p50 as number)));
}

export async function runScale(kind: BenchKind, sizes: ScaleSizes, log: (line: string) => void): Promise<ScaleResult> {
  const sized: Sized[] = [];
  try {
    for (const namespaces of sizes.namespaces) {
      const db = new BenchDatabase(kind, `ns${namespaces}`);
      await db.create();
      const logger = new CountingLogger();
      const dataSource = await openLibrary(db.target, { logger });
      const ids = Array.from({ length: namespaces }, () => candidateIds(sizes.candidatesPerNamespace));
      await seedLeaders(dataSource, kind, ids.map((c, i) => [`scale-${i}`, c[0] as string]));
      await seedCandidates(dataSource, kind, ids.flatMap((c, i) => c.map((id) => [`scale-${i}`, id] as [string, string])));
      logger.reset();
      const raw = await openRaw(db.target);
      sized.push({ namespaces, db, dataSource, election: service(dataSource, EXPIRE), ids, raw, logger, calls: 0 });
      log(`  scale ${kind}: ${namespaces} namespaces seeded`);
    }
    const runs = new Map<Sized, RunSample[]>(sized.map((s) => [s, []]));
    const baselineRuns = new Map<Sized, RunSample[]>(sized.map((s) => [s, []]));
    const pick = (s: Sized) => {
      const i = Math.floor(Math.random() * s.namespaces);
      const candidates = s.ids[i] as string[];
      return { ns: `scale-${i}`, id: candidates[Math.floor(Math.random() * candidates.length)] as string };
    };
    const call = (s: Sized) => () => {
      const { ns, id } = pick(s);
      s.calls++;
      return s.election.electOutcome(id, { ns });
    };
    const baselineCall = (s: Sized) => () => {
      const { ns, id } = pick(s);
      return s.raw.elect(ns, id, EXPIRE);
    };
    // Sizes (and library and baseline) take turns in small chunks, so a burst of load elsewhere hits them alike.
    const CHUNK = 50;
    for (let rep = 0; rep < sizes.reps; rep++) {
      for (const s of sized) await timeCalls(sizes.warmup, call(s));
      for (const s of sized) await timeCalls(sizes.warmup, baselineCall(s));
      const chunks = new Map<Sized, RunSample[]>(sized.map((s) => [s, []]));
      const baselineChunks = new Map<Sized, RunSample[]>(sized.map((s) => [s, []]));
      for (let done = 0; done < sizes.calls; done += CHUNK) {
        const count = Math.min(CHUNK, sizes.calls - done);
        for (const s of sized) {
          chunks.get(s)?.push(await timeCalls(count, call(s)));
          baselineChunks.get(s)?.push(await timeCalls(count, baselineCall(s)));
        }
      }
      for (const s of sized) {
        runs.get(s)?.push(concatRuns(chunks.get(s) ?? []));
        baselineRuns.get(s)?.push(concatRuns(baselineChunks.get(s) ?? []));
      }
    }
    const points = sized.map((s) => ({
      namespaces: s.namespaces,
      elect: combine(runs.get(s) ?? []),
      baseline: combine(baselineRuns.get(s) ?? []),
      statementsPerCall: s.logger.statements / s.calls,
    }));
    const smallest = points[0] as (typeof points)[number];
    const largest = points[points.length - 1] as (typeof points)[number];
    const p50Ratio = p50RatioOf(smallest.elect, largest.elect);
    const baselineP50Ratio = p50RatioOf(smallest.baseline, largest.baseline);

    // listCandidates: one namespace of many active candidates, in the largest database.
    const big = sized[sized.length - 1] as Sized;
    const listIds = candidateIds(sizes.listCandidates);
    await seedCandidates(big.dataSource, kind, listIds.map((id) => ['list-many', id] as [string, string]));
    let returned = 0;
    const listRuns: RunSample[] = [];
    for (let rep = 0; rep < sizes.reps; rep++) {
      await timeCalls(2, () => big.election.listCandidates({ ns: 'list-many' }));
      listRuns.push(
        await timeCalls(sizes.listCalls, async () => {
          returned = (await big.election.listCandidates({ ns: 'list-many' })).length;
        }),
      );
    }
    if (returned !== sizes.listCandidates) throw new Error(`listCandidates returned ${returned} of ${sizes.listCandidates} active candidates`);
    return { sizes, points, p50Ratio, baselineP50Ratio, list: { candidates: sizes.listCandidates, result: combine(listRuns), returned } };
  } finally {
    for (const s of sized) {
      await s.raw.close();
      await s.dataSource.destroy();
      await s.db.drop();
    }
  }
}
