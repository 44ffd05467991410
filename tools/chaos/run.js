#!/usr/bin/env node
// @ts-check
'use strict';
/**
 * `npm run chaos -- [flags]`: a chaos run against PostgreSQL, MariaDB or an SQLite file, checked
 * for stale writes, term order, late actions and leaderless time. Exit code 0 when every check
 * passes, 1 when one fails, 2 when the run itself could not be carried out.
 */
// The test suite's TypeORM 0.3 switch (require('typeorm') → typeorm03), for runs on that line.
if (process.env.GEMSTONE_TYPEORM_LINE === '0.3') require(require('path').join(__dirname, '..', '..', 'test', 'support', 'typeorm-line.js'));
const { Command, Option } = require('commander');
const { runChaos, DEFAULTS } = require('./runner');
const { FAULT_TYPES } = require('./faults');
const { printSummary } = require('./report');

const number = (/** @type {string} */ value) => {
  const n = Number(value);
  if (!Number.isFinite(n) || n <= 0) throw new Error(`not a positive number: ${value}`);
  return n;
};

const nonNegative = (/** @type {string} */ value) => {
  const n = Number(value);
  if (!Number.isFinite(n) || n < 0) throw new Error(`not a number >= 0: ${value}`);
  return n;
};

const integers = (/** @type {string} */ value) =>
  value.split(',').map((part) => {
    const n = Number(part.trim());
    if (part.trim() === '' || !Number.isInteger(n)) throw new Error(`not an integer: ${part}`);
    return n;
  });

const program = new Command()
  .name('npm run chaos --')
  .description('Leader election under faults: K workers do fenced writes to a ledger while a fault injector kills, pauses, partitions and delays them.')
  .addOption(new Option('--db <kind>', 'database to create for the run').choices(['postgres', 'mariadb', 'sqlite']).default('postgres'))
  .option('--url <url>', 'use this (empty) database instead of creating one: postgres://…, mysql://…, sqlite:<file>')
  .option('--workers <n>', 'worker processes', number, DEFAULTS.workers)
  .option('--duration <seconds>', 'length of the run', number, DEFAULTS.durationS)
  .option('--lease <seconds>', 'lease (expireSeconds) of every elector', number, DEFAULTS.leaseS)
  .option('--work-ms <ms>', 'pause between a leader\'s fenced writes', number, DEFAULTS.workMs)
  .option('--slack-ms <ms>', 'margin of check (d): leaderless time allowed beyond one tick, or beyond the nearby faults\' durations + lease + tick (a loaded machine)', number, DEFAULTS.slackMs)
  .option('--clock-tolerance-ms <ms>', 'worker clock vs database clock, for check (c)', number, DEFAULTS.clockToleranceMs)
  .option('--min-faults <n>', 'inject at least this many faults, extending the run if need be', number, DEFAULTS.minFaults)
  .option('--seed <n>', 'seed of the fault schedule', (v) => Number.parseInt(v, 10))
  .option('--faults <list>', `only these faults, comma-separated, each at least once (${FAULT_TYPES.join(', ')})`, (v) => v.split(',').map((s) => s.trim()))
  .option('--db-restart', 'also restart the database server (never in CI: it disturbs everything on the server)', false)
  .option('--out <dir>', 'output directory (default /tmp/gemstone-chaos/<db>-<time>)')
  .option('--keep', 'keep the database the run created', false)
  .option('--app-transactions', 'SQLite: each worker\'s elector shares one DataSource with app transactions that roll back at random', false)
  .option('--priorities <list>', 'elector priority per worker slot, comma-separated (e.g. 0,0,1,2; missing ones 0; a restarted worker keeps its slot\'s); the top-priority workers join once a lower one leads, so the run opens with a hand-over', integers)
  .option('--ineligible <slots>', 'worker slots that observe but never lead (eligible: false), comma-separated (e.g. 4)', integers)
  .option('--settle-ms <ms>', 'quiet tail after the last fault, by whose end a top-priority eligible worker must lead (default lease + 4 ticks + 3 s)', number)
  .option('--group <n>', 'group mode: every worker runs a LeaderElectorGroup over n namespaces and makes a fenced write per namespace it leads; checked per namespace', number)
  .option('--balance', 'group mode: the groups balance the namespaces between them (hand-overs under faults)', false)
  .option('--schedule-ms <ms>', 'period of the schedule every worker runs, whose job writes a ledger row in run.transaction (0: none); its runs are checked (r)', nonNegative, DEFAULTS.scheduleMs)
  .option('--schedule-namespaces <n>', 'group mode: the schedule runs in the first n namespaces', number, DEFAULTS.scheduleNamespaces)
  .option('--unfenced', 'sabotage: workers skip assertLeader (the checker must then report stale writes)', false)
  .option('--guarded', 'the workers also write a guarded table, skipping assertLeader half of the time, beside a rogue that never leads; checked (u)', false)
  .option('--json', 'print the summary as JSON on stdout', false);

async function main() {
  program.parse();
  const flags = program.opts();
  for (const fault of flags.faults ?? []) if (!FAULT_TYPES.includes(fault)) throw new Error(`unknown fault ${fault} (${FAULT_TYPES.join(', ')})`);
  const summary = await runChaos({
    db: flags.db,
    url: flags.url,
    workers: flags.workers,
    durationS: flags.duration,
    leaseS: flags.lease,
    workMs: flags.workMs,
    slackMs: flags.slackMs,
    clockToleranceMs: flags.clockToleranceMs,
    minFaults: flags.minFaults,
    seed: flags.seed,
    faults: flags.faults,
    dbRestart: flags.dbRestart,
    out: flags.out,
    keep: flags.keep,
    unfenced: flags.unfenced,
    guarded: flags.guarded,
    appTransactions: flags.appTransactions,
    priorities: flags.priorities,
    ineligible: flags.ineligible,
    settleMs: flags.settleMs,
    group: flags.group,
    balance: flags.balance,
    scheduleMs: flags.scheduleMs,
    scheduleNamespaces: flags.scheduleNamespaces,
  });
  if (flags.json) process.stdout.write(`${JSON.stringify(summary)}\n`);
  else printSummary(summary);
  process.exitCode = summary.ok ? 0 : 1;
}

main().catch((error) => {
  process.stderr.write(`chaos: ${error instanceof Error ? error.stack : String(error)}\n`);
  process.exitCode = 2;
});
