import { Column, Entity, Index, PrimaryColumn, ValueTransformer } from 'typeorm';
import { HISTORY_INDEX } from '../src/election/tables';

/** BIGINT arrives as a string from pg and mysql2; terms stay far below 2^53. */
const bigintAsNumber: ValueTransformer = {
  to: (value: number | null | undefined) => value,
  from: (value: string | number | null) => (value === null ? null : Number(value)),
};

/**
 * Why a term ended, as `end_reason` stores it: its holder resigned, unregistered or handed over
 * to a preferred candidate, the lease ran out, or it was an operator's (`runAsOperator`).
 */
export const HISTORY_END_REASONS = Object.freeze(['resigned', 'unregistered', 'expired', 'handed-over', 'operator'] as const);
/** Why a term ended, as `end_reason` stores it (see {@link HISTORY_END_REASONS}). */
export type HistoryEndReason = (typeof HISTORY_END_REASONS)[number];

/**
 * One leadership per row (table `gemstone_election_history`): the term, who held it, when it was
 * acquired and when and why it ended (`ended_at` and `end_reason` are null while it is current).
 *
 * `synchronize: false`: the table is created by `initDb` or the shipped migrations with
 * database-specific types, and an application's `synchronize: true` must never rewrite it.
 */
@Entity({ name: 'gemstone_election_history', synchronize: false })
@Index(HISTORY_INDEX, ['endedAt'])
export class ElectionHistory {
  /** Namespace: an isolated election domain. */
  @PrimaryColumn({ name: 'ns', type: 'varchar', length: 255 })
  ns!: string;

  /** The term of this leadership (the leader row's `term` when it was acquired). */
  @PrimaryColumn({ name: 'term', type: 'bigint', transformer: bigintAsNumber })
  term!: number;

  /** UUID of the candidate that held the lease, lower-case. */
  @Column({ name: 'leader_id', type: 'varchar', length: 36 })
  leaderId!: string;

  /** The database clock when the lease was acquired. */
  @Column({ name: 'acquired_at', type: Date })
  acquiredAt!: Date;

  /** The database clock when the leadership ended; null while it is current. */
  @Column({ name: 'ended_at', type: Date, nullable: true })
  endedAt!: Date | null;

  /** `resigned`, `unregistered`, `expired` or `handed-over`; null while current. */
  @Column({ name: 'end_reason', type: 'varchar', length: 16, nullable: true })
  endReason!: HistoryEndReason | null;
}
