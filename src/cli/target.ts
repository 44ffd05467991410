import type { Command } from 'commander';
import * as fs from 'fs';
import type { DataSource, DataSourceOptions } from 'typeorm';
import { dialectOfType } from '../databases/registry';
import { allTargets, targetOfType } from '../databases/targets';
import { initDb } from '../db/init-db';
import { DEFAULT_DB_URL, optionsFromUrl, redactIn, redactUrl } from '../db/url';
import { CliError, oneLine } from './errors';
import { initHint, TableNames } from './hint';
import { DATABASE_URL_VARIABLES, urlFromEnvironment } from '../db/env-url';
import { DatabaseSetupError, TablesMissingError } from '../errors';

/** How long the CLI waits for a database server to accept a connection. */
export const DEFAULT_CONNECT_TIMEOUT_MS = 5000;

/**
 * The database the CLI talks to: `--url`, else the environment (`GEMSTONE_DB_URL`, else
 * `DATABASE_URL`: see `DATABASE_URL_VARIABLES`), else the embedded SQLite file.
 */
export function resolveUrl(url: string | undefined): string {
  if (url !== undefined) {
    if (url.trim() === '') throw new CliError('--url is empty: pass the database URL (e.g. postgres://user@host:5432/app)');
    return url;
  }
  return urlFromEnvironment()?.url ?? DEFAULT_DB_URL;
}

/** Whether `url` is the embedded default the CLI fell back to (no `--url`, no variable set). */
function isFallback(url: string): boolean {
  return url === DEFAULT_DB_URL && urlFromEnvironment() === undefined;
}

/**
 * How to name the application's database, for a command that fell back to the embedded file: both
 * variables, and a URL of every database the package supports (the CLI cannot know which one the
 * application uses, and must not suggest creating a SQLite file to a PostgreSQL user).
 */
function urlAdvice(): string {
  const examples = allTargets().map((target) => target.example);
  const listed = `${examples.slice(0, -1).join(', ')} or ${examples[examples.length - 1]}`;
  const [specific, general] = DATABASE_URL_VARIABLES;
  return `pass --url with your application's database URL (${listed}), or set ${general} to it (or ${specific}, which wins over ${general})`;
}

/** What to run when a command found no database at `url` (the app's database when it fell back). */
function noDatabaseHint(url: string, file: string, names: TableNames): string {
  if (!isFallback(url)) return `no database at ${redact(url)}: the file ${file} does not exist (run ${initHint(url, names)})`;
  return `no database given: ${urlAdvice()}; without them the CLI opens ${DEFAULT_DB_URL}, and ${file} does not exist here`;
}

/**
 * The election tables (`what`) are missing at `url`: the `init` command for that database, or,
 * when the CLI fell back to the embedded file, how to name the application's database instead.
 */
export function missingTablesError(url: string, names: TableNames, cause: unknown, what = 'the election tables are'): CliError {
  const message = isFallback(url)
    ? `${what} missing in ${DEFAULT_DB_URL}, the file the CLI opens when no database is given: ${urlAdvice()}`
    : `${what} missing in ${redact(url)} (run ${initHint(url, names)})`;
  return new CliError(message, { cause });
}

/**
 * What `init` adds when it fell back to the embedded file: it did create the tables there, which is
 * what a demo wants and rarely what an application does.
 */
export function fallbackNote(url: string): string | undefined {
  if (!isFallback(url)) return undefined;
  return `note: no database given, so this initialized the embedded file ${DEFAULT_DB_URL} in ${process.cwd()}; for your application's database, ${urlAdvice()}`;
}

/** The URL without its password, for messages; the user name stays. */
export function redact(url: string): string {
  return redactUrl(url);
}

/** DataSourceOptions for a URL, with connect timeouts so an unreachable server fails fast. */
export function cliOptions(url: string): DataSourceOptions {
  let options: DataSourceOptions;
  try {
    options = optionsFromUrl(url, '--url');
  } catch (error) {
    throw new CliError(`bad database URL: ${redactIn(oneLine(error), url)}`, { cause: error });
  }
  return targetOfType(options.type)?.withConnectTimeout(options, DEFAULT_CONNECT_TIMEOUT_MS) ?? options;
}

/** The database file the options open (a file database, not in memory); else undefined. */
function databaseFile(options: DataSourceOptions): string | undefined {
  return targetOfType(options.type)?.file(options);
}

export interface ConnectOptions {
  /** Create the election tables if missing (`init`, `demo`); `status` only reads. */
  readonly createTables: boolean;
  /** `--schema`: the PostgreSQL schema of the tables (the DataSource's `schema` option). */
  readonly schema?: string;
  /** `--entity-prefix`: the DataSource's `entityPrefix` option. */
  readonly entityPrefix?: string;
}

/** What `--schema` and `--entity-prefix` add to the DataSource options. */
export function tableOptions(options: DataSourceOptions, { schema, entityPrefix }: Pick<ConnectOptions, 'schema' | 'entityPrefix'>): DataSourceOptions {
  // Only a database with named schemas (PostgreSQL) takes one.
  if (schema !== undefined && dialectOfType(options.type)?.schemas !== true) {
    throw new CliError(`--schema is for PostgreSQL only (the URL is a ${String(options.type)} database)`);
  }
  return {
    ...options,
    ...(schema !== undefined ? { schema } : {}),
    ...(entityPrefix !== undefined ? { entityPrefix } : {}),
  } as DataSourceOptions;
}

/** Adds `--schema` and `--entity-prefix` to a command that connects. */
export function withTableOptions(command: Command): Command {
  return command
    .option('--schema <name>', 'PostgreSQL schema of the election tables (the DataSource option `schema`)')
    .option('--entity-prefix <prefix>', 'table name prefix (the DataSource option `entityPrefix`)');
}

/**
 * Connects through `initDb` and turns connection failures into one-line {@link CliError}s.
 * A SQLite file that does not exist is refused unless tables are to be created: opening it
 * would silently create an empty database where the operator mistyped a path.
 */
export async function connect(url: string, { createTables, ...names }: ConnectOptions): Promise<DataSource> {
  const options = tableOptions(cliOptions(url), names);
  const file = databaseFile(options);
  if (file !== undefined && !createTables && !fs.existsSync(file)) {
    throw new CliError(noDatabaseHint(url, file, names));
  }
  try {
    return await initDb(options, { createTables });
  } catch (error) {
    // The library's setup errors say what to do; the CLI names the URL as the operator gave it. A
    // driver's message may repeat the URL or its password (pg: `Invalid URL`, with the input).
    const reason = error instanceof DatabaseSetupError ? error.detail : oneLine(error);
    throw new CliError(`cannot connect to ${redact(url)}: ${redactIn(reason, url)}`, { cause: error });
  }
}

/** Closes a DataSource, ignoring errors of a connection that is already broken. */
export async function disconnect(dataSource: DataSource | undefined): Promise<void> {
  if (dataSource?.isInitialized) await dataSource.destroy().catch(() => undefined);
}

/** Database errors that mean "the table is not there", on every supported database. */
export function isMissingTable(error: unknown): boolean {
  return error instanceof TablesMissingError || allTargets().some((target) => target.isMissingTable(error));
}

/**
 * Connects to the tables `options` name (never creating them), runs `work` and disconnects; a
 * missing table is reported as `what` missing, with the command that creates it.
 */
export async function onExistingTables<T>(
  options: { url?: string; schema?: string; entityPrefix?: string },
  what: string,
  work: (dataSource: DataSource) => Promise<T>,
): Promise<T> {
  const url = resolveUrl(options.url);
  const names = { schema: options.schema, entityPrefix: options.entityPrefix };
  const dataSource = await connect(url, { createTables: false, ...names });
  try {
    return await work(dataSource);
  } catch (error) {
    if (!isMissingTable(error)) throw error;
    throw missingTablesError(url, names, error, what);
  } finally {
    await disconnect(dataSource);
  }
}
