/**
 * The differential runs of one database: schedules of sequential operations, then schedules with
 * concurrent rounds (races, transactions holding the leader row past a lease's end, a busy SQLite
 * write lock), each compared with the reference model (see harness.ts). How many schedules:
 * DIFF_RUNS below, times `GEMSTONE_DIFF_RUNS`.
 */
import type { TestDatabase } from '../support/databases';
import { checkSchedules, EXPIRE_SECONDS } from './harness';
import { loopRound } from './loops';
import { capabilitiesOf, isOpen, leftOut, skippedFor } from './known-defects';
import type { Capabilities } from './schedule';
import { oneStatementRenewals, openWorld, type SessionSettings, type World } from './world';

/** Long enough for thousands of schedules per database, short enough for CI. */
const TIMEOUT_MS = 15 * 60_000;

export interface SuiteOptions {
  sequentialRuns: number;
  concurrentRuns: number;
  settings?: SessionSettings;
  caps?: Partial<Capabilities>;
  /** The open defect this configuration reproduces: the whole run is skipped while it is open. */
  defect?: number;
  /**
   * MariaDB, PostgreSQL: at least this many leader renewals of the sequential schedules must have taken the
   * one-statement path, so that the run is evidence about that path and not only about the others.
   */
  minOneStatementRenewals?: number;
  /**
   * Real LeaderElectors and LeaderElectorGroups beside this many schedules with concurrent rounds
   * (see loops.ts); none without it, nor on `:memory:` (no second DataSource sees it).
   */
  loopRuns?: number;
}

export function differentialSuite(db: TestDatabase, options: SuiteOptions): void {
  if (options.defect !== undefined && isOpen(options.defect)) {
    test.skip(skippedFor(options.defect), () => undefined);
    return;
  }
  let world: World;
  beforeAll(async () => {
    world = await openWorld(db, EXPIRE_SECONDS, options.settings);
  });

  test(
    'sequential schedules decide as the model',
    async () => {
      oneStatementRenewals.count = 0;
      await checkSchedules(world, capabilitiesOf(world, db.kind, options.caps), { numRuns: options.sequentialRuns, rounds: false }, 'sequential');
      if (world.kind === 'mariadb' || world.kind === 'postgres') console.log(`${world.name} — sequential: ${oneStatementRenewals.count} leader renewal(s) in one statement`);
      if (options.minOneStatementRenewals !== undefined) expect(oneStatementRenewals.count).toBeGreaterThanOrEqual(options.minOneStatementRenewals);
    },
    TIMEOUT_MS,
  );

  if (options.concurrentRuns > 0) {
    test(
      'schedules with concurrent rounds are explained by some order of the model',
      async () => {
        await checkSchedules(world, capabilitiesOf(world, db.kind, options.caps), { numRuns: options.concurrentRuns, rounds: true }, 'concurrent');
      },
      TIMEOUT_MS,
    );
  }

  if (options.loopRuns !== undefined && db.shared) {
    test(
      'real loops beside schedules with concurrent rounds: callbacks per leadership, and watch(), as the history says',
      async () => {
        const caps = capabilitiesOf(world, db.kind, options.caps);
        const round = await loopRound(db, () => checkSchedules(world, caps, { numRuns: options.loopRuns!, rounds: true }, 'beside loops'));
        console.log(`${world.name} — real loops: ${round.summary}`);
        expect(round.violations).toEqual([]);
      },
      TIMEOUT_MS,
    );
  }

  // Loud: the dimensions left out for defects still open (see known-defects.ts).
  for (const defect of leftOut(db)) test.skip(skippedFor(defect), () => undefined);
}
