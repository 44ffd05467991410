import { Column, Entity, Index, PrimaryColumn, ValueTransformer } from 'typeorm';
import { RUN_INDEX, RUN_NS_INDEX } from '../src/election/tables';

/** BIGINT arrives as a string from pg and mysql2; terms stay far below 2^53. */
const bigintAsNumber: ValueTransformer = {
  to: (value: number | null | undefined) => value,
  from: (value: string | number | null) => (value === null ? null : Number(value)),
};

/**
 * One slot of one schedule per row (table `gemstone_election_run`): which leader claimed it under
 * which term, how often, and how it ended. Written only by the library, fenced by the leader row.
 *
 * `synchronize: false`: the table is created by `initDb` or the shipped migrations with
 * database-specific types, and an application's `synchronize: true` must never rewrite it.
 */
@Entity({ name: 'gemstone_election_run', synchronize: false })
// Both with `slot` descending in the DDL (TypeORM's @Index has no column order).
@Index(RUN_INDEX, ['slot', 'ns', 'name', 'finishedAt'])
@Index(RUN_NS_INDEX, ['ns', 'slot', 'name'])
export class ElectionRun {
  /** Namespace whose leader runs the schedule. */
  @PrimaryColumn({ name: 'ns', type: 'varchar', length: 255 })
  ns!: string;

  /** The schedule's name, unique per namespace (at most 100 characters). */
  @PrimaryColumn({ name: 'name', type: 'varchar', length: 100 })
  name!: string;

  /** When the slot comes due (millisecond precision). */
  @PrimaryColumn({ name: 'slot', type: Date })
  slot!: Date;

  /** `running`, `done`, `failed`, `abandoned`, `missed` or `skipped`. */
  @Column({ name: 'state', type: 'varchar', length: 16 })
  state!: string;

  /** 1 for the first run of the slot, + 1 for each re-claim after a lost leader; 0 when recorded without a run. */
  @Column({ name: 'attempt', type: 'int' })
  attempt!: number;

  /** The term it was last claimed or recorded under. */
  @Column({ name: 'term', type: 'bigint', transformer: bigintAsNumber })
  term!: number;

  /** UUID of the leader that last claimed or recorded it, lower-case. */
  @Column({ name: 'candidate_id', type: 'varchar', length: 36 })
  candidateId!: string;

  /** The database clock at the last claim; null when never claimed. */
  @Column({ name: 'started_at', type: Date, nullable: true })
  startedAt!: Date | null;

  /** The database clock when it reached a final state; null while running. */
  @Column({ name: 'finished_at', type: Date, nullable: true })
  finishedAt!: Date | null;

  /** The error message of a failed run, cut to 2000 characters; null otherwise. */
  @Column({ name: 'error', type: 'text', nullable: true })
  error!: string | null;
}
