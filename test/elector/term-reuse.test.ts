/**
 * A term number can be granted twice when the database loses a grant it acknowledged (a failover
 * to a replica that had not received the commit). The elector must treat a second grant of the
 * number it holds as a new leadership, and news of another leader at its own term as a loss.
 */
import type { DataSource } from 'typeorm';
import { describeEachDatabase, query, uuid } from '../support/databases';
import { ns as freshNs } from '../support/rows';
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
