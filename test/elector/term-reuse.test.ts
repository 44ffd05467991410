/**
 * A term number can be granted twice when the database loses a grant it acknowledged (a failover
 * to a replica that had not received the commit). The elector must treat a second grant of the
 * number it holds as a new leadership, and news of another leader at its own term as a loss.
 */
import type { DataSource } from 'typeorm';
import { describeEachDatabase, query, uuid } from '../support/databases';
import { ns as freshNs } from '../support/rows';
import { ElectionService, LeaderElectorGroup } from 'gemstone-utils';
import { kinds, recordingElector, waitFor } from './helpers';

describeEachDatabase('LeaderElector and a term granted twice', (db) => {
  let ds: DataSource;
  beforeAll(async () => {
    ds = await db.connect();
  });

  test('an acquisition of the term it believes it holds ends the old leadership and starts a new one', async () => {
    const ns = freshNs();
    const { elector, log } = recordingElector(ds, { ns, expireSeconds: 3, intervalMs: 200 });
    await elector.start();
    try {
      expect(elector.term).toBe(1);
      const { lease: firstLease } = await firstLeaseOf(elector);
      // Behind its back, the row goes back to before its grant: another candidate's expired term 0.
      await query(ds, 'UPDATE gemstone_election_leader SET leader_id = ?, term = 0, lease_expires_at = updated_at WHERE ns = ?', [uuid(), ns]);
      const mark = log.length;
      // Its next tick acquires again and gets term 1 once more: acquired, not renewed.
      await waitFor('a second elected event', () => log.slice(mark).some((r) => r.kind === 'elected'), 5_000);
      expect(kinds(log.slice(mark), 'demoted', 'elected')).toEqual(['demoted', 'elected']);
      expect(log.slice(mark).find((r) => r.kind === 'demoted')).toMatchObject({ term: 1, reason: 'lost' });
      expect(firstLease.signal.aborted).toBe(true);
      expect(elector.isLeader).toBe(true);
      expect(elector.term).toBe(1);
    } finally {
      await elector.stop();
    }
  });
});

describeEachDatabase('LeaderElector and LeaderElectorGroup answered a lease under term 0', (db) => {
  let ds: DataSource;
  beforeAll(async () => {
    ds = await db.connect();
  });

  /**
   * A live lease of `me` under term 0, which no grant writes (a vacant row starts at 0, each grant
   * adds 1): the candidate's elect renews it and answers that it leads under term 0.
   */
  async function leaseUnderTermZero(ns: string, me: string): Promise<void> {
    expect(await new ElectionService(ds).elect(me, { ns })).toBe(me);
    await query(ds, 'UPDATE gemstone_election_leader SET term = 0 WHERE ns = ?', [ns]);
    await query(ds, 'DELETE FROM gemstone_election_history WHERE ns = ?', [ns]);
  }

  test('the elector never leads under it: the answer is reported, the lease given up, and the next grant is term 1', async () => {
    const ns = freshNs();
    const me = uuid();
    await leaseUnderTermZero(ns, me);
    const { elector, log } = recordingElector(ds, { ns, candidateId: me, expireSeconds: 3, intervalMs: 200 });
    await elector.start();
    try {
      await waitFor('a leadership', () => log.some((r) => r.kind === 'elected'), 5_000);
      expect(log.filter((r) => r.kind === 'elected' || r.kind === 'started' || r.kind === 'demoted')).toEqual([
        expect.objectContaining({ kind: 'started', term: 1 }),
        { kind: 'elected', term: 1 },
      ]);
      const errors = log.flatMap((r) => (r.kind === 'error' ? [r.error] : []));
      expect(errors.length).toBeGreaterThanOrEqual(1);
      for (const error of errors) {
        expect(error).toMatchObject({ phase: 'tick', ns });
        expect(error.message).toMatch(/leads under term 0, which no grant hands out/);
      }
      expect(elector.term).toBe(1);
      const [row] = await query(ds, 'SELECT leader_id, term FROM gemstone_election_leader WHERE ns = ?', [ns]);
      expect([row!.leader_id, Number(row!.term)]).toEqual([me, 1]);
    } finally {
      await elector.stop();
    }
  });

  test('the group never leads under it either', async () => {
    const ns = freshNs();
    const me = uuid();
    await leaseUnderTermZero(ns, me);
    const group = new LeaderElectorGroup({ dataSource: ds, namespaces: [ns], candidateId: me, expireSeconds: 3, intervalMs: 200 });
    const elected: number[] = [];
    const errors: Array<{ phase: string; namespace: string | null; message: string }> = [];
    group.on('elected', (lease) => elected.push(lease.term));
    group.on('error', (error) => errors.push(error));
    await group.start();
    try {
      await waitFor('a leadership', () => elected.length > 0, 5_000);
      expect(elected).toEqual([1]);
      expect(errors.length).toBeGreaterThanOrEqual(1);
      for (const error of errors) {
        expect(error).toMatchObject({ phase: 'tick', namespace: ns });
        expect(error.message).toMatch(/leads under term 0, which no grant hands out/);
      }
    } finally {
      await group.stop();
    }
  });
});

describeEachDatabase('followers and a term granted twice', (db) => {
  let ds: DataSource;
  beforeAll(async () => {
    ds = await db.connect();
  });

  /** What a failover that lost term 1's grant to `from` and granted term 1 to `to` leaves behind. */
  const regrant = (ns: string, to: string) => query(ds, 'UPDATE gemstone_election_leader SET leader_id = ? WHERE ns = ?', [to, ns]);

  test("a following LeaderElector reports the term's new holder (it kept the first holder, as stale news, before)", async () => {
    const ns = freshNs();
    const [first, second] = [uuid(), uuid()];
    const holder = recordingElector(ds, { ns, candidateId: first, expireSeconds: 30, intervalMs: 10_000 });
    await holder.elector.start();
    const follower = recordingElector(ds, { ns, expireSeconds: 30, intervalMs: 200, listen: false });
    const seen: Array<[string | null, number | null]> = [];
    follower.elector.on('leader', (leaderId, term) => seen.push([leaderId, term]));
    await follower.elector.start();
    try {
      await waitFor('the follower to see the first holder', () => follower.elector.leaderId === first, 5_000);
      await regrant(ns, second);
      await waitFor('the follower to see the second holder of term 1', () => follower.elector.leaderId === second, 5_000);
      expect(seen).toEqual([
        [first, 1],
        [second, 1],
      ]);
    } finally {
      await follower.elector.stop();
      await holder.elector.stop();
    }
  });

  test("a following LeaderElectorGroup reports the term's new holder", async () => {
    const ns = freshNs();
    const [first, second] = [uuid(), uuid()];
    const holder = recordingElector(ds, { ns, candidateId: first, expireSeconds: 30, intervalMs: 10_000 });
    await holder.elector.start();
    const group = new LeaderElectorGroup({ dataSource: ds, namespaces: [ns], expireSeconds: 30, intervalMs: 200, listen: false });
    const seen: Array<[string | null, number | null]> = [];
    group.on('leader', (name, leaderId, term) => {
      if (name === ns) seen.push([leaderId, term]);
    });
    group.on('error', () => undefined);
    await group.start();
    try {
      await waitFor('the group to see the first holder', () => seen.some(([id]) => id === first), 5_000);
      await regrant(ns, second);
      await waitFor('the group to see the second holder of term 1', () => seen.some(([id]) => id === second), 5_000);
      expect(seen).toEqual([
        [first, 1],
        [second, 1],
      ]);
    } finally {
      await group.stop();
      await holder.elector.stop();
    }
  });
});

describeEachDatabase(
  'LeaderElector and NOTIFY of another leader at its own term',
  (db) => {
    let ds: DataSource;
    beforeAll(async () => {
      ds = await db.connect();
    });

    test('news that someone else holds the same term demotes at once', async () => {
      const ns = freshNs();
      // Ticks far apart: only the NOTIFY can demote it within the wait below.
      const { elector, log } = recordingElector(ds, { ns, expireSeconds: 30, intervalMs: 10_000 });
      await elector.start();
      try {
        expect(elector.term).toBe(1);
        const [{ schema }] = await query<{ schema: string }>(ds, 'SELECT current_schema() AS schema');
        const payload = JSON.stringify({ schema, table: 'gemstone_election_leader', ns, leaderId: uuid(), term: 1 });
        await query(ds, 'SELECT pg_notify(?, ?)', ['gemstone_election', payload]);
        await waitFor('the demotion', () => log.some((r) => r.kind === 'demoted'), 3_000);
        expect(log.find((r) => r.kind === 'demoted')).toMatchObject({ term: 1, reason: 'lost' });
        expect(elector.isLeader).toBe(false);
      } finally {
        await elector.stop();
      }
    });
  },
  { kinds: ['postgres'] },
);

async function firstLeaseOf(elector: import('gemstone-utils').LeaderElector): Promise<{ lease: import('gemstone-utils').Lease }> {
  const lease = await elector.runIfLeader((l) => l);
  if (!lease) throw new Error('not the leader');
  return { lease };
}
