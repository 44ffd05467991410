import { randomUUID } from 'crypto';
import { Command, InvalidArgumentError } from 'commander';
import { checkNs } from '../../election/validate';
import { CliError } from '../errors';
import { connect, disconnect, redact, resolveUrl } from '../target';
import { readStatus } from '../status/query';
import { createDemoTables, verifyLedger } from './ledger';
import {
  DEFAULT_CHAOS_EVERY_SECONDS,
  DEFAULT_DEMO_DURATION_SECONDS,
  DEFAULT_DEMO_GAP_MS,
  DEFAULT_DEMO_LEASE_SECONDS,
  DEFAULT_DEMO_NS,
  DEFAULT_DEMO_WORK_MS,
  DEFAULT_DEMO_WORKERS,
  DemoOptions,
  MAX_DEMO_DURATION_SECONDS,
} from './options';
import { buildSummary, summaryText } from './summary';
import { Supervisor } from './supervisor';
import { DemoOutput, LiveView, PlainLog } from './view';

/** Exit code when the ledger shows a stale write although fencing was on. */
const EXIT_STALE_WRITE = 1;

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
  try {
    await createDemoTables(dataSource);
    const runId = randomUUID();
    const initialTerm = (await readStatus(dataSource, options.ns))[0]?.term ?? 0;
    const live = Boolean(process.stdout.isTTY) && !options.json && !options.plain;
    // With --json, stdout carries only the summary; the log goes to stderr.
    const output: DemoOutput = live ? new LiveView(process.stdout) : new PlainLog(options.json ? process.stderr : process.stdout);
    const title =
      `gemstone-election demo: ${options.workers} workers on ${redact(url)}, namespace ${JSON.stringify(options.ns)}, ` +
      `lease ${options.lease}s${options.chaos ? `, chaos every ${options.chaosEvery}s` : ''}${options.unfenced ? ', FENCING OFF' : ''}`;
    if (!live) output.event({ at: new Date(), text: title, tone: 'info' });
    const supervisor = new Supervisor(options, url, dataSource, runId, output, title);

    let interrupts = 0;
    const onInterrupt = () => {
      if (++interrupts === 1) {
        output.event({ at: new Date(), text: 'interrupted: stopping (Ctrl-C again to kill the workers at once)', tone: 'warn' });
        supervisor.requestStop();
      } else {
        supervisor.killAll();
      }
    };
    process.on('SIGINT', onInterrupt).on('SIGTERM', onInterrupt);
    const startedAt = Date.now();
    let observed;
    try {
      observed = await supervisor.run();
    } finally {
      process.off('SIGINT', onInterrupt).off('SIGTERM', onInterrupt);
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
    await disconnect(dataSource);
  }
}

/** `gemstone-election demo`. */
export function demoCommand(): Command {
  return new Command('demo')
    .description(
      'run worker processes that elect a leader; the leader appends to a ledger table, fenced by assertLeader. ' +
        'Shows a live view on a terminal, plain log lines otherwise, and a summary at the end.',
    )
    .option('-u, --url <url>', 'database URL (default: $GEMSTONE_DB_URL, else sqlite:gemstone.sqlite)')
    .option('-w, --workers <n>', 'worker processes', positiveInt(16), DEFAULT_DEMO_WORKERS)
    .option('-d, --duration <seconds>', 'stop after this long (or Ctrl-C)', seconds(MAX_DEMO_DURATION_SECONDS), DEFAULT_DEMO_DURATION_SECONDS)
    .option('-l, --lease <seconds>', 'lease length (expireSeconds); electors tick every third of it', seconds(3600), DEFAULT_DEMO_LEASE_SECONDS)
    .option('-c, --chaos', 'kill (SIGKILL) or pause (SIGSTOP, longer than the lease) the leader, alternately')
    .option('--chaos-every <seconds>', 'seconds between chaos actions', seconds(3600), DEFAULT_CHAOS_EVERY_SECONDS)
    .option('-n, --ns <namespace>', 'election namespace', namespace, DEFAULT_DEMO_NS)
    .option('--work-ms <ms>', 'duration of one leader-only job before it commits', millis, DEFAULT_DEMO_WORK_MS)
    .option('--gap-ms <ms>', 'pause between two jobs', millis, DEFAULT_DEMO_GAP_MS)
    .option('--unfenced', 'commit ledger writes WITHOUT assertLeader, to see what fencing prevents (with --chaos)')
    .option('--plain', 'plain log lines even on a terminal')
    .option('--json', 'print only the summary, as JSON, on stdout (log lines go to stderr)')
    .action((options: DemoOptions) => demo(options));
}
