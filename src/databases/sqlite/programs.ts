import type { DataSource } from 'typeorm';
import type { DbContext } from '../../db/context';
import type { SqlFragment } from '../../db/sql';
import { activeCandidatesStatement, toActiveCandidates } from '../../election/statements/candidate-rows';
import { isLeaderStatement } from '../../election/statements/leader-row';
import type { LeaderRow } from '../../election/rows';
import type { CandidateFields } from '../../election/validate';
import type { ElectionPrograms, ProgramsPart } from '../contract/programs';
import type { SharedStore } from '../contract/store';
import { isBetterSqlite } from './driver';
import { electProgram } from './programs/elect-program';
import { compileElect, electSync } from './programs/elect-sync';
import { programContext, read, readLeader, toRow, write } from './programs/program-context';
import { resignProgram, unregisterProgram } from './programs/resign';
import { runSyncStep } from './sync-step';

/**
 * The election's calls without `session` on SQLite, each ONE program run by `runProgram` (see
 * `run-program.ts`) as one transaction that commits whole or changes nothing. Same protocol as the
 * general path in `election/service.ts`. elect has one program per driver: on sqlite3 one `exec`
 * decided by the SQL (`programs/elect-program.ts`), on better-sqlite3 one synchronous step decided
 * in JavaScript under the write lock (`programs/elect-sync.ts`); resign and unregister are in
 * `programs/resign.ts`; the reads are the general path's statements, run as programs.
 */
export function createSqlitePrograms(context: DbContext, dataSource: DataSource, waitMs: () => number | undefined, store: SharedStore): ElectionPrograms {
  const pc = programContext(context, dataSource, waitMs, store);
  const compiled = compileElect(pc);
  return {
    async elect(ns: string, id: string, expire: number, fields: CandidateFields = {}) {
      const decision = isBetterSqlite(dataSource)
        ? await runSyncStep(dataSource, (step) => electSync(pc, compiled, step, ns, id, expire, fields), { transaction: true, waitMs: waitMs() })
        : await electProgram(pc, ns, id, expire, fields);
      return { ns, ...decision };
    },

    async touch(ns: string, id: string, expire: number, fields: CandidateFields = {}): Promise<void> {
      await write(pc, [store.candidateUpsert(ns, id, expire, fields)]);
    },

    resign: (ns, id, reason) => resignProgram(pc, ns, id, reason),

    unregister: (ns, id) => unregisterProgram(pc, ns, id),

    /** One read-only statement outside any transaction on the shared connection. */
    readRows(statement: SqlFragment): Promise<Record<string, unknown>[]> {
      return read(pc, statement);
    },

    async readLeader(ns: string): Promise<LeaderRow | undefined> {
      return toRow(pc, await read(pc, readLeader(pc, ns)));
    },

    async isLeader(ns: string, id: string): Promise<boolean> {
      const rows = await read(pc, isLeaderStatement(pc.t, ns, id));
      return rows.length > 0;
    },

    async activeCandidates(ns: string): Promise<string[]> {
      return toActiveCandidates(await read(pc, activeCandidatesStatement(pc.t, ns)));
    },

    async candidateRows(ns: string) {
      return store.toCandidateRows(await read(pc, store.candidateRowsStatement(ns)));
    },
  };
}

export type SqlitePrograms = ReturnType<typeof createSqlitePrograms>;

/**
 * The `programs` part: every call without a transaction of the caller's runs as one program on
 * the shared connection, never nested in another transaction nor hosting one.
 */
export const sqlitePrograms: ProgramsPart = { create: createSqlitePrograms };
