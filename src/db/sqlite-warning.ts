import type { DataSource } from 'typeorm';
import { targetOfType } from '../databases/targets';
import { describeTarget } from './explain-error';

/** The code of the process warning a loop emits when it starts on a SQLite DataSource. */
export const SQLITE_LOCAL_ELECTION_WARNING = 'GEMSTONE_SQLITE_LOCAL_ELECTION';

const warned = new WeakSet<DataSource>();

/**
 * @internal Called by `LeaderElector.start()` and `LeaderElectorGroup.start()`. A SQLite
 * election only includes the processes that open that same file on that machine: replicas in
 * other containers or hosts each elect a leader of their own. Said once per DataSource, as a
 * process warning (Node prints it on stderr; `process.on('warning')` sees it, and
 * `--no-warnings` silences it), so a fallback to SQLite by mistake is never silent.
 */
export function warnIfLocalElection(dataSource: DataSource): void {
  if (warned.has(dataSource) || targetOfType(dataSource.options.type)?.singleMachine !== true) return;
  warned.add(dataSource);
  process.emitWarning(
    `gemstone-utils elects on the embedded database ${describeTarget(dataSource)}: only processes on this machine that open ` +
      'this same file take part; replicas in other containers or hosts elect leaders of their own. Use PostgreSQL or ' +
      'MySQL/MariaDB (DATABASE_URL) when the processes run on more than one machine.',
    { type: 'GemstoneWarning', code: SQLITE_LOCAL_ELECTION_WARNING },
  );
}

/**
 * @internal For a caller that elects on one machine by design (the CLI demo's workers share one
 * file on purpose): no warning for `dataSource`.
 */
export function expectLocalElection(dataSource: DataSource): void {
  warned.add(dataSource);
}
