/**
 * A schedule costs nothing while no slot is due: after the look-back a leadership starts with, the
 * loop's ticks send no statement about runs (counted by a logger on a DataSource of its own).
 */
import type { Logger } from 'typeorm';
import { initDb, LeaderElector } from 'gemstone-utils';
import { describeEachDatabase } from '../support/databases';
import { ns as freshNs } from '../support/rows';
import { waitFor } from '../elector/helpers';

/**
 * Counts the statements about runs a schedule sends (the loop's pruning of old runs, a DELETE once
 * per prune interval, and initDb's DDL are not a schedule's), and all statements.
 */
class RunStatements implements Logger {
  runs = 0;
  all = 0;
  logQuery(query: string): void {
    this.all++;
    if (/gemstone_election_run\b/i.test(query) && !/^\s*(DELETE|CREATE)\b/i.test(query)) this.runs++;
  }
  logQueryError(): void {}
  logQuerySlow(): void {}
  logSchemaBuild(): void {}
  logMigration(): void {}
  log(): void {}
}

describeEachDatabase(
  'a schedule with no slot due',
  (db) => {
    test('adds no statement to the ticks', async () => {
      const counter = new RunStatements();
      const ds = db.track(await initDb(db.options({ logging: ['query'], logger: counter } as never)));
      const elector = new LeaderElector({ dataSource: ds, ns: freshNs(), expireSeconds: 3, intervalMs: 200, listen: false });
      const ticks: number[] = [];
      elector.on('tick', () => ticks.push(counter.all));
      // Once a year, 1 January at midnight: not due while this test runs.
      elector.schedule({ name: 'new-year', cron: '0 0 1 1 *' }, () => undefined);
      await elector.start();
      try {
        expect(elector.isLeader).toBe(true);
        // The leadership's look-back: the one statement (or program) about runs.
        await waitFor('the look-back', () => counter.runs > 0, 10_000);
        // Its statements (one to three by database) are over once two ticks pass without one.
        let afterLookBack = -1;
        while (afterLookBack !== counter.runs) {
          afterLookBack = counter.runs;
          const at = ticks.length;
          await waitFor('two ticks', () => ticks.length >= at + 2, 10_000);
        }
        const from = ticks.length;
        await waitFor('five more ticks', () => ticks.length >= from + 5, 10_000);
        expect(counter.runs).toBe(afterLookBack);
      } finally {
        await elector.stop();
      }
    });
  },
  { sharedOnly: true },
);
