import { Command, InvalidArgumentError } from 'commander';
import { DEFAULT_HISTORY_LIMIT, MAX_HISTORY_LIMIT } from '../../election/observe/history';
import { ElectionService } from '../../election/service';
import { DEFAULT_NS } from '../../election/validate';
import { namespace, URL_OPTION_HELP } from '../options';
import { onExistingTables, withTableOptions } from '../target';
import { historyJson, historyTable } from './render';

interface HistoryCommandOptions {
  url?: string;
  ns: string;
  json?: boolean;
  limit: number;
  before?: number;
  schema?: string;
  entityPrefix?: string;
}

function integer(min: number, max: number) {
  return (value: string): number => {
    const n = Number(value);
    if (!Number.isSafeInteger(n) || n < min || n > max) throw new InvalidArgumentError(`must be an integer from ${min} to ${max}`);
    return n;
  };
}

async function listHistory(options: HistoryCommandOptions): Promise<void> {
  await onExistingTables(options, 'the election history table is', async (dataSource) => {
    const query = { ns: options.ns, limit: options.limit, ...(options.before !== undefined ? { before: options.before } : {}) };
    const entries = await new ElectionService(dataSource).getHistory(query);
    process.stdout.write(`${options.json ? historyJson(entries) : historyTable(options.ns, entries)}\n`);
  });
}

/** `gemstone-election history`. */
export function historyCommand(): Command {
  return withTableOptions(
    new Command('history')
      .description('list the terms of a namespace, newest first: leader, acquired, ended, why it ended (database clock)')
      .option('-u, --url <url>', URL_OPTION_HELP)
      .option('-n, --ns <namespace>', 'the namespace', namespace, DEFAULT_NS)
      .option('--json', 'print JSON: [{ ns, term, leaderId, acquiredAt, endedAt, endReason }]')
      .option('-l, --limit <n>', `at most this many terms (1 to ${MAX_HISTORY_LIMIT})`, integer(1, MAX_HISTORY_LIMIT), DEFAULT_HISTORY_LIMIT)
      .option('--before <term>', 'only terms below this one (to page back)', integer(0, Number.MAX_SAFE_INTEGER)),
  ).action((options: HistoryCommandOptions) => listHistory(options));
}
