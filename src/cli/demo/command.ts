import { randomUUID } from 'crypto';
import { Command, InvalidArgumentError } from 'commander';
import { DEFAULT_DASHBOARD_PORT } from '../../dashboard/server';
import { checkNs } from '../../election/validate';
import { CliError, oneLine } from '../errors';
import { connect, disconnect, redact, resolveUrl } from '../target';
import { readStatus } from '../status/query';
import { createDemoTables, LEDGER_TABLE, removeDemoTables, TERM_TABLE, verifyLedger } from './ledger';
import {
  DEFAULT_CHAOS_EVERY_SECONDS,
  DEFAULT_DEMO_DURATION_SECONDS,
  DEFAULT_DEMO_GAP_MS,
  DEFAULT_DEMO_LEASE_SECONDS,
  DEFAULT_DEMO_NS,
  DEFAULT_DEMO_WORK_MS,
  DEFAULT_DEMO_WORKERS,
  DEFAULT_DEMO_DASHBOARD_DURATION_SECONDS,
  DemoOptions,
  MAX_DEMO_DURATION_SECONDS,
  METRICS_WORKER_TIMEOUT_MS,
} from './options';
import { URL_OPTION_HELP } from '../options';
import { MetricsServer, serveDemoMetrics } from './metrics-server';
import { DashboardServer, serveDemoDashboard } from './dashboard';
import { buildSummary, summaryText } from './summary';
import { Supervisor } from './supervisor';
import { DemoOutput, LiveView, PlainLog } from './view';

/** Exit code when the ledger shows a stale write although fencing was on. */
const EXIT_STALE_WRITE = 1;

/**
 * Signals that end the demo gracefully (workers hand over, summary, demo tables removed), with
 * the shell's exit code for each: 128 + the signal number.
 */
export const DEMO_STOP_SIGNALS = { SIGHUP: 129, SIGINT: 130, SIGTERM: 143 } as const;
type StopSignal = keyof typeof DEMO_STOP_SIGNALS;

/** A closed terminal (after SIGHUP) or reader fails writes: the run must still end cleanly. */
function ignoreWriteErrors(stream: NodeJS.WriteStream): () => void {
  const ignore = () => undefined;
  stream.on('error', ignore);
  return () => stream.off('error', ignore);
}

function number(check: (n: number) => boolean, what: string) {
  return (value: string): number => {
    const n = Number(value);
    if (value.trim() === '' || !check(n)) throw new InvalidArgumentError(`must be ${what}`);
    return n;
  };
}
const positiveInt = (max: number) => number((n) => Number.isInteger(n) && n >= 1 && n <= max, `an integer from 1 to ${max}`);
const seconds = (max: number) => number((n) => Number.isFinite(n) && n > 0 && n <= max, `a number of seconds > 0 and <= ${max}`);
const millis = number((n) => Number.isInteger(n) && n >= 0, 'a whole number of milliseconds >= 0');
const port = number((n) => Number.isInteger(n) && n >= 0 && n <= 65_535, 'a TCP port from 0 (any free one) to 65535');

function namespace(value: string): string {
  try {
    return checkNs(value, '--ns');
  } catch (error) {
    throw new InvalidArgumentError((error as Error).message);
  }
}

async function demo(options: DemoOptions): Promise<void> {
  const url = resolveUrl(options.url);
  if (/^sqlite::memory:/i.test(url)) {
    throw new CliError('the demo needs a database its worker processes share: sqlite::memory: is private to one process (use a file, e.g. sqlite:demo.sqlite)');
  }
  const dataSource = await connect(url, { createTables: true });
  const restoreStreams = [ignoreWriteErrors(process.stdout), ignoreWriteErrors(process.stderr)];
  let stopSignal: StopSignal | undefined;
  let supervisor: Supervisor | undefined;
  let output: DemoOutput | undefined;
  let metricsServer: MetricsServer | undefined;
  let dashboardServer: DashboardServer | undefined;
  // Installed for the whole run, the summary and the clean-up: a signal never cuts them short.
  const onSignal = (signal: StopSignal) => {
    if (stopSignal === undefined) {
      stopSignal = signal;
      output?.event({ at: new Date(), text: `interrupted: stopping (${signal}; a second signal kills the workers at once)`, tone: 'warn' });
      supervisor?.requestStop();
    } else {
      supervisor?.killAll();
    }
  };
  const signals = Object.keys(DEMO_STOP_SIGNALS) as StopSignal[];
  for (const signal of signals) process.on(signal, onSignal);
  // A parent that went away without a signal reaching us (an `npm run demo` wrapper killed with
  // SIGKILL) leaves us reparented: stop as if the terminal had closed, instead of running orphaned.
  const parentAtStart = process.ppid;
  const parentWatch = setInterval(() => {
    if (process.ppid !== parentAtStart && stopSignal === undefined) onSignal('SIGHUP');
  }, 500);
  parentWatch.unref();
  const runId = randomUUID();
  let tablesCreated = false;
  try {
    await createDemoTables(dataSource);
    tablesCreated = true;
    // Before any output or worker: a port in use ends the run at once.
    if (options.metricsPort !== undefined) {
      metricsServer = await serveDemoMetrics(options.metricsPort, () => supervisor?.workerMetrics(METRICS_WORKER_TIMEOUT_MS) ?? Promise.resolve([]));
    }
    if (options.dashboard !== undefined && options.dashboard !== false) {
      dashboardServer = await serveDemoDashboard(dataSource, options.dashboard);
    }
    const dashboardUrl = dashboardServer?.pageOf(options.ns);
    const initialTerm = (await readStatus(dataSource, options.ns))[0]?.term ?? 0;
    const live = Boolean(process.stdout.isTTY) && !options.json && !options.plain;
    // With --json, stdout carries only the summary; the log goes to stderr.
    output = live ? new LiveView(process.stdout) : new PlainLog(options.json ? process.stderr : process.stdout);
    const title =
      `gemstone-election demo${dashboardUrl ? ` (dashboard: ${dashboardUrl})` : ''}: ${options.workers} workers on ${redact(url)}, namespace ${JSON.stringify(options.ns)}, ` +
      `lease ${options.lease}s${options.chaos ? `, chaos every ${options.chaosEvery}s` : ''}${options.unfenced ? ', FENCING OFF' : ''}`;
    if (!live) output.event({ at: new Date(), text: title, tone: 'info' });
    supervisor = new Supervisor(options, url, dataSource, runId, output, title);
    if (metricsServer) {
      output.event({ at: new Date(), text: `metrics: ${metricsServer.url} (Prometheus text; each worker's series labelled worker="worker-N", worker-N.2 for the process that replaced worker-N, …)`, tone: 'info' });
    }
    if (dashboardUrl) {
      output.event({ at: new Date(), text: `dashboard: ${dashboardUrl} (open it to watch the leader change and the timeline fill in)`, tone: 'info' });
    }
    const startedAt = Date.now();
    let observed;
    try {
      const run = supervisor.run();
      if (stopSignal !== undefined) supervisor.requestStop(); // a signal while the tables were created
      observed = await run;
    } finally {
      output.close();
    }
    const verdict = await verifyLedger(dataSource, runId, options.ns);
    // Every worker has stopped: the leader row has the last term. The supervisor's last poll may
    // predate the last election, and elections must cover every failover the ledger shows.
    const finalTerm = (await readStatus(dataSource, options.ns))[0]?.term ?? observed.finalTerm;
    const summary = buildSummary(
      { runId, url: redact(url), ns: options.ns, workers: options.workers, durationMs: Date.now() - startedAt, fencing: !options.unfenced },
      initialTerm,
      { ...observed, finalTerm },
      verdict,
    );
    process.stdout.write(options.json ? `${JSON.stringify(summary)}\n` : `\n${summaryText(summary)}\n`);
    if (summary.fencing && summary.staleWrites > 0) process.exitCode = EXIT_STALE_WRITE;
  } finally {
    try {
      if (tablesCreated && !options.keep) {
        const log = options.json ? process.stderr : process.stdout;
        // A failed clean-up is reported, never raised: it must not hide how the run itself ended.
        const outcome = await removeDemoTables(dataSource, runId).catch((error: unknown) => `not dropped: ${oneLine(error)}`);
        log.write(`demo tables ${LEDGER_TABLE}, ${TERM_TABLE}: ${outcome}${outcome === 'dropped' ? ' (--keep keeps them)' : ''}\n`);
      }
    } finally {
      await metricsServer?.close();
      await dashboardServer?.close();
      await disconnect(dataSource);
      for (const signal of signals) process.off(signal, onSignal);
      clearInterval(parentWatch);
      for (const restore of restoreStreams) restore();
      // Stopped by a signal: the shell's code for it, as if the signal had ended the process.
      if (stopSignal !== undefined && process.exitCode === undefined) process.exitCode = DEMO_STOP_SIGNALS[stopSignal];
    }
  }
}

/** `gemstone-election demo`. */
export function demoCommand(): Command {
  return new Command('demo')
    .description(
      'run worker processes that elect a leader; the leader appends to a ledger table, fenced by assertLeader. ' +
        'Shows a live view on a terminal, plain log lines otherwise, and a summary at the end.',
    )
    .option('-u, --url <url>', URL_OPTION_HELP)
    .option('-w, --workers <n>', 'worker processes', positiveInt(16), DEFAULT_DEMO_WORKERS)
    .option('-d, --duration <seconds>', 'stop after this long (or Ctrl-C)', seconds(MAX_DEMO_DURATION_SECONDS), DEFAULT_DEMO_DURATION_SECONDS)
    .option('-l, --lease <seconds>', 'lease length (expireSeconds); electors tick every third of it', seconds(3600), DEFAULT_DEMO_LEASE_SECONDS)
    .option('-c, --chaos', 'kill (SIGKILL) or pause (SIGSTOP, longer than the lease) the leader, alternately')
    .option('--chaos-every <seconds>', 'seconds between chaos actions', seconds(3600), DEFAULT_CHAOS_EVERY_SECONDS)
    .option('-n, --ns <namespace>', 'election namespace', namespace, DEFAULT_DEMO_NS)
    .option('--work-ms <ms>', 'duration of one leader-only job before it commits', millis, DEFAULT_DEMO_WORK_MS)
    .option('--gap-ms <ms>', 'pause between two jobs', millis, DEFAULT_DEMO_GAP_MS)
    .option('--unfenced', 'commit ledger writes WITHOUT assertLeader, to see what fencing prevents (with --chaos)')
    .option(
      '--metrics-port <port>',
      "serve the workers' election metrics (Prometheus text) on http://127.0.0.1:<port>/metrics while the demo runs; 0 picks a free port (needs prom-client)",
      port,
    )
    .option(
      '--dashboard [port]',
      `serve the dashboard on http://127.0.0.1:<port>/ while the demo runs (default port ${DEFAULT_DASHBOARD_PORT}, any free one if it is taken; 0: any free one) and run ${DEFAULT_DEMO_DASHBOARD_DURATION_SECONDS / 60} minutes unless --duration says otherwise`,
      port,
    )
    .option('--plain', 'plain log lines even on a terminal')
    .option('--json', 'print only the summary, as JSON, on stdout (log lines go to stderr)')
    .option('--keep', `keep the demo tables (${LEDGER_TABLE}, ${TERM_TABLE}) and this run's rows; by default they are dropped at the end, also after Ctrl-C, SIGTERM or SIGHUP`)
    .action((options: DemoOptions, command: Command) => {
      // Time to open the page and watch a few failovers, unless the duration was chosen.
      const dashboard = options.dashboard !== undefined && options.dashboard !== false;
      if (dashboard && command.getOptionValueSource('duration') === 'default') options.duration = DEFAULT_DEMO_DASHBOARD_DURATION_SECONDS;
      return demo(options);
    });
}
