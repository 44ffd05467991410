import { Command, InvalidArgumentError } from 'commander';
import { ElectionService } from '../../election/service';
import { DEFAULT_NS } from '../../election/validate';
import { DEFAULT_WATCH_POLL_MS, MAX_WATCH_POLL_MS } from '../../election/observe/watch';
import { oneLine } from '../errors';
import { namespace } from '../options';
import { connect, disconnect, isMissingTable, missingTablesError, resolveUrl, withTableOptions } from '../target';
import { LineOutput } from './output';
import { changeJson, changeLine } from './render';

interface WatchCommandOptions {
  url?: string;
  ns: string;
  json?: boolean;
  pollMs: number;
  schema?: string;
  entityPrefix?: string;
}

function pollMs(value: string): number {
  const ms = Number(value);
  if (!Number.isFinite(ms) || ms <= 0 || ms > MAX_WATCH_POLL_MS) throw new InvalidArgumentError(`must be a number of milliseconds > 0 and <= ${MAX_WATCH_POLL_MS}`);
  return ms;
}

/** Streams the changes of one namespace until SIGINT/SIGTERM; then exits 0. */
async function streamChanges(options: WatchCommandOptions): Promise<void> {
  const url = resolveUrl(options.url);
  const names = { schema: options.schema, entityPrefix: options.entityPrefix };
  const dataSource = await connect(url, { createTables: false, ...names });
  const controller = new AbortController();
  const stop = () => controller.abort();
  // A reader that went away (`watch | head -1`) ends the watch like Ctrl-C does.
  const output = new LineOutput(process.stdout, stop, (error) => process.stderr.write(`gemstone-election: stdout: ${oneLine(error)}\n`));
  process.once('SIGINT', stop).once('SIGTERM', stop);
  try {
    const changes = new ElectionService(dataSource).watch({
      ns: options.ns,
      pollMs: options.pollMs,
      signal: controller.signal,
      onError: (error) => {
        // No table will appear by waiting: say how to create it and stop.
        if (isMissingTable(error)) {
          throw missingTablesError(url, names, error);
        }
        process.stderr.write(`gemstone-election: ${oneLine(error)} (retrying)\n`);
      },
    });
    for await (const change of changes) await output.write(options.json ? changeJson(change) : changeLine(change));
  } finally {
    process.off('SIGINT', stop).off('SIGTERM', stop);
    await disconnect(dataSource);
  }
}

/** `gemstone-election watch`. */
export function watchCommand(): Command {
  return withTableOptions(
    new Command('watch')
      .description('stream the leadership of a namespace: the current state, then one line per change, until Ctrl-C')
      .option('-u, --url <url>', 'database URL (default: $GEMSTONE_DB_URL, else sqlite:gemstone.sqlite)')
      .option('-n, --ns <namespace>', 'the namespace to watch', namespace, DEFAULT_NS)
      .option('--json', 'print JSON lines: { ns, leaderId, term, metadata, at }')
      .option('--poll-ms <ms>', `how often the leader row is read (on PostgreSQL a safety net behind LISTEN)`, pollMs, DEFAULT_WATCH_POLL_MS),
  ).action((options: WatchCommandOptions) => streamChanges(options));
}
