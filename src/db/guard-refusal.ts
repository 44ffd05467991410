import type { DataSource } from 'typeorm';
import { partsOf } from '../databases/parts';
import { NotLeaderError } from '../errors';
import { contextOf } from './context';

/**
 * The {@link NotLeaderError} a guarded table's refusal is, or `error` itself: a write the database
 * refused because its transaction had not proved the namespace's live leadership. `cause` is the
 * database's error.
 */
export function asGuardRefusal(dataSource: DataSource, error: unknown): unknown {
  const guards = partsOf(contextOf(dataSource)).guards;
  const refusal = guards?.refusal(error);
  if (!refusal) return error;
  const proved = refusal.provedBy === null ? 'this transaction proved no leadership of it' : `its proof (candidate ${refusal.provedBy}) is not of the live term`;
  const led =
    refusal.leaderId === undefined
      ? 'this database does not report the leader at the refusal'
      : refusal.leaderId === null
        ? 'no candidate holds an unexpired lease'
        : `${refusal.leaderId} leads under term ${refusal.term}`;
  return new NotLeaderError(
    {
      ns: refusal.ns,
      candidateId: refusal.provedBy ?? '(none proved)',
      leaderId: refusal.leaderId ?? null,
      term: refusal.term ?? null,
      detail: `the database refused a write to guarded table ${JSON.stringify(refusal.table)}: ${proved}; ${led}. Call assertLeader in the same transaction first`,
    },
    { cause: error },
  );
}
