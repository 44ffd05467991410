/**
 * A tick that meets a leader row locked by another transaction's takeover must not leave that
 * takeover's term open: per namespace the history's terms stay contiguous, every term but the
 * last is closed, and no two overlap. The takeover is made by hand in a transaction held open
 * across the group's ticks, then committed with its lease already lapsed; the group then takes
 * the next term and must close the hand-made one. Decided by the history rows.
 */
import type { DataSource, QueryRunner } from 'typeorm';
import type { LeaderElectorGroup } from 'gemstone-utils';
import { describeEachDatabase, query, sleep } from '../support/databases';
import { ns as freshNs } from '../support/rows';
import { namespaces, recordingGroup, waitFor } from './helpers';

const EXPIRE = 3;
const INTERVAL = 300;

type HistoryRow = { ns: string; term: number | string; acquired_at: Date | string; ended_at: Date | string | null };

/** Per namespace: terms 1..n contiguous, all but the last closed, each ending no later than the next begins. */
export function historyViolations(rows: readonly HistoryRow[]): string[] {
  const byNs = new Map<string, HistoryRow[]>();
  for (const row of rows) byNs.set(row.ns, [...(byNs.get(row.ns) ?? []), row]);
  const violations: string[] = [];
  for (const [ns, list] of byNs) {
    list.sort((a, b) => Number(a.term) - Number(b.term));
    list.forEach((row, i) => {
      if (Number(row.term) !== i + 1) violations.push(`${ns}: term ${row.term} at position ${i + 1}`);
      const next = list[i + 1];
      if (!next) return;
      if (row.ended_at === null) violations.push(`${ns}: term ${row.term} open when term ${next.term} began`);
      else if (new Date(row.ended_at).getTime() > new Date(next.acquired_at).getTime()) violations.push(`${ns}: term ${row.term} overlaps term ${next.term}`);
    });
  }
  return violations;
}

describeEachDatabase(
  'LeaderElectorGroup history under a concurrent takeover',
  (db) => {
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

    test('a takeover committed while a tick met its lock is closed when the group takes the next term', async () => {
      const pg = db.kind === 'postgres';
      const now = pg ? 'clock_timestamp()' : 'UTC_TIMESTAMP(6)';
      const p = (i: number) => (pg ? `$${i}` : '?');
      const names = namespaces(freshNs(), 20);
      await query(ds, `INSERT INTO gemstone_election_leader (ns, leader_id, lease_expires_at, updated_at, term) VALUES ${names.map(() => `(?, NULL, NULL, ${now}, 0)`).join(', ')}`, names);

      // Another candidate takes term 1 of every namespace with a lease that has already lapsed, and holds the locks.
      runner = ds.createQueryRunner();
      await runner.connect();
      await runner.startTransaction();
      for (const ns of names) {
        await runner.query(`SELECT ns FROM gemstone_election_leader WHERE ns = ${p(1)} FOR UPDATE`, [ns]);
        await runner.query(`UPDATE gemstone_election_leader SET leader_id = ${p(1)}, term = 1, lease_expires_at = ${now}, updated_at = ${now} WHERE ns = ${p(2)}`, ['other', ns]);
        await runner.query(
          `INSERT INTO gemstone_election_history (ns, term, leader_id, acquired_at, ended_at, end_reason) VALUES (${p(1)}, 1, ${p(2)}, ${now}, NULL, NULL)`,
          [ns, 'other'],
        );
      }

      const { group: g, errors } = recordingGroup(ds, { namespaces: names, expireSeconds: EXPIRE, intervalMs: INTERVAL });
      groups.push(g);
      const started = g.start();
      // Ticks meet the locks (waiting on them, or passing them by) for a while.
      await sleep(4 * INTERVAL);
      await runner.commitTransaction();
      await started;
      await waitFor('the group leads term 2 everywhere', () => names.every((ns) => g.lease(ns)?.term === 2), 30_000);
      expect(errors).toEqual([]);

      const rows = await query<HistoryRow>(ds, `SELECT ns, term, acquired_at, ended_at FROM gemstone_election_history WHERE ns IN (${names.map(() => '?').join(', ')})`, names);
      expect(rows).toHaveLength(2 * names.length);
      expect(historyViolations(rows)).toEqual([]);
    }, 60_000);

    test('a renewal whose lease ran out while its tick waited is a new term, the lapsed one closed at its lease end', async () => {
      const pg = db.kind === 'postgres';
      const p = (i: number) => (pg ? `$${i}` : '?');
      const names = namespaces(freshNs(), 3);
      const lease = 1;
      const { group: g, errors } = recordingGroup(ds, { namespaces: names, expireSeconds: lease, intervalMs: 200 });
      groups.push(g);
      await g.start();
      await waitFor('the group leads term 1 everywhere', () => names.every((ns) => g.lease(ns)?.term === 1), 10_000);
      // Another transaction holds the group's candidate rows: its next tick waits on them (its
      // heartbeat) past the lease's end, then goes on.
      runner = ds.createQueryRunner();
      await runner.connect();
      await runner.startTransaction();
      for (const ns of names) {
        await runner.query(`SELECT ns FROM gemstone_election_candidate WHERE ns = ${p(1)} AND candidate_id = ${p(2)} FOR UPDATE`, [ns, g.candidateId]);
      }
      await sleep(lease * 1000 + 800);
      await runner.commitTransaction();
      await waitFor('the group leads again', () => names.every((ns) => g.isLeader(ns)), 10_000);
      expect(errors.filter((e) => !/has not answered|elect failed/.test(e.message))).toEqual([]);

      const rows = await query<HistoryRow & { end_reason: string | null }>(
        ds,
        `SELECT ns, term, acquired_at, ended_at, end_reason FROM gemstone_election_history WHERE ns IN (${names.map(() => '?').join(', ')})`,
        names,
      );
      expect(historyViolations(rows)).toEqual([]);
      for (const ns of names) {
        // Never the lapsed term resurrected: the lease now held is a later one.
        expect(g.lease(ns)!.term).toBeGreaterThanOrEqual(2);
        const first = rows.find((r) => r.ns === ns && Number(r.term) === 1)!;
        expect(first.end_reason).toBe('expired');
      }
    }, 60_000);
  },
  { kinds: ['postgres', 'mariadb'] },
);
