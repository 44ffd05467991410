import type { DataSourceOptions } from 'typeorm';

/**
 * One database as a target named by a URL (`optionsFromUrl`, the CLI's `--url`): the schemes it
 * answers to, the DataSourceOptions it makes of a URL, and what the CLI needs to know of those
 * options. Each database folder registers one (see `targets.ts`); `db/url.ts` and `cli/target.ts`
 * ask the registered targets instead of naming a database.
 */
export interface DatabaseTarget {
  /** The URL schemes, lower case, without the colon (`postgres`, `postgresql`). */
  readonly schemes: readonly string[];
  /** The TypeORM `type`s whose options this target describes. */
  readonly types: readonly string[];
  /** How the schemes are written in a message listing the accepted URLs (`postgres://`). */
  readonly shownAs: readonly string[];
  /** A URL of this database as advice shows it, with a placeholder password (`postgres://user:<password>@host:5432/app`). */
  readonly example: string;
  /**
   * Whether the database lives on the machine of the process (an embedded file): only processes
   * there can take part in an election on it. Default false.
   */
  readonly singleMachine?: boolean;
  /** DataSourceOptions for `url`, whose scheme is one of {@link DatabaseTarget.schemes}; `parameter` names it in errors. */
  optionsFromUrl(url: string, scheme: string, parameter: string): DataSourceOptions;
  /** `options` with a connect timeout (and the CLI's small pool), so an unreachable server fails fast. */
  withConnectTimeout(options: DataSourceOptions, timeoutMs: number): DataSourceOptions;
  /** The database file `options` open, when the database lives in a file (not in memory); else undefined. */
  file(options: DataSourceOptions): string | undefined;
  /** Whether `error` (as TypeORM throws it) means "the table is not there". */
  isMissingTable(error: unknown): boolean;
}
