import { Column, Entity, PrimaryColumn } from 'typeorm';

/**
 * A process competing for leadership of a namespace (table `gemstone_election_candidate`).
 *
 * `synchronize: false`: the table is created by `initDb` or the shipped migrations with
 * database-specific types, and an application's `synchronize: true` must never rewrite it.
 */
@Entity({ name: 'gemstone_election_candidate', synchronize: false })
export class ElectionCandidate {
  /** Namespace: an isolated election domain. */
  @PrimaryColumn({ name: 'ns', type: 'varchar', length: 255 })
  ns!: string;

  /** The candidate's UUID, lower-case. */
  @PrimaryColumn({ name: 'candidate_id', type: 'varchar', length: 36 })
  candidateId!: string;

  /** The database clock at the last register / heartbeat / elect. */
  @Column({ name: 'last_heartbeat_at', type: Date })
  lastHeartbeatAt!: Date;

  /** The candidate is inactive once `expires_at <= now`. */
  @Column({ name: 'expires_at', type: Date })
  expiresAt!: Date;

  /**
   * What the candidate says about itself (host, pid, address, version…): a JSON object of at
   * most 4 KiB, stored as JSON text; null when none was given (and on rows written by 0.1.0).
   */
  @Column({ name: 'metadata', type: 'text', nullable: true })
  metadata!: string | null;

  /** A leader hands over to a live eligible candidate of strictly higher priority. Default 0. */
  @Column({ name: 'priority', type: 'integer', default: 0 })
  priority!: number;

  /** False: the candidate registers and observes but never acquires the lease. Default true. */
  @Column({ name: 'eligible', type: 'boolean', default: true })
  eligible!: boolean;
}
