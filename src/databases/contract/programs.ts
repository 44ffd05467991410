import type { DataSource } from 'typeorm';
import type { DbContext } from '../../db/context';
import type { SqlFragment } from '../../db/sql';
import type { CandidateRow, ElectDecision, LeaderRow } from '../../election/rows';
import type { CandidateFields } from '../../election/validate';
import type { StepDownReason } from '../../election/decision';
import type { SharedStore } from './store';

/*
 * The contract of a database whose calls without a transaction of the caller's run as ONE
 * program each (SQLite: one transaction on the shared connection, never nested in another nor
 * hosting one). `ElectionService` hands such a call to the program instead of its own path.
 */

/** The election's calls as programs, one each (see the folder's `programs.ts`). */
export interface ElectionPrograms {
  elect(ns: string, id: string, expire: number, fields?: CandidateFields): Promise<ElectDecision & { ns: string }>;
  touch(ns: string, id: string, expire: number, fields?: CandidateFields): Promise<void>;
  /** resign or hand over: true only if the caller held an unexpired lease. */
  resign(ns: string, id: string, reason: StepDownReason): Promise<boolean>;
  unregister(ns: string, id: string): Promise<void>;
  /** One read-only statement outside any transaction. */
  readRows(statement: SqlFragment): Promise<Record<string, unknown>[]>;
  readLeader(ns: string): Promise<LeaderRow | undefined>;
  isLeader(ns: string, id: string): Promise<boolean>;
  activeCandidates(ns: string): Promise<string[]>;
  candidateRows(ns: string): Promise<CandidateRow[]>;
}

/** The `programs` part: present only on a database that runs calls as programs. */
export interface ProgramsPart {
  /**
   * The programs of one DataSource. `waitMs`: how long a call waits for a transaction someone
   * else holds open on the shared connection (read at each call: the service's option).
   */
  create(context: DbContext, dataSource: DataSource, waitMs: () => number | undefined, store: SharedStore): ElectionPrograms;
}
