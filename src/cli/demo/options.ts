import { DEFAULT_DASHBOARD_PORT } from '../../dashboard/server';

/** Defaults of `gemstone-election demo`, chosen so failovers happen within seconds. */
export const DEFAULT_DEMO_WORKERS = 3;
export const DEFAULT_DEMO_DURATION_SECONDS = 30;
/** One day: also keeps the timer within setTimeout's range. */
export const MAX_DEMO_DURATION_SECONDS = 86_400;
/** Short lease so a dead leader is replaced quickly (production default is 60 s). */
export const DEFAULT_DEMO_LEASE_SECONDS = 2;
export const DEFAULT_CHAOS_EVERY_SECONDS = 4;
export const DEFAULT_DEMO_NS = 'demo';
/** Simulated duration of one leader-only job before its ledger entry commits. */
export const DEFAULT_DEMO_WORK_MS = 300;
/** Pause between two jobs of the leader. */
export const DEFAULT_DEMO_GAP_MS = 150;
/** A SIGKILLed worker is replaced by a fresh process (new candidate id) after this delay. */
export const RESPAWN_DELAY_MS = 1000;
/** A SIGSTOPped leader is continued this long after its lease ran out, so the others take over first. */
export const PAUSE_BEYOND_LEASE_MS = 1000;
/** How often the supervisor reads the leader row (for lease left and the leaderless time). */
export const POLL_MS = 100;

export interface DemoOptions {
  url?: string;
  workers: number;
  duration: number;
  lease: number;
  chaos?: boolean;
  chaosEvery: number;
  ns: string;
  workMs: number;
  gapMs: number;
  unfenced?: boolean;
  json?: boolean;
  plain?: boolean;
  /** Keep the demo tables and this run's rows (dropped by default). */
  keep?: boolean;
  /** Serve the workers' election metrics on http://127.0.0.1:<port>/metrics (0: any free port). */
  metricsPort?: number;
  /** Serve the dashboard on 127.0.0.1: `true` on {@link DEFAULT_DASHBOARD_PORT} (any free port if taken), a number on that port (0: any free one). */
  dashboard?: boolean | number;
}

/** How long the demo runs with `--dashboard` unless `--duration` says otherwise: time to open the page and watch. */
export const DEFAULT_DEMO_DASHBOARD_DURATION_SECONDS = 600;
/** How often the demo's dashboard re-reads the database: failovers of a 2 s lease show at once, also without LISTEN. */
export const DEMO_DASHBOARD_POLL_MS = 250;
/** The timeline window the printed URL opens: the demo's last five minutes. */
export const DEMO_DASHBOARD_WINDOW_SECONDS = 300;

/** A scrape waits this long for each worker's metrics; a worker slower than that is left out. */
export const METRICS_WORKER_TIMEOUT_MS = 1000;
