import { Command, InvalidArgumentError } from 'commander';
import type { DataSource } from 'typeorm';
import { checkNs } from '../../election/validate';
import { clock } from '../format';
import { connect, disconnect, resolveUrl } from '../target';
import { readStatus } from './query';
import { statusJson, statusTable } from './render';

/** Refresh period of `status --watch` without a value, in seconds. */
export const DEFAULT_WATCH_SECONDS = 2;

interface StatusOptions {
  url?: string;
  ns?: string;
  json?: boolean;
  watch?: number | true;
}

function positiveSeconds(value: string): number {
  const seconds = Number(value);
  if (!Number.isFinite(seconds) || seconds <= 0) throw new InvalidArgumentError('must be a number of seconds > 0');
  return seconds;
}

function namespace(value: string): string {
  try {
    return checkNs(value, '--ns');
  } catch (error) {
    throw new InvalidArgumentError((error as Error).message);
  }
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
  const dataSource = await connect(resolveUrl(options.url), { createTables: false });
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
  return new Command('status')
    .description('show the leader of each namespace: leader, term, lease left (database clock), active candidates')
    .option('-u, --url <url>', 'database URL (default: $GEMSTONE_DB_URL, else sqlite:gemstone.sqlite)')
    .option('-n, --ns <namespace>', 'only this namespace', namespace)
    .option('--json', 'print JSON: [{ ns, leaderId, term, leaseLeftMs, candidates }]')
    .option('-w, --watch [seconds]', `refresh until Ctrl-C (every ${DEFAULT_WATCH_SECONDS}s unless given)`, positiveSeconds)
    .action((options: StatusOptions) => status(options));
}
