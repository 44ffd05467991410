/**
 * `balance: true`: the live eligible groups of the same namespaces split them evenly (⌊N/k⌋ or
 * ⌈N/k⌉ each) by voluntary hand-over, rebalance when one joins or dies, and then stay put (no
 * flapping). Counts are read from the database; the time to settle is printed, bounds are generous.
 */
import type { DataSource } from 'typeorm';
import type { LeaderElectorGroup } from 'gemstone-utils';
import { initDb } from 'gemstone-utils';
import { describeEachDatabase, query, sleep } from '../support/databases';
import { ns as freshNs } from '../support/rows';
import { countsByLeader, namespaces, recordingGroup, TransactionCounter, waitFor } from './helpers';

const EXPIRE = 5;
const INTERVAL = 1_000;
const N = 1_000;

describeEachDatabase(
  'LeaderElectorGroup balance',
  (db) => {
    const groups: LeaderElectorGroup[] = [];
    afterEach(async () => {
      await Promise.all(groups.splice(0).map((g) => g.stop()));
    });

    function settled(counts: Map<string | null, number>, members: readonly string[], n: number): boolean {
      if ((counts.get(null) ?? 0) !== 0) return false;
      const k = members.length;
      return members.every((id) => {
        const held = counts.get(id) ?? 0;
        return held === Math.floor(n / k) || held === Math.ceil(n / k);
      });
    }

    test(`three groups split ${N} namespaces evenly, stay put, and two take over from one that dies`, async () => {
      const names = namespaces(freshNs(), N);
      const sources: DataSource[] = [await db.connect(), await db.connect(), await db.connect()];
      const recorded = sources.map((dataSource) => recordingGroup(dataSource, { namespaces: names, balance: true, expireSeconds: EXPIRE, intervalMs: INTERVAL }));
      groups.push(...recorded.map((r) => r.group));
      const ds = sources[0]!;
      const ids = recorded.map((r) => r.group.candidateId);

      await recorded[0]!.group.start();
      expect(recorded[0]!.group.leases.size).toBe(N); // alone: takes every namespace
      await recorded[1]!.group.start();
      await recorded[2]!.group.start();
      const joinedAt = performance.now();
      const took = await waitFor('an even split', async () => settled(await countsByLeader(ds, names), ids, N), 30_000, 200);
      console.log(`balance [${db.name}]: ${N} namespaces split 3 ways ${Math.round(took)} ms after the last join (tick ${INTERVAL} ms)`);
      const counts = await countsByLeader(ds, names);
      expect(ids.map((id) => counts.get(id)).sort()).toEqual([333, 333, 334]);
      // Within a few ticks of the last join (generous under load).
      expect(performance.now() - joinedAt).toBeLessThan(20 * INTERVAL);
      // Local views agree with the database.
      await waitFor('local views', () => recorded.every((r, i) => r.group.leases.size === counts.get(ids[i]!)), 10_000);

      // No flapping: three more ticks change nothing, in the database or in the groups' reports.
      const before = recorded.map((r) => r.events.length);
      await sleep(3.5 * INTERVAL);
      expect(await countsByLeader(ds, names)).toEqual(counts);
      expect(recorded.map((r) => r.events.length)).toEqual(before);

      // One dies without handing over (its DataSource is gone): after its leases run out the two
      // others split the namespaces 500/500.
      const dead = recorded[2]!;
      await sources[2]!.destroy();
      const diedAt = performance.now();
      const survivors = ids.slice(0, 2);
      const retook = await waitFor('an even split between the survivors', async () => settled(await countsByLeader(ds, names), survivors, N), 60_000, 200);
      console.log(`balance [${db.name}]: survivors split ${N} namespaces ${Math.round(retook)} ms after the crash (lease ${EXPIRE} s)`);
      expect(performance.now() - diedAt).toBeLessThan(EXPIRE * 1000 + 25 * INTERVAL);
      const after = await countsByLeader(ds, names);
      expect(survivors.map((id) => after.get(id))).toEqual([500, 500]);
      // The dead group ended its leaderships by its own deadline.
      expect(dead.group.leases.size).toBe(0);
      for (const r of recorded.slice(0, 2)) expect(r.errors).toEqual([]);
    });

    // SQLite vacates hand-overs in a transaction of their own after the tick.
    if (db.kind !== 'sqlite') test('hand-overs are vacated by a tick: every tick of the giving group is one transaction', async () => {
      const names = namespaces(freshNs(), 40);
      const counter = new TransactionCounter();
      const counted = db.track(await initDb(db.options({ logging: ['query'], logger: counter } as never)));
      const a = recordingGroup(counted, { namespaces: names, balance: true, expireSeconds: EXPIRE, intervalMs: INTERVAL, listen: false });
      const reader = await db.connect();
      const b = recordingGroup(reader, { namespaces: names, balance: true, expireSeconds: EXPIRE, intervalMs: INTERVAL });
      groups.push(a.group, b.group);
      // The transactions counted at each of a's ticks: one between any two.
      const marks: number[] = [];
      a.group.on('tick', () => void marks.push(counter.transactions));
      await a.group.start();
      expect(a.group.leases.size).toBe(40);
      // The loop prunes once after its first tick (a transaction of its own): let it pass.
      await sleep(300);
      counter.reset();
      marks.length = 0;
      await b.group.start();
      await waitFor('an even split', async () => settled(await countsByLeader(reader, names), [a.group.candidateId, b.group.candidateId], 40), 30_000, 200);
      const handedOver = a.events.filter((e) => e.kind === 'demoted' && e.reason === 'handed-over').length;
      expect(handedOver).toBe(20);
      const ticked = marks.length;
      await waitFor('two more ticks of a', () => marks.length >= ticked + 2, 30_000);
      const deltas = marks.slice(1).map((m, i) => m - marks[i]!);
      expect(deltas.length).toBeGreaterThanOrEqual(2);
      expect(deltas.filter((delta) => delta !== 1)).toEqual([]);
      const history = await query<{ n: number | string }>(reader, `SELECT COUNT(*) AS n FROM gemstone_election_history WHERE end_reason = 'handed-over' AND ns IN (${names.map(() => '?').join(', ')})`, names);
      expect(Number(history[0]!.n)).toBe(20);
      for (const r of [a, b]) expect(r.errors).toEqual([]);
    });

    test('a group that joins with a lower priority takes nothing; an ineligible one takes nothing', async () => {
      const names = namespaces(freshNs(), 30);
      const a = recordingGroup(await db.connect(), { namespaces: names, balance: true, expireSeconds: EXPIRE, intervalMs: INTERVAL, priority: 1 });
      const b = recordingGroup(await db.connect(), { namespaces: names, balance: true, expireSeconds: EXPIRE, intervalMs: INTERVAL });
      const c = recordingGroup(await db.connect(), { namespaces: names, balance: true, expireSeconds: EXPIRE, intervalMs: INTERVAL, eligible: false });
      groups.push(a.group, b.group, c.group);
      await a.group.start();
      await b.group.start();
      await c.group.start();
      await sleep(3.5 * INTERVAL);
      expect(a.group.leases.size).toBe(30);
      expect(b.group.leases.size).toBe(0);
      expect(c.group.leases.size).toBe(0);
      expect(b.events).toEqual([]);
      expect(c.events).toEqual([]);
      for (const r of [a, b, c]) expect(r.errors).toEqual([]);
    });
  },
  { sharedOnly: true },
);
