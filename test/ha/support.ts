/**
 * Shared by the test/ha/ files: typed access to tools/private-db.js (private servers, poolers and
 * replicas on loopback ports of their own), the run length knob, and hand-over timing.
 */
import * as path from 'path';
import type { LeaderElector } from 'gemstone-utils';
import { median, waitFor } from '../elector/helpers';

const ROOT = path.join(__dirname, '..', '..');

export interface PrivatePgbouncer {
  port: number;
  dir: string;
  rewrite(url: string): string;
  stop(): void;
}

// eslint-disable-next-line @typescript-eslint/no-var-requires
export const privateDb = require(path.join(ROOT, 'tools', 'private-db.js')) as {
  startPgbouncer(options?: { targetHost?: string; targetPort?: number; poolMode?: 'session' | 'transaction'; poolSize?: number }): Promise<PrivatePgbouncer>;
  freePort(): Promise<number>;
};

/** GEMSTONE_HA_FULL=1: the long runs whose numbers docs/production-databases.md reports. */
export const FULL = process.env.GEMSTONE_HA_FULL === '1';

/** Prints a measurement so a run's output carries the numbers (jest shows console.log). */
export function report(title: string, values: object): void {
  // eslint-disable-next-line no-console
  console.log(`${title}\n${JSON.stringify(values, null, 2)}`);
}

export interface HandoverStats {
  rounds: number;
  medianMs: number;
  maxMs: number;
  all: number[];
}

/**
 * Hands leadership back and forth between two running electors `rounds` times: the leader's
 * `stop()` is called, the time until the other `isLeader` is measured, then the stopped one
 * starts again as a follower.
 */
export async function measureHandovers(a: LeaderElector, b: LeaderElector, rounds: number, limitMs: number): Promise<HandoverStats> {
  const all: number[] = [];
  for (let i = 0; i < rounds; i++) {
    await waitFor('a leader', () => a.isLeader || b.isLeader, limitMs);
    const [leader, follower] = a.isLeader ? [a, b] : [b, a];
    const from = performance.now();
    await leader.stop();
    await waitFor('the follower to take over', () => follower.isLeader, limitMs, 2);
    all.push(Math.round(performance.now() - from));
    await leader.start();
  }
  return { rounds, medianMs: median(all), maxMs: Math.max(...all), all };
}
