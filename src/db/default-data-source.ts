import type { DataSource } from 'typeorm';
import { NotInitializedError } from '../errors';
import { describeTarget } from './explain-error';

let shared: DataSource | undefined;

/** The code of the process warning emitted when `initDb` replaces a different, live default. */
export const DEFAULT_REPLACED_WARNING = 'GEMSTONE_DEFAULT_REPLACED';

/** The shared default DataSource: the one the latest `initDb` call returned. */
export function getDataSource(): DataSource {
  if (!shared) throw new NotInitializedError();
  return shared;
}

/**
 * @internal Set by `initDb`: the latest call wins (docs/api.md), but never silently. Replacing a
 * different default that is still initialized — whatever creates a service or loop without a
 * `dataSource` from now on talks to the new one — emits a process warning naming both
 * (passwords redacted). Replacing a destroyed default, or the same DataSource again, says nothing.
 */
export function replaceDefault(dataSource: DataSource): void {
  const previous = shared;
  shared = dataSource;
  if (previous === undefined || previous === dataSource || !previous.isInitialized) return;
  const [before, after] = [describeTarget(previous), describeTarget(dataSource)];
  const replaced = before === after ? `${before} by another DataSource on the same database` : `${before} by ${after}`;
  process.emitWarning(
    `initDb replaced the default DataSource ${replaced}: services and loops ` +
      'created without a `dataSource` option from now on use the new one. Pass `dataSource` explicitly when the ' +
      'application uses several databases.',
    { type: 'GemstoneWarning', code: DEFAULT_REPLACED_WARNING },
  );
}
