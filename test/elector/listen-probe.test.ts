/**
 * PostgreSQL: LISTEN's delivery probe (a NOTIFY sent through the DataSource's pool) that has to
 * wait for a pooled connection longer than the probe's timeout — every connection busy, as in a
 * failover when statements queue — is not a pooler that swallowed it: the wait counts from the
 * NOTIFY's commit, and LISTEN stays on.
 */
import { ElectionService, LeaderElector, type LeaderElectorError } from 'gemstone-utils';
import { describeEachDatabase, sleep } from '../support/databases';
import { ns as freshNs } from '../support/rows';
import { waitFor } from './helpers';

describeEachDatabase(
  'LISTEN probe behind a busy pool',
  (db) => {
    test('a probe that waited longer than DEFAULT_LISTEN_PROBE_TIMEOUT_MS for a connection still finds LISTEN delivering', async () => {
      // One pooled connection, busy past the probe's timeout (5 s) while the elector starts.
      const ds = await db.connect({ extra: { max: 1 } } as never);
      const other = new ElectionService(await db.connect());
      const ns = freshNs();
      const busy = ds.query('SELECT pg_sleep(6)');
      const errors: LeaderElectorError[] = [];
      const leaderEvents: Array<{ leaderId: string | null; at: number }> = [];
      const elector = new LeaderElector({ dataSource: ds, ns, expireSeconds: 15, intervalMs: 5_000 });
      elector.on('error', (error) => errors.push(error));
      elector.on('leader', (leaderId) => leaderEvents.push({ leaderId, at: Date.now() }));
      try {
        await Promise.all([busy, elector.start()]);
        expect(elector.isLeader).toBe(true);
        // The probe went out once the connection was free: give it its whole timeout after that.
        await sleep(5_500);
        expect(errors.map((e) => e.message)).toEqual([]);

        // LISTEN delivers: a vacancy is seen at once (the next tick, seconds away, would take the
        // lease again instead of reporting it).
        const from = leaderEvents.length;
        await other.resign(elector.candidateId, { ns });
        await waitFor('the vacancy announced by NOTIFY', () => leaderEvents.slice(from).some((e) => e.leaderId === null), 1_000, 10);
      } finally {
        await elector.stop();
      }
    }, 60_000);
  },
  { kinds: ['postgres'] },
);
