/**
 * SQLite: no statement of the group tick, the group's vacate or the single `elect` scans the
 * history table. History grows with every term until it is pruned, beside every namespace's; a
 * statement that scanned it made each tick cost the whole history times its namespaces (measured
 * by `npm run bench`: a 100-namespace tick took 150-215 ms instead of 2 ms beside the 6,000
 * closed terms of the hot-path suite, and 1,000 namespaces lost every lease). SQLite's own plan
 * (EXPLAIN QUERY PLAN) of every statement the library sent is checked, not a timing.
 */
import type { DataSource } from 'typeorm';
import { ElectionService } from 'gemstone-utils';
import { describeEachDatabase, query, sleep, uuid } from '../support/databases';
import { ns as freshNs } from '../support/rows';
import { recordingGroup } from './helpers';
import { QueryLog } from '../db/support/query-log';

const HISTORY = 'gemstone_election_history';

describeEachDatabase(
  'the history table read by key',
  (db) => {
    let ds: DataSource;
    let recorder: QueryLog;

    beforeAll(async () => {
      recorder = new QueryLog();
      ds = await db.connect({ logger: recorder });
    });

    test('no statement of a group tick, a vacate or an elect scans it', async () => {
      // Closed terms of other namespaces, as a long-running database has them.
      await query(ds, `WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 2000)
INSERT INTO gemstone_election_history (ns, term, leader_id, acquired_at, ended_at, end_reason)
SELECT 'old-' || i, 1, 'someone', '2026-01-01 00:00:00.000', '2026-01-01 00:00:10.000', 'expired' FROM n`);
      recorder.clear();
      const names = Array.from({ length: 5 }, () => freshNs());
      const { group, errors } = recordingGroup(ds, { namespaces: names, expireSeconds: 2, intervalMs: 200 });
      await group.start();
      try {
        for (let i = 0; i < 400 && group.leases.size < names.length; i++) await sleep(50);
        expect(group.leases.size).toBe(names.length);
      } finally {
        await group.stop();
      }
      // The single elect: acquire, renew, resign, take the vacancy, take a lapsed lease (T2).
      const svc = new ElectionService(ds, { expireSeconds: 1 });
      const ns = freshNs();
      const [a, b] = [uuid(), uuid()];
      await svc.elect(a, { ns });
      await svc.elect(a, { ns });
      await svc.resign(a, { ns });
      expect(await svc.elect(b, { ns })).toBe(b);
      await sleep(1200);
      expect(await svc.elect(a, { ns })).toBe(a);
      expect(errors).toEqual([]);

      const checked: string[] = [];
      const scans: string[] = [];
      const distinct = new Map(recorder.statements.map((text, i) => [text, recorder.parameters[i]!] as const));
      for (const [text, parameters] of distinct) {
        if (!text.includes(HISTORY) || !/^\s*(SELECT|INSERT|UPDATE|DELETE|WITH)\b/i.test(text)) continue;
        // The table and every alias the statement gives it.
        const names = new Set([HISTORY, ...[...text.matchAll(/"gemstone_election_history"\s+(?:AS\s+)?(\w+)/gi)].map((m) => m[1]!)]);
        const plan = await query<{ detail: string }>(ds, `EXPLAIN QUERY PLAN ${text}`, parameters);
        checked.push(text);
        for (const { detail } of plan) {
          const scanned = /^SCAN (\w+)/.exec(detail)?.[1];
          if (scanned && names.has(scanned)) scans.push(`${detail}\n  in: ${text.replace(/\s+/g, ' ')}`);
        }
      }
      // The group's tick and vacate and the single elect's takeover all wrote history here.
      expect(checked.length).toBeGreaterThanOrEqual(6);
      expect(scans).toEqual([]);
    }, 60_000);
  },
  { kinds: ['sqlite'] },
);
