/**
 * `withTransaction`: the application's transaction helper for fenced leader-only writes — safe
 * beside the library's own work on SQLite's single shared connection, retried on conflicts.
 */
import type { DataSource } from 'typeorm';
import { ElectionService, ValidationError, withTransaction } from 'gemstone-utils';
import { describeEachDatabase, query, sleep, uuid } from '../support/databases';
import { ns as freshNs } from '../support/rows';

/** Resolves every arrival once `parties` have arrived. */
function barrier(parties: number): { arrive(): Promise<void> } {
  const all = deferred();
  let arrived = 0;
  return {
    arrive() {
      if (++arrived >= parties) all.resolve();
      return all.promise;
    },
  };
}

/** A promise with its resolve function, for handshakes between concurrent transactions. */
function deferred(): { promise: Promise<void>; resolve: () => void } {
  let resolve!: () => void;
  const promise = new Promise<void>((r) => (resolve = r));
  return { promise, resolve };
}

describeEachDatabase('withTransaction', (db) => {
  let ds: DataSource;
  const p = (i: number) => (db.kind === 'postgres' ? `$${i}` : '?');

  beforeAll(async () => {
    ds = await db.connect();
    await query(ds, 'CREATE TABLE wt_ledger (id varchar(64) NOT NULL PRIMARY KEY, n integer NOT NULL)');
  });

  test('commits the work, and rolls it back when it throws', async () => {
    const [a, b] = [uuid(), uuid()];
    expect(await withTransaction(ds, async (m) => {
      await m.query(`INSERT INTO wt_ledger (id, n) VALUES (${p(1)}, 1)`, [a]);
      return 'done';
    })).toBe('done');
    await expect(
      withTransaction(ds, async (m) => {
        await m.query(`INSERT INTO wt_ledger (id, n) VALUES (${p(1)}, 1)`, [b]);
        throw new Error('application failure');
      }),
    ).rejects.toThrow('application failure');
    const rows = await query(ds, 'SELECT id FROM wt_ledger WHERE id IN (?, ?)', [a, b]);
    expect(rows.map((r) => r.id)).toEqual([a]);
  });

  test('a unique violation in the work is surfaced, not rerun', async () => {
    const id = uuid();
    let runs = 0;
    await expect(
      withTransaction(ds, async (m) => {
        runs++;
        await m.query(`INSERT INTO wt_ledger (id, n) VALUES (${p(1)}, 1)`, [id]);
        await m.query(`INSERT INTO wt_ledger (id, n) VALUES (${p(1)}, 2)`, [id]);
      }),
    ).rejects.toThrow();
    expect(runs).toBe(1);
  });

  test('bad arguments are ValidationErrors naming them', async () => {
    await expect(withTransaction({} as never, async () => 1)).rejects.toMatchObject({ name: 'ValidationError', parameter: 'dataSource' });
    await expect(withTransaction(ds, 'work' as never)).rejects.toBeInstanceOf(ValidationError);
    await expect(withTransaction(ds, async () => 1, { conflictRetries: -1 })).rejects.toMatchObject({ parameter: 'options.conflictRetries' });
  });

  test('fenced writes beside a busy elector on the same DataSource: no transaction ever collides', async () => {
    const ns = freshNs();
    const leader = uuid();
    const svc = new ElectionService(ds);
    await svc.elect(leader, { ns });
    let electing = true;
    const errors: unknown[] = [];
    const ticks = (async () => {
      while (electing) {
        await svc.elect(leader, { ns }).catch((e: unknown) => errors.push(e));
        await svc.elect(uuid(), { ns }).catch((e: unknown) => errors.push(e));
      }
    })();
    const writes = Array.from({ length: 30 }, (_, i) =>
      withTransaction(ds, async (session) => {
        const lease = await svc.assertLeader(leader, { ns, session });
        await session.query(`INSERT INTO wt_ledger (id, n) VALUES (${p(1)}, ${p(2)})`, [`${ns}-${i}`, lease.term]);
      }).catch((e: unknown) => errors.push(e)),
    );
    await Promise.all(writes);
    electing = false;
    await ticks;
    expect(errors).toEqual([]);
    const rows = await query(ds, `SELECT COUNT(*) AS n FROM wt_ledger WHERE id LIKE ?`, [`${ns}-%`]);
    expect(Number(rows[0]!.n)).toBe(30);
  });

  if (db.kind !== 'sqlite') {
    test('a deadlock victim is rerun and both transactions commit; with conflictRetries 0 it is surfaced', async () => {
      const [x, y] = [uuid(), uuid()];
      await query(ds, 'INSERT INTO wt_ledger (id, n) VALUES (?, 0), (?, 0)', [x, y]);
      // Each first run holds its first row before either asks for its second (a handshake, not a
      // sleep: a loaded machine reorders sleeps), so the two always cross.
      const crossed = (first: string, second: string, bothHold: { arrive(): Promise<void> }, retries?: number) => {
        let runs = 0;
        const done = withTransaction(
          ds,
          async (m) => {
            runs++;
            await m.query(`UPDATE wt_ledger SET n = n + 1 WHERE id = ${p(1)}`, [first]);
            if (runs === 1) await bothHold.arrive();
            await m.query(`UPDATE wt_ledger SET n = n + 1 WHERE id = ${p(1)}`, [second]);
          },
          retries === undefined ? {} : { conflictRetries: retries },
        );
        return { done, runs: () => runs };
      };
      const firstPair = barrier(2);
      const one = crossed(x, y, firstPair);
      const two = crossed(y, x, firstPair);
      await Promise.all([one.done, two.done]);
      expect(one.runs() + two.runs()).toBeGreaterThanOrEqual(3); // someone was the victim and ran again
      const rows = await query(ds, 'SELECT n FROM wt_ledger WHERE id IN (?, ?)', [x, y]);
      expect(rows.map((r) => Number(r.n))).toEqual([2, 2]);

      const secondPair = barrier(2);
      const three = crossed(x, y, secondPair, 0);
      const four = crossed(y, x, secondPair, 0);
      const results = await Promise.allSettled([three.done, four.done]);
      expect(results.filter((r) => r.status === 'rejected')).toHaveLength(1);
    });

    test('a conflict that a library call inside the work reports as SerializationFailureError reruns the work too', async () => {
      // A deadlock whose victim waits in assertLeader: the light transaction on MySQL/MariaDB (the
      // other one wrote many rows), the first waiter on PostgreSQL (its deadlock check runs first).
      const ns = freshNs();
      const leader = uuid();
      const svc = new ElectionService(ds);
      await svc.elect(leader, { ns });
      const [x, bulk] = [uuid(), uuid()];
      await query(ds, 'INSERT INTO wt_ledger (id, n) VALUES (?, 0)', [x]);
      let lightRuns = 0;
      const errors: unknown[] = [];
      // The order is forced by handshakes, not sleeps (a loaded machine reorders sleeps): light
      // holds x, heavy then holds the leader row, light waits for the leader row, heavy for x.
      const lightHoldsX = deferred();
      const heavyHoldsLeaderRow = deferred();
      const light = withTransaction(ds, async (m) => {
        lightRuns++;
        await m.query(`UPDATE wt_ledger SET n = n + 1 WHERE id = ${p(1)}`, [x]);
        lightHoldsX.resolve();
        await heavyHoldsLeaderRow.promise;
        await svc.assertLeader(leader, { ns, session: m }).catch((error: unknown) => {
          errors.push(error);
          throw error;
        });
      });
      const heavy = (async () => {
        await lightHoldsX.promise;
        return withTransaction(ds, async (m) => {
          for (let i = 0; i < 50; i++) await m.query(`INSERT INTO wt_ledger (id, n) VALUES (${p(1)}, 0)`, [`${bulk}-${i}`]);
          await svc.elect(leader, { ns, session: m }); // a renewal: locks the leader row for update
          heavyHoldsLeaderRow.resolve();
          await sleep(300); // light is waiting for the leader row first
          await m.query(`UPDATE wt_ledger SET n = n + 1 WHERE id = ${p(1)}`, [x]);
        });
      })();
      await Promise.all([light, heavy]);
      expect(lightRuns).toBe(2);
      expect(errors.map((e) => (e as Error).name)).toEqual(['SerializationFailureError']);
      const rows = await query(ds, 'SELECT n FROM wt_ledger WHERE id = ?', [x]);
      expect(Number(rows[0]!.n)).toBe(2);
    });
  }
});
