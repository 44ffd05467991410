import pc from 'picocolors';
import type { LeaderChange } from '../../election/observe/watch';

/** One change as a log line: the instant it happened (database clock, UTC), the namespace, the state. */
export function changeLine(change: LeaderChange): string {
  const at = change.at.toISOString();
  const ns = JSON.stringify(change.ns);
  if (change.leaderId !== null) {
    const metadata = change.metadata ? ` ${pc.dim(JSON.stringify(change.metadata))}` : '';
    return `${at} ${ns} leader ${pc.green(change.leaderId)} term ${change.term}${metadata}`;
  }
  if (change.term === null) return `${at} ${ns} ${pc.yellow('no leader')} (never elected)`;
  return `${at} ${ns} ${pc.yellow('no leader')} (term ${change.term} ended)`;
}

/** One change as a JSON line: the documented machine-readable form. */
export function changeJson(change: LeaderChange): string {
  return JSON.stringify({ ns: change.ns, leaderId: change.leaderId, term: change.term, metadata: change.metadata, at: change.at.toISOString() });
}
