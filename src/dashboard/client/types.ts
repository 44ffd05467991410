/** The JSON the dashboard's endpoints answer (see src/dashboard/queries). Instants are epoch ms by the database clock. */

export type Metadata = Readonly<Record<string, unknown>>;

export interface NamespaceSummary {
  ns: string;
  leaderId: string | null;
  term: number | null;
  live: boolean;
  leaseExpiresAt: number | null;
  leaseLeftMs: number | null;
  leaseMs: number | null;
  candidates: number;
  recentTerms: number;
  vacant: boolean;
  expiring: boolean;
  flapping: boolean;
  leaderMetadata: Metadata | null;
}

/** How the server judges flapping: `flapTerms` terms ended within `flapWindowSeconds`. */
export interface HealthSettings {
  flapWindowSeconds: number;
  flapTerms: number;
}

export interface Overview extends HealthSettings {
  dbNow: number;
  total: number;
  vacant: number;
  flapping: number;
  offset: number;
  limit: number;
  rows: NamespaceSummary[];
}

export interface CandidateView {
  candidateId: string;
  leader: boolean;
  lastHeartbeatAt: number | null;
  heartbeatAgeMs: number | null;
  expiresAt: number | null;
  expiresInMs: number | null;
  priority: number;
  eligible: boolean;
  metadata: Metadata | null;
}

export interface NamespaceDetail extends HealthSettings {
  ns: string;
  dbNow: number;
  summary: NamespaceSummary | null;
  candidates: CandidateView[];
  candidatesTruncated: boolean;
}

export interface TermView {
  ns: string;
  term: number;
  leaderId: string;
  acquiredAt: number | null;
  endedAt: number | null;
  endReason: string | null;
  metadata: Metadata | null;
}

export interface Timeline {
  dbNow: number;
  since: number;
  terms: TermView[];
  truncated: boolean;
}

/** `leader` events of a namespace's stream. */
export interface LeaderEvent {
  ns: string;
  leaderId: string | null;
  term: number | null;
  metadata: Metadata | null;
  at: number;
}


/** A recorded run of a schedule (`/api/namespace/schedules`); instants are epoch ms by the database clock. */
export interface RunView {
  slot: number | null;
  state: string;
  attempt: number;
  term: number;
  candidateId: string;
  startedAt: number | null;
  finishedAt: number | null;
  error: string | null;
}

export interface NamespaceSchedules {
  ns: string;
  /** False when the application's DataSource or database is not set up for schedules; `reason` says what to do. */
  enabled: boolean;
  reason: string | null;
  /** `hosted`: a loop given to the dashboard runs it, and `nextSlot` (epoch ms, null: no further slot) comes from it. */
  schedules: { name: string; hosted: boolean; nextSlot: number | null; runs: RunView[] }[];
  truncated: boolean;
}
