import type { Command } from 'commander';
import * as fs from 'fs';
import type { DataSource, DataSourceOptions } from 'typeorm';
import { dialectOfType } from '../databases/registry';
import { allTargets, targetOfType } from '../databases/targets';
import { initDb } from '../db/init-db';
import { DEFAULT_DB_URL, optionsFromUrl, redactIn, redactUrl } from '../db/url';
import { CliError, oneLine } from './errors';
import { initHint } from './hint';

/** How long the CLI waits for a database server to accept a connection. */
export const DEFAULT_CONNECT_TIMEOUT_MS = 5000;

/** The database the CLI talks to: `--url`, else `GEMSTONE_DB_URL`, else the embedded SQLite file. */
export function resolveUrl(url: string | undefined): string {
  return url || process.env.GEMSTONE_DB_URL || DEFAULT_DB_URL;
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
    throw new CliError(`no database at ${redact(url)}: the file ${file} does not exist (run ${initHint(url, names)})`);
  }
  try {
    return await initDb(options, { createTables });
  } catch (error) {
    // A driver's message may repeat the URL or its password (pg: `Invalid URL`, with the input).
    throw new CliError(`cannot connect to ${redact(url)}: ${redactIn(oneLine(error), url)}`, { cause: error });
  }
}

/** Closes a DataSource, ignoring errors of a connection that is already broken. */
export async function disconnect(dataSource: DataSource | undefined): Promise<void> {
  if (dataSource?.isInitialized) await dataSource.destroy().catch(() => undefined);
}

/** Database errors that mean "the table is not there", on every supported database. */
export function isMissingTable(error: unknown): boolean {
  return allTargets().some((target) => target.isMissingTable(error));
}
