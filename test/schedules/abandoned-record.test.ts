/**
 * A stop that abandons its runs past `stopTimeoutMs` cuts short a run whose job returned but whose
 * record ("done") was still on its way: the record's next statement is refused, and it rolls
 * back. That is the stop's doing, reported once by the stop (phase 'stop'); the runner must not
 * report it again as a failure of its own (phase 'schedule', "recording slot … failed"). A clean
 * CI run saw exactly that second report, under load, in failover.test.ts.
 *
 * By construction here: schedule `hang` ignores its signal, so the stop waits its whole bound;
 * schedule `quick`'s job locks its own run row from another connection before it returns, so
 * its record waits on that lock through the bound, and the lock is let go only once the stop
 * resolved (the run abandoned). PostgreSQL: the record's row lock waits there, and the next
 * statement is the one refused.
 */
import type { DataSource } from 'typeorm';
import { LeaderElector, LeaderElectorError } from 'gemstone-utils';
import { describeEachDatabase } from '../support/databases';
import { ns as freshNs } from '../support/rows';
import { waitFor } from '../elector/helpers';
import { gate, runsOf } from './helpers';

const EVERY = 1000;
const STOP_BOUND_MS = 300;

describeEachDatabase(
  'a record cut short by the stop that abandoned its run',
  (db) => {
    let ds: DataSource;
    let locker: DataSource;

    beforeAll(async () => {
      ds = await db.connect();
      locker = await db.connect();
    });

    test("is the stop's to report: one 'stop' error, none of phase 'schedule'; the slot stays running for the next leader", async () => {
      const ns = freshNs();
      const elector = new LeaderElector({ dataSource: ds, ns, expireSeconds: 10, intervalMs: 300, stopTimeoutMs: STOP_BOUND_MS });
      const errors: LeaderElectorError[] = [];
      elector.on('error', (error) => errors.push(error));
      const hang = gate();
      const releaseLock = gate();
      let lockedSlot: Date | undefined;
      let lockHeld: Promise<void> | undefined;
      elector.schedule({ name: 'hang', everyMs: EVERY }, async () => {
        await hang.promise;
      });
      elector.schedule({ name: 'quick', everyMs: EVERY }, async (run) => {
        if (lockHeld) return;
        const locked = gate();
        lockedSlot = run.slot;
        // Another connection takes the run row's lock and keeps it until the test lets go.
        lockHeld = locker.transaction(async (m) => {
          await m.query('SELECT state FROM gemstone_election_run WHERE ns = $1 AND name = $2 AND slot = $3 FOR UPDATE', [ns, 'quick', run.slot]);
          locked.open();
          await releaseLock.promise;
        });
        await locked.promise;
      });
      try {
        await elector.start();
        await waitFor("quick's run row locked by another connection", () => lockedSlot !== undefined && lockHeld !== undefined, 20_000);
        // The record of quick's run now waits on the lock; hang's job never returns: the stop
        // waits its bound, then abandons both runs.
        await elector.stop();
        releaseLock.open();
        await lockHeld;
        // The record's next statement is refused now and its transaction rolls back: the row's
        // lock is free once it has. Then a moment for the runner's catch to run (a report, if any).
        await waitFor('the abandoned record to roll back', async () =>
          locker
            .transaction((m) => m.query('SELECT state FROM gemstone_election_run WHERE ns = $1 AND name = $2 AND slot = $3 FOR UPDATE NOWAIT', [ns, 'quick', lockedSlot]))
            .then(() => true, () => false),
        10_000);
        await new Promise((resolve) => setTimeout(resolve, 300));
        expect(errors.map((error) => ({ phase: error.phase, message: error.message }))).toEqual([
          { phase: 'stop', message: expect.stringContaining('the scheduled jobs returning') },
        ]);
        const row = (await runsOf(ds, ns, 'quick')).find((r) => r.slot.getTime() === lockedSlot!.getTime());
        expect(row).toMatchObject({ state: 'running', attempt: 1 });
      } finally {
        releaseLock.open();
        hang.open();
        await lockHeld;
        await elector.stop();
      }
    }, 60_000);
  },
  { kinds: ['postgres'] },
);
