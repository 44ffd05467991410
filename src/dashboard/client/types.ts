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

