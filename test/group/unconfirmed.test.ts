/**
 * A namespace the tick could not confirm — its leader row locked by another transaction, so the
 * tick passed it by — is neither ended at once nor renewed: the group keeps leading it on its
 * local deadline, unextended, and ends it by that deadline unless a later tick renews it. Ending
 * it at once would demote and re-elect the same term whenever a rival holds the row for a
 * moment; extending the deadline would let the group lead past a lease nobody renewed.
 */
import type { DataSource, QueryRunner } from 'typeorm';
import type { LeaderElectorGroup } from 'gemstone-utils';
import { describeEachDatabase, sleep } from '../support/databases';
import { ns as freshNs } from '../support/rows';
import { namespaces, recordingGroup, waitFor } from './helpers';

const INTERVAL = 300;

describeEachDatabase(
  'LeaderElectorGroup: a namespace the tick could not confirm',
  (db) => {
    // A tick first waits, bounded, for a lease it holds whose row another transaction locked (its
    // own fenced writes must not cost it the lease); MySQL/MariaDB bound lock waits in whole
    // seconds, so there each tick that meets the locked row takes a second or more, and four of
    // them need a longer lease to stay inside it.
    const EXPIRE = db.kind === 'mariadb' ? 8 : 3;
    let ds: DataSource;
    let runner: QueryRunner | undefined;
    const groups: LeaderElectorGroup[] = [];
    beforeAll(async () => {
      ds = await db.connect();
    });
    afterEach(async () => {
      if (runner?.isTransactionActive) await runner.rollbackTransaction();
      await runner?.release();
      runner = undefined;
      await Promise.all(groups.splice(0).map((g) => g.stop()));
    });

    /** Another transaction locks the leader row of `ns` until released. */
    async function lockLeaderRow(ns: string): Promise<() => Promise<void>> {
      runner = ds.createQueryRunner();
      await runner.connect();
      await runner.startTransaction();
      await runner.query(`SELECT ns FROM gemstone_election_leader WHERE ns = ${db.kind === 'postgres' ? '$1' : '?'} FOR UPDATE`, [ns]);
      const held = runner;
      return async () => {
        await held.commitTransaction();
        await held.release();
        runner = undefined;
      };
    }

    test('locked for a few ticks: still led under the same term, no demotion; locked past the lease: ended by the local deadline, then a new term', async () => {
      const [locked, free] = namespaces(freshNs(), 2) as [string, string];
      const { group: g, events, errors } = recordingGroup(ds, { namespaces: [locked, free], expireSeconds: EXPIRE, intervalMs: INTERVAL });
      groups.push(g);
      const demotedAt = new Map<string, number>();
      g.on('demoted', (lease) => demotedAt.set(`${lease.ns}#${lease.term}`, performance.now()));
      let ticks = 0;
      g.on('tick', () => void ticks++);
      await g.start();
      await waitFor('the group leads both', () => g.lease(locked)?.term === 1 && g.lease(free)?.term === 1, 10_000);

      // 1. Locked for four ticks, well inside the lease: every tick passes it by, and the group
      //    keeps leading it on the deadline of its last renewal.
      let release = await lockLeaderRow(locked);
      const before = ticks;
      const unconfirmedSince = performance.now();
      const notLeading: number[] = [];
      while (ticks < before + 4) {
        if (!g.isLeader(locked)) notLeading.push(ticks - before);
        await sleep(20);
      }
      expect({ ticksWithoutLeading: notLeading }).toEqual({ ticksWithoutLeading: [] });
      expect(performance.now() - unconfirmedSince).toBeLessThan(EXPIRE * 1000); // the premise: within the lease
      await release();
      const after = ticks;
      await waitFor('two more ticks', () => ticks >= after + 2, 10_000);
      expect(events.filter((e) => e.ns === locked)).toEqual([
        { kind: 'started', ns: locked, term: 1 },
        { kind: 'elected', ns: locked, term: 1 },
      ]);
      expect(g.lease(locked)?.term).toBe(1);

      // 2. Locked past the lease: not renewed, so its leadership ends by the deadline of the last
      //    tick that renewed it — before lockedAt + the lease — while the other namespace is renewed.
      release = await lockLeaderRow(locked);
      const lockedAt = performance.now();
      await waitFor('the unconfirmed leadership to end', () => !g.isLeader(locked), EXPIRE * 1000 + 3_000);
      const endedAfter = demotedAt.get(`${locked}#1`)! - lockedAt;
      expect(events.filter((e) => e.ns === locked && e.kind === 'demoted')).toEqual([{ kind: 'demoted', ns: locked, term: 1, reason: 'lease-expired-locally' }]);
      // Its deadline was set before the lock was taken; a timer's lateness on a loaded machine is the margin.
      expect(endedAfter).toBeLessThanOrEqual(EXPIRE * 1000 + 250);
      expect(g.lease(free)?.term).toBe(1);
      expect(g.isLeader(free)).toBe(true);
      await sleep(1_000); // past the database lease too
      await release();
      await waitFor('a new term after the lock', () => g.lease(locked)?.term === 2, 10_000);
      expect(events.filter((e) => e.ns === locked).map((e) => `${e.kind} ${e.term}`)).toEqual(['started 1', 'elected 1', 'stopped 1', 'demoted 1', 'started 2', 'elected 2']);
      expect(events.filter((e) => e.ns === free).map((e) => `${e.kind} ${e.term}`)).toEqual(['started 1', 'elected 1']);
      expect(errors.filter((e) => !/has not answered|elect failed/.test(e.message))).toEqual([]);
    }, 60_000);
  },
  { kinds: ['postgres', 'mariadb'] },
);
