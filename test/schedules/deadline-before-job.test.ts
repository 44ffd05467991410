/**
 * No job starts past its leadership's local deadline, even when the deadline's timer has not fired
 * yet: the event loop blocked (a long synchronous call, a GC pause, a frozen process) while a
 * slot's claim was on its way; after the block, the claim's answer is handled before the timers
 * run again. The run then asks the loop for the leadership, which ends it on the spot: the slot is
 * claimed and run by the next leadership instead (chaos-group, MariaDB: a job started 2,443 ms
 * after its local deadline, then demoted by the timer 10 ms later).
 *
 * The state is driven, not hoped for (PostgreSQL: the rule is the loop's, the same on every
 * database): a deferred trigger of the test's delays the COMMIT of the armed claim by 300 ms at
 * the server; a logger of the test's DataSource sees that COMMIT go out and schedules a timer that
 * blocks the event loop for longer than the lease. The timer runs before the answer can arrive,
 * the answer arrives during the block, and the deadline passes in it.
 */
import type { DataSource } from 'typeorm';
import { LeaderElector } from 'gemstone-utils';
import { blockEventLoop, waitFor } from '../elector/helpers';
import { QueryLog } from '../db/support/query-log';
import { describeEachDatabase } from '../support/databases';
import { ns as freshNs } from '../support/rows';

const LEASE_MS = 1000;
const BLOCK_MS = 1500;

/** Blocks the event loop from a timer right after the next claim's COMMIT is sent, once armed. */
class ClaimBlocker extends QueryLog {
  armed = false;
  #claimSent = false;
  blockedAt: number | undefined;

  override logQuery(query: string, parameters?: unknown[]): void {
    super.logQuery(query, parameters);
    if (!this.armed) return;
    if (/^UPDATE .*gemstone_election_run.* SET state = .*attempt = /s.test(query)) this.#claimSent = true;
    else if (this.#claimSent && /^COMMIT/i.test(query.trim())) {
      this.armed = false;
      this.#claimSent = false;
      // In the next timers phase: the COMMIT's answer arrives during the block and is handled
      // right after it, before any timer that came due meanwhile (the local deadline's).
      setTimeout(() => {
        this.blockedAt = performance.now();
        blockEventLoop(BLOCK_MS);
      }, 0);
    }
  }
}

describeEachDatabase(
  'a job and its local deadline',
  (db) => {
    test('a claim answered after the deadline passed (its timer not yet fired) starts no job: the next leadership runs the slot', async () => {
      const blocker = new ClaimBlocker();
      const ds: DataSource = await db.connect({ logger: blocker, logging: true });
      // While slow_claim has a row, a claim's COMMIT (a run row set running) waits 300 ms.
      await ds.query('CREATE TABLE slow_claim (armed int)');
      await ds.query(`CREATE FUNCTION slow_claim() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF EXISTS (SELECT 1 FROM slow_claim) THEN PERFORM pg_sleep(0.3); END IF;
  RETURN NULL;
END $$`);
      await ds.query(`CREATE CONSTRAINT TRIGGER slow_claim AFTER UPDATE ON gemstone_election_run DEFERRABLE INITIALLY DEFERRED
  FOR EACH ROW WHEN (NEW.state = 'running') EXECUTE FUNCTION slow_claim()`);
      const e = new LeaderElector({ dataSource: ds, ns: freshNs(), expireSeconds: LEASE_MS / 1000, intervalMs: 200 });
      const starts: Array<{ slot: number; term: number; aborted: boolean; at: number }> = [];
      e.schedule({ name: 'every-second', everyMs: 1000 }, async (run) => {
        starts.push({ slot: run.slot.getTime(), term: run.lease.term, aborted: run.lease.signal.aborted, at: performance.now() });
      });
      await e.start();
      try {
        await waitFor('a first job', () => starts.length > 0, 20_000);
        const term = e.term!;
        await ds.query('INSERT INTO slow_claim VALUES (1)');
        blocker.armed = true;
        await waitFor('the block', () => blocker.blockedAt !== undefined, 10_000);
        await ds.query('DELETE FROM slow_claim');
        await waitFor('a job of a later term', () => starts.some((s) => s.term > term), 20_000);
        // The block happened with the claim in flight: past the lease, so the leadership was over.
        const after = starts.filter((s) => s.at >= blocker.blockedAt!);
        expect(after.length).toBeGreaterThan(0);
        // No job started under the blocked leadership after the block: every one is the next term's.
        expect(after.filter((s) => s.term <= term)).toEqual([]);
        expect(starts.every((s) => !s.aborted)).toBe(true);
      } finally {
        await e.stop();
        await ds.destroy();
      }
    });
  },
  { kinds: ['postgres'], sharedOnly: true },
);
