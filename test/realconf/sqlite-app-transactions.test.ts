/**
 * SQLite: the library and the application share ONE connection per DataSource. The library's
 * transaction is never nested in the application's (a SAVEPOINT is not a transaction: an app
 * rollback would undo an acquisition the elector already reported), and the application's is
 * never nested in the library's.
 */
import { DataSource, EntitySchema } from 'typeorm';
import {
  DEFAULT_SQLITE_WAIT_MS,
  ElectionService,
  LeaderElector,
  SessionRequiredError,
  SqliteTransactionOpenError,
  withTransaction,
} from 'gemstone-utils';
import { describeEachDatabase, query, sleep, uuid } from '../support/databases';
import { ns as freshNs } from '../support/rows';

interface AppNote {
  id?: number;
  note: string;
}
const AppNoteEntity = new EntitySchema<AppNote>({
  name: 'AppNote',
  tableName: 'app_note',
  columns: { id: { type: Number, primary: true, generated: 'increment' }, note: { type: String } },
});
const ROLLBACK = new Error('the app rolls back');

async function connect(db: Parameters<Parameters<typeof describeEachDatabase>[1]>[0]): Promise<DataSource> {
  const ds = await db.connect({ entities: [AppNoteEntity] });
  await ds.query('CREATE TABLE IF NOT EXISTS app_note (id INTEGER PRIMARY KEY AUTOINCREMENT, note TEXT NOT NULL)');
  return ds;
}

async function leaderRow(ds: DataSource, ns: string): Promise<{ leader_id: string | null; term: number } | undefined> {
  const [row] = await query<{ leader_id: string | null; term: number }>(ds, 'SELECT leader_id, term FROM gemstone_election_leader WHERE ns = ?', [ns]);
  return row ? { leader_id: row.leader_id, term: Number(row.term) } : undefined;
}

async function notes(ds: DataSource): Promise<string[]> {
  return (await query<{ note: string }>(ds, 'SELECT note FROM app_note')).map((r) => r.note).sort();
}

/** Longest gap between 5 ms timer callbacks while `work` runs: how long the event loop was blocked. */
async function maxLag<T>(work: () => Promise<T>): Promise<{ result: T; lagMs: number }> {
  let last = Date.now();
  let lagMs = 0;
  const timer = setInterval(() => {
    const now = Date.now();
    lagMs = Math.max(lagMs, now - last);
    last = now;
  }, 5);
  try {
    return { result: await work(), lagMs };
  } finally {
    clearInterval(timer);
  }
}

/** Resolves after `ms` without keeping the process alive. */
const timeout = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms).unref());

/**
 * The application: transactions of the three kinds (dataSource.transaction,
 * queryRunner.startTransaction, the implicit ones of save()/remove()) with awaits inside, which
 * commit or roll back at random, on a DataSource picked at random. One at a time, as an app must
 * on one SQLite connection — and, with better-sqlite3, in one process: its write waits for
 * another connection's lock synchronously, so the holder in this process could never finish.
 */
function appNoise(sources: DataSource[], until: () => boolean) {
  const committed = new Set<string>();
  const rolledBack = new Set<string>();
  const errors: string[] = [];
  const done = (async () => {
    while (!until()) {
      const ds = sources[Math.floor(Math.random() * sources.length)]!;
      const note = uuid();
      const rollback = Math.random() < 0.5;
      const kind = Math.random();
      try {
        if (kind < 0.4) {
          await ds.transaction(async (m) => {
            await m.query('INSERT INTO app_note (note) VALUES (?)', [note]);
            await sleep(Math.random() * 15);
            await m.query('UPDATE app_note SET note = note WHERE note = ?', [note]);
            if (rollback) throw ROLLBACK;
          });
        } else if (kind < 0.8) {
          const runner = ds.createQueryRunner();
          await runner.startTransaction();
          try {
            await runner.query('INSERT INTO app_note (note) VALUES (?)', [note]);
            await sleep(Math.random() * 15);
            if (rollback) throw ROLLBACK;
            await runner.commitTransaction();
          } catch (error) {
            await runner.rollbackTransaction();
            throw error;
          } finally {
            await runner.release();
          }
        } else {
          // save() and remove() open (and commit) transactions of their own.
          const repository = ds.getRepository(AppNoteEntity);
          const saved = await repository.save({ note });
          if (rollback) {
            await repository.remove(saved);
            throw ROLLBACK;
          }
        }
        committed.add(note);
      } catch (error) {
        if (error === ROLLBACK) rolledBack.add(note);
        else errors.push(String(error));
      }
      await sleep(Math.random() * 5);
    }
  })();
  return { committed, rolledBack, errors, done };
}

/** Candidates electing in a loop (and sometimes resigning, so leadership changes hands often). */
function candidates(sources: DataSource[], ns: string, perSource: number, until: () => boolean) {
  /** Every outcome that reported the caller leading (acquired or renewed). */
  const acquisitions: Array<{ id: string; term: number }> = [];
  const errors: string[] = [];
  const loops = sources.flatMap((ds) =>
    Array.from({ length: perSource }, async () => {
      const svc = new ElectionService(ds, { expireSeconds: 30 });
      const id = uuid();
      while (!until()) {
        try {
          const outcome = await svc.electOutcome(id, { ns });
          if (outcome.isLeader) acquisitions.push({ id, term: outcome.term });
          if (outcome.isLeader && Math.random() < 0.5) await svc.resign(id, { ns });
        } catch (error) {
          errors.push(String(error));
        }
        await sleep(Math.random() * 10);
      }
    }),
  );
  return { acquisitions, errors, done: Promise.all(loops) };
}

describeEachDatabase(
  'SQLite: the library and application transactions on the shared connection',
  (db) => {
    async function race(sources: DataSource[], ms: number) {
      const ns = freshNs();
      // At least `ms`, and on until enough happened to judge (a loaded machine does less per
      // second), within a hard cap.
      const stopAt = Date.now() + ms;
      const hardStop = Date.now() + ms * 6;
      const enough = (): boolean =>
        new Set(electors.acquisitions.map((a) => a.term)).size > 5 &&
        apps.every((a) => a.committed.size > 5 && a.rolledBack.size > 5);
      const until = (): boolean => Date.now() >= hardStop || (Date.now() >= stopAt && enough());
      const apps = [appNoise(sources, until)];
      const electors = candidates(sources, ns, 2, until);
      await Promise.all([electors.done, ...apps.map((a) => a.done)]);

      expect(electors.errors).toEqual([]);
      expect(apps.flatMap((a) => a.errors)).toEqual([]);
      // No term was reported leading by two candidates.
      const byTerm = new Map<number, Set<string>>();
      for (const { id, term } of electors.acquisitions) byTerm.set(term, (byTerm.get(term) ?? new Set()).add(id));
      expect([...byTerm].filter(([, ids]) => ids.size > 1).map(([term, ids]) => [term, [...ids]])).toEqual([]);
      expect(byTerm.size).toBeGreaterThan(5);
      // Every reported lease is durable: the row's term is the highest one reported.
      const row = await leaderRow(sources[0]!, ns);
      expect(row?.term).toBe(Math.max(...electors.acquisitions.map((a) => a.term)));
      // Rolled-back app rows never persist, committed ones do.
      const committed = apps.flatMap((a) => [...a.committed]);
      const rolledBack = apps.flatMap((a) => [...a.rolledBack]);
      expect(committed.length).toBeGreaterThan(5);
      expect(rolledBack.length).toBeGreaterThan(5);
      const stored = new Set(await notes(sources[0]!));
      expect(committed.filter((n) => !stored.has(n))).toEqual([]);
      expect(rolledBack.filter((n) => stored.has(n))).toEqual([]);
    }

    test('one DataSource: electing candidates beside app transactions that commit and roll back', async () => {
      const ds = await connect(db);
      await race([ds], 3000);
    });

    if (db.shared) {
      test('two DataSources on one file: the same, with both connections contending for the write lock', async () => {
        const sources = [await connect(db), await connect(db)];
        await race(sources, 3000);
      });

      test('another DataSource holding the write lock never blocks the event loop; the call succeeds after it', async () => {
        const [a, b] = [await connect(db), await connect(db)];
        const ns = freshNs();
        const id = uuid();
        const runner = a.createQueryRunner();
        await runner.startTransaction();
        await runner.query('INSERT INTO app_note (note) VALUES (?)', ['held']);
        const release = sleep(300).then(() => runner.commitTransaction());
        const { result, lagMs } = await maxLag(() => new ElectionService(b).electOutcome(id, { ns }));
        await release;
        expect(result).toMatchObject({ leaderId: id, isLeader: true, term: 1 });
        // A synchronous wait would last busy_timeout (5 s); 1.5 s leaves room for a loaded machine.
        expect(lagMs).toBeLessThan(1500);
        expect(await leaderRow(a, ns)).toEqual({ leader_id: id, term: 1 });
      });
    }

    test.each(['dataSource.transaction', 'queryRunner.startTransaction'])(
      'an elect called while the app has a transaction open (%s) that then rolls back stays durable',
      async (kind) => {
        const ds = await connect(db);
        const svc = new ElectionService(ds);
        const ns = freshNs();
        const id = uuid();
        let elect: Promise<{ term: number; isLeader: boolean }> | undefined;
        const appWork = async (run: (text: string, params: unknown[]) => Promise<unknown>) => {
          await run('INSERT INTO app_note (note) VALUES (?)', ['rolled back']);
          elect = svc.electOutcome(id, { ns });
          await sleep(100); // the app awaits something with its transaction open
        };
        if (kind === 'dataSource.transaction') {
          await expect(
            ds.transaction(async (m) => {
              await appWork((text, params) => m.query(text, params));
              throw ROLLBACK;
            }),
          ).rejects.toBe(ROLLBACK);
        } else {
          const runner = ds.createQueryRunner();
          await runner.startTransaction();
          await appWork((text, params) => runner.query(text, params));
          await runner.rollbackTransaction();
          await runner.release();
        }
        const outcome = await elect!;
        expect(outcome).toMatchObject({ isLeader: true, term: 1 });
        expect(await leaderRow(ds, ns)).toEqual({ leader_id: id, term: 1 });
        expect(await notes(ds)).not.toContain('rolled back');
      },
    );

    test('an app transaction begun while an elect is under way does not ride on it', async () => {
      const ds = await connect(db);
      const svc = new ElectionService(ds);
      const ns = freshNs();
      const id = uuid();
      const elect = svc.electOutcome(id, { ns });
      const app = ds.transaction(async (m) => {
        await m.query('INSERT INTO app_note (note) VALUES (?)', ['app during elect']);
        await sleep(20);
        throw ROLLBACK;
      });
      await expect(app).rejects.toBe(ROLLBACK);
      expect(await elect).toMatchObject({ isLeader: true, term: 1 });
      expect(await leaderRow(ds, ns)).toEqual({ leader_id: id, term: 1 });
      expect(await notes(ds)).not.toContain('app during elect');
    });

    test('withTransaction + a library call without session: SessionRequiredError at once; the elector of that file goes on', async () => {
      const ds = await connect(db);
      const ns = freshNs();
      const elector = new LeaderElector({ dataSource: ds, ns, expireSeconds: 3, intervalMs: 100 });
      elector.on('error', () => undefined);
      await elector.start();
      expect(elector.isLeader).toBe(true);
      const svc = new ElectionService(ds);
      const startedAt = Date.now();
      const inside = withTransaction(ds, async (manager) => {
        await manager.query('INSERT INTO app_note (note) VALUES (?)', ['with session-less call']);
        await svc.getLeader({ ns }); // no session: its own transaction would wait for this one
      });
      const outcome = await Promise.race([inside.then(() => 'resolved', (error: unknown) => error), timeout(3000).then(() => 'hung')]);
      expect(outcome).toBeInstanceOf(SessionRequiredError);
      expect(Date.now() - startedAt).toBeLessThan(1000);
      // With the session it joins the transaction.
      const joined = await withTransaction(ds, (manager) => svc.getLeader({ ns, session: manager }));
      expect(joined?.leaderId).toBe(elector.candidateId);
      const stopped = await Promise.race([elector.stop().then(() => 'stopped'), timeout(3000).then(() => 'hung')]);
      expect(stopped).toBe('stopped');
      expect(await notes(ds)).not.toContain('with session-less call');
    });

    test(`an app transaction held open past the wait limit (default ${DEFAULT_SQLITE_WAIT_MS} ms): SqliteTransactionOpenError, nothing written`, async () => {
      expect(DEFAULT_SQLITE_WAIT_MS).toBe(5000);
      const ds = await connect(db);
      const svc = new ElectionService(ds, { sqliteWaitMs: 200 });
      const ns = freshNs();
      const runner = ds.createQueryRunner();
      await runner.startTransaction();
      await runner.query('INSERT INTO app_note (note) VALUES (?)', ['long']);
      const startedAt = Date.now();
      const error = await svc.elect(uuid(), { ns }).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(SqliteTransactionOpenError);
      expect(String((error as Error).message)).toMatch(/more than 200 ms.*`session`/);
      expect(Date.now() - startedAt).toBeGreaterThanOrEqual(190);
      const other = await withTransaction(ds, async () => 'ran', { sqliteWaitMs: 100 }).catch((e: unknown) => e);
      expect(other).toBeInstanceOf(SqliteTransactionOpenError);
      await runner.commitTransaction();
      await runner.release();
      expect(await leaderRow(ds, ns)).toBeUndefined();
      expect(await notes(ds)).toContain('long');
    });
  },
  { kinds: ['sqlite'] },
);
