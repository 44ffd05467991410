import { Command, InvalidArgumentError } from 'commander';
import type { DataSource } from 'typeorm';
import { DEFAULT_DASHBOARD_HOST, DEFAULT_DASHBOARD_PORT, serveDashboard } from '../../dashboard/server';
import { ElectionService } from '../../election/service';
import { DEFAULT_WATCH_POLL_MS, MAX_WATCH_POLL_MS } from '../../election/observe/watch';
import { CliError, oneLine } from '../errors';
import { connect, disconnect, isMissingTable, missingTablesError, redact, resolveUrl, withTableOptions } from '../target';

interface DashboardCommandOptions {
  url?: string;
  port: number;
  host: string;
  pollMs: number;
  schema?: string;
  entityPrefix?: string;
}

export function tcpPort(value: string): number {
  const n = Number(value);
  if (value.trim() === '' || !Number.isInteger(n) || n < 0 || n > 65_535) throw new InvalidArgumentError('must be a TCP port from 0 (any free one) to 65535');
  return n;
}

function pollMs(value: string): number {
  const ms = Number(value);
  if (!Number.isFinite(ms) || ms <= 0 || ms > MAX_WATCH_POLL_MS) throw new InvalidArgumentError(`must be a number of milliseconds > 0 and <= ${MAX_WATCH_POLL_MS}`);
  return ms;
}

/** One read of each election table, so that missing tables are reported at start, not on the page. */
async function checkTables(dataSource: DataSource): Promise<void> {
  const service = new ElectionService(dataSource);
  await service.getLeader({ ns: 'gemstone-election dashboard' });
  await service.getHistory({ ns: 'gemstone-election dashboard', limit: 1 });
}

/** A port in use or an address that is not this machine's, as one line. */
export function listenError(error: unknown, port: number, host: string): CliError {
  const code = (error as NodeJS.ErrnoException)?.code;
  if (code === 'EADDRINUSE') return new CliError(`port ${port} on ${host} is already in use (choose another with --port, or 0 for any free one)`, { cause: error });
  if (code === 'EADDRNOTAVAIL' || code === 'ENOTFOUND') return new CliError(`cannot listen on ${host}: not an address of this machine`, { cause: error });
  return new CliError(`cannot listen on ${host}:${port}: ${oneLine(error)}`, { cause: error });
}

/** Serves the dashboard until SIGINT/SIGTERM; then closes it and exits 0. */
async function dashboard(options: DashboardCommandOptions): Promise<void> {
  const url = resolveUrl(options.url);
  const names = { schema: options.schema, entityPrefix: options.entityPrefix };
  const dataSource = await connect(url, { createTables: false, ...names });
  try {
    try {
      await checkTables(dataSource);
    } catch (error) {
      if (!isMissingTable(error)) throw error;
      throw missingTablesError(url, names, error);
    }
    const server = await serveDashboard({
      dataSource,
      port: options.port,
      host: options.host,
      pollMs: options.pollMs,
      warn: (message) => process.stderr.write(`gemstone-election: warning: ${message}\n`),
      onError: (error) => process.stderr.write(`gemstone-election: dashboard: ${oneLine(error)}\n`),
    }).catch((error: unknown) => {
      throw listenError(error, options.port, options.host);
    });
    process.stdout.write(`dashboard of ${redact(url)}: ${server.url} (Ctrl-C to stop)\n`);
    await new Promise<void>((resolve) => {
      const stop = () => {
        process.off('SIGINT', stop).off('SIGTERM', stop);
        resolve();
      };
      process.on('SIGINT', stop).on('SIGTERM', stop);
    });
    await server.close();
  } finally {
    await disconnect(dataSource);
  }
}

/** `gemstone-election dashboard`. */
export function dashboardCommand(): Command {
  return withTableOptions(
    new Command('dashboard')
      .description(
        'serve a live, read-only dashboard in the browser: every namespace with its leader, lease and health, ' +
          'its candidates, and a timeline of its terms. Listens on 127.0.0.1 unless --host says otherwise (with a warning: it has no login).',
      )
      .option('-u, --url <url>', 'database URL (default: $GEMSTONE_DB_URL, else sqlite:gemstone.sqlite)')
      .option('-p, --port <port>', 'TCP port; 0 picks a free one', tcpPort, DEFAULT_DASHBOARD_PORT)
      .option('--host <address>', 'address to listen on (anything but loopback exposes every namespace and candidate metadata to whoever reaches it)', DEFAULT_DASHBOARD_HOST)
      .option('--poll-ms <ms>', 'how often live views re-read the database (on PostgreSQL a safety net behind LISTEN)', pollMs, DEFAULT_WATCH_POLL_MS),
  ).action((options: DashboardCommandOptions) => dashboard(options));
}
