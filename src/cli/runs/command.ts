import { Command, InvalidArgumentError } from 'commander';
import { ElectionService } from '../../election/service';
import { checkScheduleName, DEFAULT_RUNS_LIMIT, MAX_RUNS_LIMIT } from '../../schedules/validate';
import { namespace, URL_OPTION_HELP } from '../options';
import { onExistingTables, withTableOptions } from '../target';
import { runsJson, runsTable } from './render';

interface RunsCommandOptions {
  url?: string;
  ns?: string;
  name?: string;
  json?: boolean;
  limit: number;
  before?: Date;
  schema?: string;
  entityPrefix?: string;
}

function limit(value: string): number {
  const n = Number(value);
  if (!/^\d+$/.test(value) || !Number.isSafeInteger(n) || n < 1 || n > MAX_RUNS_LIMIT) throw new InvalidArgumentError(`must be an integer from 1 to ${MAX_RUNS_LIMIT}`);
  return n;
}

/** `--before`: an ISO 8601 instant (a slot as the command prints it, e.g. from `--json`). */
function instant(value: string): Date {
  // Without a zone an instant would be read in the host's zone: slots are UTC everywhere else.
  if (!/^\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}(:\d{2}(\.\d+)?)?(Z|[+-]\d{2}:?\d{2})?$/i.test(value)) {
    throw new InvalidArgumentError('must be an ISO 8601 instant, e.g. 2026-11-23T10:00:00Z (UTC unless it says otherwise)');
  }
  const zoned = /(Z|[+-]\d{2}:?\d{2})$/i.test(value) ? value : `${value}Z`;
  const date = new Date(zoned.replace(' ', 'T'));
  // Date rolls a day past the month's end over (February 30 is March 2): refuse it instead.
  const [year, month, day] = value.slice(0, 10).split('-').map(Number) as [number, number, number];
  const daysInMonth = new Date(Date.UTC(year, month, 0)).getUTCDate();
  if (Number.isNaN(date.getTime()) || month < 1 || month > 12 || day < 1 || day > daysInMonth) throw new InvalidArgumentError('is not a valid date');
  return date;
}

function scheduleName(value: string): string {
  try {
    return checkScheduleName(value, '--name');
  } catch (error) {
    throw new InvalidArgumentError((error as Error).message);
  }
}

async function listRuns(options: RunsCommandOptions): Promise<void> {
  await onExistingTables(options, 'the schedule runs table is', async (dataSource) => {
    const query = {
      limit: options.limit,
      ...(options.ns !== undefined ? { ns: options.ns } : {}),
      ...(options.name !== undefined ? { name: options.name } : {}),
      ...(options.before !== undefined ? { before: options.before } : {}),
    };
    const runs = await new ElectionService(dataSource).getRuns(query);
    process.stdout.write(`${options.json ? runsJson(runs) : runsTable(runs)}\n`);
  });
}

/** `gemstone-election runs`. */
export function runsCommand(): Command {
  return withTableOptions(
    new Command('runs')
      .description("list the schedules' runs, newest slot first: state, attempt, term, leader, when (database clock), error")
      .option('-u, --url <url>', URL_OPTION_HELP)
      .option('-n, --ns <namespace>', 'only this namespace (default: every namespace)', namespace)
      .option('--name <schedule>', 'only this schedule (default: every schedule)', scheduleName)
      .option('--json', 'print JSON, errors whole: [{ ns, name, slot, state, attempt, term, candidateId, startedAt, finishedAt, error }]')
      .option('-l, --limit <n>', `at most this many runs (1 to ${MAX_RUNS_LIMIT})`, limit, DEFAULT_RUNS_LIMIT)
      .option('--before <instant>', 'only slots before this ISO 8601 instant (to page back, the last slot shown; runs of other schedules at that very slot are then skipped: page one schedule at a time with --ns and --name when slots coincide)', instant),
  ).action((options: RunsCommandOptions) => listRuns(options));
}
