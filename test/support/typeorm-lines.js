// Which test files the TypeORM 0.3 run (`npm run test:typeorm-0.3`) leaves out. Every test file runs
// on TypeORM 1.x (`npm test`); on 0.3 every file runs too, except those listed here by name, each
// under a reason why its outcome cannot depend on the TypeORM line. A file not listed runs on both
// lines, so a new test file is never left out of the 0.3 run unless it is added here.
// test/architecture/typeorm-lines.test.ts holds this list to the files and to its reasons.
// The 0.3 run is also the suite's run in a time zone other than UTC (TZ=Asia/Kathmandu): a file
// whose outcome can depend on the host's time zone stays in it (the browser tests, say).
// GEMSTONE_TYPEORM_LINE_SELECT=1 (set by the npm script) applies it; without it, e.g.
// `GEMSTONE_TYPEORM_LINE=0.3 npm run jest -- test/cli/history.test.ts`, every file runs.

/**
 * Groups of files left out of the 0.3 run. `kind` says what the architecture test checks of them:
 * 'pure' files load neither TypeORM nor a database; 'covered' files do, through the library only,
 * and `coveredBy` names the files that check that TypeORM surface on 0.3.
 */
const ONE_LINE_ONLY = [
  {
    kind: 'pure',
    reason:
      'no DataSource, no TypeORM: decision functions, checkers, the model, static checks of the sources and docs, the zone cache against its reference (every zone named, never the host\'s: the host time zone of schedules is checked on 0.3 by the slots and catch-up tests)',
    files: [
      'test/architecture/layout.test.ts',
      'test/chaos/checker.test.ts',
      'test/chaos/linearizability.test.ts',
      'test/differential/model.test.ts',
      'test/docs/links.test.ts',
      'test/docs/tables.test.ts',
      'test/docs/versions.test.ts',
      'test/election/decision.test.ts',
      'test/election/leading-terms.test.ts',
      'test/group/compare-ns.test.ts',
      'test/group/fair-share.test.ts',
      'test/schedules/zone-cache.test.ts',
    ],
  },
  {
    kind: 'covered',
    reason:
      'the gemstone-election CLI in child processes: its TypeORM surface is initDb by URL (better-sqlite3 on both lines unless the URL names sqlite3) and the public API',
    coveredBy: ['test/db/init-db-targets.test.ts', 'test/property/init-db-input.test.ts', 'test/election/protocol.test.ts'],
    files: [
      'test/cli/dashboard.test.ts',
      'test/cli/demo-metrics.test.ts',
      'test/cli/demo-parts.test.ts',
      'test/cli/demo-stop.test.ts',
      'test/cli/demo-view.test.ts',
      'test/cli/demo.test.ts',
      'test/cli/hints.test.ts',
      'test/cli/history.test.ts',
      'test/cli/json.test.ts',
      'test/cli/redact.test.ts',
      'test/cli/runs.test.ts',
      'test/cli/status-init.test.ts',
      'test/cli/status-order.test.ts',
      'test/cli/watch.test.ts',
    ],
  },
  {
    kind: 'covered',
    reason:
      'chaos runs (faults, kills, server restarts) check the safety of the election paths, whose statements and transactions on 0.3 the differential SQLite run, the defects replays and the process tests check',
    coveredBy: ['test/differential/sqlite.test.ts', 'test/differential/defects.test.ts', 'test/elector/process.test.ts', 'test/elector/listen-outage.test.ts'],
    files: ['test/chaos/chaos.test.ts', 'test/chaos/chaos-group.test.ts', 'test/chaos/db-restart.test.ts'],
  },
  {
    kind: 'covered',
    reason:
      'differential runs on the server databases: the decisions are SQL the server runs, the same on both lines; TypeORM carries the statements and transactions, which the defects replays and the election tests check on 0.3 (SQLite stays: sqlite3 exists only there)',
    coveredBy: ['test/differential/defects.test.ts', 'test/differential/sqlite.test.ts', 'test/election/concurrency.test.ts', 'test/election/sessions.test.ts', 'test/db/with-transaction.test.ts'],
    files: ['test/differential/postgres.test.ts', 'test/differential/mariadb.test.ts'],
  },
  {
    kind: 'covered',
    reason:
      "the loops' callback order, their hand-overs to preferred candidates, the group's fair share and the metrics built on their events: the engine's rules above the statements (the priority and share decisions are SQL the server runs, or the tick's code, the same on both lines), whose outcomes and errors on 0.3 the elector, group and identity tests check",
    coveredBy: ['test/elector/elector.test.ts', 'test/elector/process.test.ts', 'test/elector/partition.test.ts', 'test/group/group.test.ts', 'test/election/identity.test.ts'],
    files: ['test/lifecycle/callback-order.test.ts', 'test/metrics/metrics.test.ts', 'test/elector/priority.test.ts', 'test/group/balance.test.ts'],
  },
  {
    kind: 'covered',
    reason:
      "@LeaderCron's applications killed and restarted in child processes: the decorator's wiring and the schedules' failover, whose TypeORM surface on 0.3 (the Nest module's DataSource, run.transaction) the Nest module and connection tests and the schedules' runner and failover tests check",
    coveredBy: ['test/nestjs/election-module.test.ts', 'test/nestjs/connections.test.ts', 'test/schedules/runner.test.ts', 'test/schedules/failover.test.ts'],
    files: ['test/nestjs/leader-cron.test.ts'],
  },
  {
    kind: 'covered',
    reason:
      "schedule fault runs (kills, pauses, skewed clocks in child processes) check the safety of claims and run.transaction, whose statements and transactions on 0.3 the runs store, runner, failover and catch-up tests check",
    coveredBy: ['test/schedules/runs-store.test.ts', 'test/schedules/runner.test.ts', 'test/schedules/failover.test.ts', 'test/schedules/catch-up.test.ts'],
    files: ['test/schedules/faults.test.ts'],
  },
  {
    kind: 'covered',
    reason:
      "hostile names and metadata shown as text by the browser client: its escaping, which neither the TypeORM line nor the time zone reaches; the dashboard's queries and pages on 0.3 are checked by the API and browser tests",
    coveredBy: ['test/dashboard/api.test.ts', 'test/dashboard/browser.test.ts', 'test/dashboard/api-schedules.test.ts'],
    files: ['test/dashboard/xss.test.ts'],
  },
];

/** The files left out of the 0.3 run, relative to the repository's root. */
function oneLineOnlyFiles() {
  return ONE_LINE_ONLY.flatMap((group) => group.files);
}

const escape = (text) => text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

/** jest's testPathIgnorePatterns for this run: the listed files on a selecting 0.3 run, else none. */
function lineIgnorePatterns(env = process.env) {
  if (env.GEMSTONE_TYPEORM_LINE !== '0.3' || env.GEMSTONE_TYPEORM_LINE_SELECT !== '1') return [];
  return oneLineOnlyFiles().map((file) => `/${escape(file)}$`);
}

module.exports = { ONE_LINE_ONLY, oneLineOnlyFiles, lineIgnorePatterns };
