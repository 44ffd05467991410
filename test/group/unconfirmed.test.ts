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
import { liveLeaders, namespaces, recordingGroup, waitFor } from './helpers';

const INTERVAL = 300;

describeEachDatabase(
  'LeaderElectorGroup: a namespace the tick could not confirm',
  (db) => {
    // A tick first waits, bounded, for a lease it holds whose row another transaction locked (its
    // own fenced writes must not cost it the lease); MySQL/MariaDB bound lock waits in whole
    // seconds, so there each tick that meets the locked row takes a second or more. The lease
    // leaves room for the ticks the test needs inside it on a loaded machine (ticks of a second
    // each); whether they did fit is measured, not assumed.
    const EXPIRE = db.kind === 'mariadb' ? 12 : 6;
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
      const leaseMs = EXPIRE * 1000;
      const demotedAt = new Map<string, number>();
      g.on('demoted', (lease) => demotedAt.set(`${lease.ns}#${lease.term}`, performance.now()));
      /** Each tick: when its handler ran (the next tick is sent after it), whether it failed, whether `locked` was led then. */
      const ticks: Array<{ at: number; failed: boolean; leading: boolean }> = [];
      g.on('tick', (tick) => {
        const leading = g.isLeader(locked);
        ticks.push({ at: performance.now(), failed: tick.error !== null, leading });
      });
      const tickAfter = (n: number) => waitFor(`tick ${n + 1}`, () => ticks.length > n, 10 * leaseMs).then(() => ticks[n]!);
      await g.start();
      await waitFor('the group leads both', () => g.lease(locked)?.term === 1 && g.lease(free)?.term === 1, 10_000);
      const firstLease = g.lease(locked);

      // 1. Locked for a few ticks inside the lease: every tick passes it by, and the group keeps
      //    leading it on the deadline of its last renewal. That deadline is no earlier than
      //    `leadsUntil`: taken in a tick's handler, before the next tick was sent, which renewed it
      //    (the row was not locked yet).
      const marked = await tickAfter(ticks.length);
      const leadsUntil = marked.at + leaseMs;
      const renewal = await tickAfter(ticks.indexOf(marked) + 1);
      expect(renewal.failed).toBe(false);
      let release = await lockLeaderRow(locked);
      // The first tick after the lock may have been sent before it; every later one met the locked row.
      const metFrom = ticks.length + 1;
      const notLeading: number[] = [];
      while (ticks.length < metFrom + 2 && performance.now() < leadsUntil) {
        const leading = g.isLeader(locked);
        const at = performance.now();
        if (!leading && at < leadsUntil) notLeading.push(at - marked.at);
        await sleep(20);
      }
      const metInLease = ticks.slice(metFrom).filter((t) => t.at < leadsUntil && !t.failed);
      for (const t of ticks) if (!t.leading && t.at < leadsUntil) notLeading.push(t.at - marked.at);
      // Before its deadline the group never stopped leading it (observations, ms after `marked`).
      expect({ notLeadingAt: notLeading }).toEqual({ notLeadingAt: [] });
      // The premise: ticks that met the locked row answered inside the lease.
      expect(metInLease.length).toBeGreaterThanOrEqual(2);
      await release();
      const afterRelease = await tickAfter(ticks.length);
      await tickAfter(ticks.indexOf(afterRelease) + 1);
      // A tick after the release that answered before the deadline renewed it in time: the very
      // same leadership, no demotion. (On a machine so loaded that it answered later, the lease
      // may have lapsed locally meanwhile — then only after its deadline, as below.)
      const renewedInTime = afterRelease.at < leadsUntil;
      if (renewedInTime) {
        expect(events.filter((e) => e.ns === locked)).toEqual([
          { kind: 'started', ns: locked, term: 1 },
          { kind: 'elected', ns: locked, term: 1 },
        ]);
        expect(g.lease(locked)).toBe(firstLease);
      } else if (demotedAt.has(`${locked}#1`)) {
        expect(demotedAt.get(`${locked}#1`)!).toBeGreaterThanOrEqual(leadsUntil);
      }
      await waitFor('the group leads it under term 1', () => g.lease(locked)?.term === 1, 10 * leaseMs);

      // 2. Locked past the lease: not renewed, so its leadership ends by the deadline of the last
      //    tick that renewed it — sent before the lock was taken, so no later than lockedAt + the
      //    lease — while the other namespace is renewed. No observation from then on sees it led.
      const demotionsBefore = events.filter((e) => e.ns === locked && e.kind === 'demoted').length;
      release = await lockLeaderRow(locked);
      const lockedAt = performance.now();
      const ledPastDeadline: number[] = [];
      await waitFor(
        'the unconfirmed leadership to end',
        () => {
          const from = performance.now();
          const leading = g.isLeader(locked);
          if (leading && from >= lockedAt + leaseMs) ledPastDeadline.push(from - lockedAt);
          return !leading;
        },
        10 * leaseMs,
      );
      expect({ ledPastDeadline }).toEqual({ ledPastDeadline: [] });
      expect(events.filter((e) => e.ns === locked && e.kind === 'demoted').slice(demotionsBefore)).toEqual([
        { kind: 'demoted', ns: locked, term: 1, reason: 'lease-expired-locally' },
      ]);
      expect(g.lease(free)?.term).toBe(1);
      expect(g.isLeader(free)).toBe(true);
      // Past the database's lease too (read beside the lock), so the next grant is a new term.
      await waitFor('the lease to expire at the database', async () => (await liveLeaders(ds, [locked])).get(locked) === null, 10 * leaseMs, 50);
      await release();
      await waitFor('a new term after the lock', () => g.lease(locked)?.term === 2, 10_000);
      const lockedEvents = events.filter((e) => e.ns === locked).map((e) => `${e.kind} ${e.term}`);
      const term1 = renewedInTime ? ['started 1', 'elected 1', 'stopped 1', 'demoted 1'] : lockedEvents.slice(0, -2);
      expect(term1.join(', ')).toMatch(/^(started 1, elected 1, stopped 1, demoted 1(, )?)+$/);
      expect(lockedEvents).toEqual([...term1, 'started 2', 'elected 2']);
      expect(events.filter((e) => e.ns === free).map((e) => `${e.kind} ${e.term}`)).toEqual(['started 1', 'elected 1']);
      expect(errors.filter((e) => !/has not answered|elect failed/.test(e.message))).toEqual([]);
    }, 180_000);
  },
  { kinds: ['postgres', 'mariadb'] },
);
