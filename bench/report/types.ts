import type { BenchKind } from '../lib/databases';
import type { ContentionPoint } from '../suites/contention';
import type { FailoverResult } from '../suites/failover';
import type { GroupResult } from '../suites/group';
import type { HotPathResult } from '../suites/hot-path';
import type { LoadResult } from '../suites/load';
import type { PeerResult } from '../suites/peer';
import type { ScaleResult } from '../suites/scale';
import type { SchedulesResult } from '../suites/schedules';

export interface DatabaseResults {
  version?: string;
  hotPath?: HotPathResult;
  contention?: ContentionPoint[];
  scale?: ScaleResult;
  load?: LoadResult;
  failover?: FailoverResult;
  group?: GroupResult;
  /** PostgreSQL: side by side with the peer package and a PL/pgSQL lease function. */
  peer?: PeerResult;
  /** Slots per second one leader runs, and what idle schedules add to its ticks. */
  schedules?: SchedulesResult;
  /** A suite that could not run, and why. */
  skipped?: Record<string, string>;
}

export interface Target {
  target: string;
  database: BenchKind;
  /** The measured value, in the unit of `limit`. */
  value: number | null;
  limit: string;
  met: boolean | null;
  note?: string;
}

export interface BenchReport {
  meta: {
    date: string;
    command: string;
    smoke: boolean;
    durationSeconds: number;
    machine: { cpus: number; cpuModel: string; memoryGiB: number; os: string; node: string; typeorm: string };
  };
  results: Partial<Record<BenchKind, DatabaseResults>>;
  targets: Target[];
  /** Correctness failures (errors, not exactly one leader, overlapping leaderships). */
  failures: string[];
}
