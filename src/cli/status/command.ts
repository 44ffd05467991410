import { Command, InvalidArgumentError } from 'commander';
import type { DataSource } from 'typeorm';
import { clock } from '../format';
import { MissingTablesError } from '../errors';
import { namespace, URL_OPTION_HELP } from '../options';
import { connect, disconnect, missingTablesError, resolveUrl, withTableOptions } from '../target';
import { readStatus } from './query';
import { statusJson, statusTable } from './render';

/** Refresh period of `status --watch` without a value, in seconds. */
export const DEFAULT_WATCH_SECONDS = 2;

interface StatusOptions {
  url?: string;
  ns?: string;
  json?: boolean;
  watch?: number | true;
  schema?: string;
  entityPrefix?: string;
}

function positiveSeconds(value: string): number {
  const seconds = Number(value);
  if (!Number.isFinite(seconds) || seconds <= 0) throw new InvalidArgumentError('must be a number of seconds > 0');
  return seconds;
}

async function printOnce(dataSource: DataSource, options: StatusOptions, watching: boolean): Promise<void> {
  const rows = await readStatus(dataSource, options.ns);
  if (options.json) {
    process.stdout.write(`${statusJson(rows)}\n`);
    return;
  }
  const table = statusTable(rows);
  if (watching && process.stdout.isTTY) process.stdout.write('\x1b[H\x1b[2J');
  if (watching) process.stdout.write(`${clock()} (refreshing every ${options.watch === true ? DEFAULT_WATCH_SECONDS : options.watch}s, Ctrl-C to stop)\n`);
  process.stdout.write(`${table}\n`);
}

async function status(options: StatusOptions): Promise<void> {
  const url = resolveUrl(options.url);
  try {
    await watchStatus(url, options);
  } catch (error) {
    if (!(error instanceof MissingTablesError)) throw error;
    throw missingTablesError(url, { schema: options.schema, entityPrefix: options.entityPrefix }, error);
  }
}

async function watchStatus(url: string, options: StatusOptions): Promise<void> {
  const dataSource = await connect(url, { createTables: false, schema: options.schema, entityPrefix: options.entityPrefix });
  try {
    if (options.watch === undefined) return await printOnce(dataSource, options, false);
    const periodMs = (options.watch === true ? DEFAULT_WATCH_SECONDS : options.watch) * 1000;
    let stopped = false;
    const stop = () => {
      stopped = true;
    };
    process.once('SIGINT', stop).once('SIGTERM', stop);
    while (!stopped) {
      await printOnce(dataSource, options, true);
      const until = Date.now() + periodMs;
      while (!stopped && Date.now() < until) await new Promise((resolve) => setTimeout(resolve, Math.min(100, until - Date.now())));
    }
  } finally {
    await disconnect(dataSource);
  }
}

/** `gemstone-election status`. */
export function statusCommand(): Command {
  return withTableOptions(
    new Command('status')
      .description('show the leader of each namespace (leader, term, lease left by the database clock) and its active candidates (role, priority, eligibility, host, pid, metadata)')
      .option('-u, --url <url>', URL_OPTION_HELP)
      .option('-n, --ns <namespace>', 'only this namespace', namespace)
      .option('--json', 'print JSON: [{ ns, leaderId, term, leaseLeftMs, candidates, candidateDetails }]')
      .option('-w, --watch [seconds]', `refresh until Ctrl-C (every ${DEFAULT_WATCH_SECONDS}s unless given)`, positiveSeconds),
  ).action((options: StatusOptions) => status(options));
}
