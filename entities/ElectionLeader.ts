import { Column, Entity, PrimaryColumn, ValueTransformer } from 'typeorm';

/** BIGINT arrives as a string from pg and mysql2; terms stay far below 2^53. */
const bigintAsNumber: ValueTransformer = {
  to: (value: number | null | undefined) => value,
  from: (value: string | number | null) => (value === null ? null : Number(value)),
};

/**
 * The lease of a namespace (table `gemstone_election_leader`).
 *
 * `synchronize: false`: the table is created by `initDb` or the shipped migrations with
 * database-specific types, and an application's `synchronize: true` must never rewrite it.
 */
@Entity({ name: 'gemstone_election_leader', synchronize: false })
export class ElectionLeader {
  /** Namespace: an isolated election domain. */
  @PrimaryColumn({ name: 'ns', type: 'varchar', length: 255 })
  ns!: string;

  /** UUID of the current leader; null when vacant. */
  @Column({ name: 'leader_id', type: 'varchar', length: 36, nullable: true })
  leaderId!: string | null;

  /** End of the lease; null when vacant. */
  @Column({ name: 'lease_expires_at', type: Date, nullable: true })
  leaseExpiresAt!: Date | null;

  /** The database clock at the last change of this row. */
  @Column({ name: 'updated_at', type: Date })
  updatedAt!: Date;

  /** Fencing token: +1 each time a candidate acquires a lease it did not already hold unexpired. */
  @Column({ name: 'term', type: 'bigint', default: 0, transformer: bigintAsNumber })
  term!: number;
}
