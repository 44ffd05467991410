/** What the demo supervisor and its worker processes tell each other (over the fork IPC channel). */

/** Passed to a worker as its single argument (JSON). */
export interface WorkerConfig {
  /** Display name, e.g. `worker-2`. */
  name: string;
  url: string;
  ns: string;
  runId: string;
  candidateId: string;
  expireSeconds: number;
  /** Simulated duration of one leader-only job, before its ledger entry is committed. */
  workMs: number;
  /** Pause between jobs. */
  gapMs: number;
  /** Skip `assertLeader` before ledger writes (to show what fencing prevents). */
  unfenced: boolean;
  /** Keep election metrics (prom-client) and answer the supervisor's `metrics-request`s. */
  metrics: boolean;
}

/** Supervisor → worker. */
export type SupervisorMessage = { kind: 'metrics-request'; requestId: number };

/** Worker → supervisor. */
export type WorkerMessage =
  | { kind: 'ready'; candidateId: string }
  | { kind: 'elected'; term: number }
  | { kind: 'demoted'; term: number; reason: string }
  | { kind: 'leader'; leaderId: string | null; term: number | null }
  | { kind: 'working'; term: number }
  | { kind: 'wrote'; term: number; entryId: number }
  | { kind: 'fenced'; term: number; currentTerm: number | null; leaderId: string | null }
  | { kind: 'error'; message: string }
  | { kind: 'stopped' }
  /** The worker's prom-client `registry.getMetricsAsJSON()`, answering a `metrics-request`. */
  | { kind: 'metrics'; requestId: number; metrics: object[] };
