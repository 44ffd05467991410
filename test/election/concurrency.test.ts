/**
 * Racing elects on a fresh namespace never surface a duplicate-key error,
 * never abort a caller's transaction, and produce exactly one leader with term 1.
 */
import { spawn } from 'child_process';
import * as path from 'path';
import type { DataSource, DataSourceOptions } from 'typeorm';
import { ElectionService, type ElectOutcome } from 'gemstone-utils';
import { forceLockedElect } from '../../dist/src/election/paths';
import { describeEachDatabase, inCallerTransaction, query, uuid } from '../support/databases';
import { ns as freshNs } from '../support/rows';

const RACERS = 48;

describeEachDatabase('concurrent elect', (db) => {
  let ds: DataSource;
  let svc: ElectionService;

  beforeAll(async () => {
    // One connection per racer, as separate processes would have.
    const pool = db.kind === 'sqlite' ? {} : ({ poolSize: RACERS + 4 } as Partial<DataSourceOptions>);
    ds = await db.connect(pool);
    svc = new ElectionService(ds);
  });

  async function expectOneLeader(ns: string, leaders: string[], ids: string[]) {
    expect(new Set(leaders).size).toBe(1);
    expect(ids).toContain(leaders[0]);
    const info = await svc.getLeader({ ns });
    expect(info).toMatchObject({ leaderId: leaders[0], term: 1 });
    const rows = await query(ds, 'SELECT COUNT(*) AS n FROM gemstone_election_leader WHERE ns = ?', [ns]);
    expect(Number(rows[0]!.n)).toBe(1);
    expect(await svc.listCandidates({ ns })).toEqual([...ids].sort());
  }

  test(`${RACERS} concurrent elects on a fresh namespace: one leader, term 1, no error`, async () => {
    const ns = freshNs();
    const ids = Array.from({ length: RACERS }, uuid);
    const results = await Promise.allSettled(ids.map((id) => svc.elect(id, { ns })));
    const errors = results.filter((r) => r.status === 'rejected');
    expect(errors).toEqual([]);
    await expectOneLeader(
      ns,
      results.map((r) => (r as PromiseFulfilledResult<string>).value),
      ids,
    );
  });

  // Not on SQLite: every QueryRunner of a TypeORM SQLite DataSource shares one connection, so an
  // application cannot hold concurrent transactions there at all (TypeORM's limit, not ours).
  if (db.kind !== 'sqlite') test(`${RACERS} concurrent elects, each inside its own caller transaction: none aborted, one leader`, async () => {
    const ns = freshNs();
    const ids = Array.from({ length: RACERS }, uuid);
    const results = await Promise.allSettled(
      ids.map((id) =>
        inCallerTransaction(ds, async (runner) => {
          const leader = await svc.elect(id, { ns, session: runner });
          // The caller's transaction is intact: it can still run statements and commit.
          await runner.query('SELECT 1');
          return leader;
        }),
      ),
    );
    const errors = results.filter((r) => r.status === 'rejected').map((r) => String((r as PromiseRejectedResult).reason));
    expect(errors).toEqual([]);
    await expectOneLeader(
      ns,
      results.map((r) => (r as PromiseFulfilledResult<string>).value),
      ids,
    );
  });

  test('concurrent elect, resign and unregister on one namespace: every term has exactly one holder', async () => {
    const ns = freshNs();
    const ids = Array.from({ length: 8 }, uuid);
    const rounds = 6;
    const errors: unknown[] = [];
    const acquisitions: Array<{ term: number; id: string }> = [];
    await Promise.all(
      ids.map(async (id, i) => {
        for (let round = 0; round < rounds; round++) {
          try {
            const outcome = await svc.electOutcome(id, { ns });
            if (outcome.acquired) acquisitions.push({ term: outcome.term, id });
            if (outcome.isLeader && (i + round) % 3 === 0) await svc.resign(id, { ns });
            if ((i + round) % 5 === 0) await svc.unregisterCandidate(id, { ns });
          } catch (error) {
            errors.push(error);
          }
        }
      }),
    );
    expect(errors).toEqual([]);
    // Each acquisition raised the term by one under the row lock: the terms handed out are
    // 1..n with no term granted twice, and nothing else moved the term.
    const terms = acquisitions.map((a) => a.term).sort((a, b) => a - b);
    expect(terms.length).toBeGreaterThan(1); // the resigns forced several hand-overs
    expect(terms).toEqual(terms.map((_, i) => i + 1));
    const [row] = await query(ds, 'SELECT term FROM gemstone_election_leader WHERE ns = ?', [ns]);
    expect(Number(row!.term)).toBe(terms.length);
    const leader = await svc.getLeader({ ns });
    if (leader) expect(acquisitions.find((a) => a.term === leader.term)?.id).toBe(leader.leaderId);
  });

  for (const path of ['usual', 'locked'] as const) {
    test(`racing takers of a new namespace, a lapsed lease and a vacancy (${path} path): the one that leads answers the term it wrote, the others follow it`, async () => {
      const service = new ElectionService(ds);
      if (path === 'locked') forceLockedElect(service);
      const ns = freshNs();
      const ids = Array.from({ length: 8 }, uuid);
      /** Every racer elects at once; exactly one leads, under `term`, as the leader row and the history say. */
      async function race(term: number): Promise<void> {
        const outcomes: ElectOutcome[] = await Promise.all(ids.map((id) => service.electOutcome(id, { ns })));
        const leading = outcomes.filter((o) => o.isLeader);
        expect(leading).toEqual([expect.objectContaining({ term, acquired: true, leaderId: expect.any(String) })]);
        const winner = leading[0]!.leaderId;
        expect(outcomes.filter((o) => !o.isLeader).map((o) => [o.leaderId, o.term])).toEqual(Array(ids.length - 1).fill([winner, term]));
        const [row] = await query(ds, 'SELECT leader_id, term FROM gemstone_election_leader WHERE ns = ?', [ns]);
        expect([row!.leader_id, Number(row!.term)]).toEqual([winner, term]);
        const history = await query(ds, 'SELECT leader_id FROM gemstone_election_history WHERE ns = ? AND term = ?', [ns, term]);
        expect(history.map((h) => h.leader_id)).toEqual([winner]);
      }
      // The leader row is inserted by the race itself.
      await race(1);
      // The lease lapsed, by construction: its end set to its last write, behind the library's back.
      await query(ds, 'UPDATE gemstone_election_leader SET lease_expires_at = updated_at WHERE ns = ?', [ns]);
      await race(2);
      const [row] = await query(ds, 'SELECT leader_id FROM gemstone_election_leader WHERE ns = ?', [ns]);
      expect(await service.resign(String(row!.leader_id), { ns })).toBe(true);
      await race(3);
    });
  }

  if (db.kind === 'sqlite' && db.shared) {
    test('several DataSources on one SQLite file in one process: one leader, no error, and no call blocks the event loop', async () => {
      const ns = freshNs();
      const sources = await Promise.all([1, 2, 3, 4, 5].map(() => db.connect()));
      // A library transaction is one synchronous step (better-sqlite3) or one queued program
      // (sqlite3), and it never waits for another connection's write lock inside the driver:
      // with better-sqlite3 such a wait (busy_timeout) would freeze the event loop, and with it
      // the holder if it lives in this process. Contention is retried asynchronously instead,
      // so the longest gap between two 5 ms timer callbacks stays short.
      let last = Date.now();
      let lagMs = 0;
      const timer = setInterval(() => {
        lagMs = Math.max(lagMs, Date.now() - last);
        last = Date.now();
      }, 5);
      try {
        const leaders = await Promise.all(sources.flatMap((source) => [1, 2, 3, 4].map(() => new ElectionService(source).elect(uuid(), { ns }))));
        expect(new Set(leaders).size).toBe(1);
      } finally {
        clearInterval(timer);
      }
      // A synchronous wait would last busy_timeout (5 s); 1.5 s leaves room for a loaded machine.
      expect(lagMs).toBeLessThan(1500);
    });
  }

  if (db.shared) {
    test('several processes electing on one fresh namespace at once: one leader, term 1, no error', async () => {
      const ns = freshNs();
      const processes = 4;
      const perProcess = 12;
      const script = path.join(__dirname, 'fixtures', 'elect-many.js');
      const children = Array.from({ length: processes }, () =>
        spawn(process.execPath, ['-r', path.join(__dirname, '..', 'support', 'typeorm-line.js'), script, db.url(), ns, String(perProcess)], {
          stdio: ['pipe', 'pipe', 'inherit'],
        }),
      );
      const lines = children.map((child) => {
        let buffer = '';
        const lines: string[] = [];
        const waiters: Array<() => void> = [];
        child.stdout!.on('data', (chunk: Buffer) => {
          buffer += chunk.toString();
          let newline: number;
          while ((newline = buffer.indexOf('\n')) >= 0) {
            lines.push(buffer.slice(0, newline));
            buffer = buffer.slice(newline + 1);
            waiters.splice(0).forEach((wake) => wake());
          }
        });
        return {
          next: async (): Promise<string> => {
            while (lines.length === 0) {
              if (child.exitCode !== null) throw new Error(`child exited with ${child.exitCode}`);
              await new Promise<void>((wake) => {
                waiters.push(wake);
                child.once('exit', () => wake());
              });
            }
            return lines.shift()!;
          },
        };
      });
      // Start together: every child has connected before any elects.
      expect(await Promise.all(lines.map((l) => l.next()))).toEqual(Array(processes).fill('ready'));
      children.forEach((child) => child.stdin!.end('go\n'));
      const reports = (await Promise.all(lines.map((l) => l.next()))).map(
        (line) => JSON.parse(line) as { errors: string[]; outcomes: Array<{ leaderId: string; term: number }> },
      );
      expect(reports.flatMap((r) => r.errors)).toEqual([]);
      const outcomes = reports.flatMap((r) => r.outcomes);
      expect(outcomes).toHaveLength(processes * perProcess);
      expect(new Set(outcomes.map((o) => o.leaderId)).size).toBe(1);
      expect(new Set(outcomes.map((o) => o.term))).toEqual(new Set([1]));
      expect(await svc.listCandidates({ ns })).toHaveLength(processes * perProcess);
    });
  }
});
