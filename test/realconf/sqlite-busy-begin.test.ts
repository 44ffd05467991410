/**
 * SQLite: every program the library runs without `session` is all-or-nothing, also when its
 * `BEGIN IMMEDIATE` finds the database busy. Another connection takes the write lock just before
 * the library's BEGIN runs and lets it go once the library has reported an error — the moment at
 * which, with a queued driver, the rest of a program could run outside any transaction. Then:
 * - with no retry allowed (`sqliteWaitMs: 0`) a call that fails has changed nothing;
 * - with retries, the call succeeds as if the first attempt never happened: its result (`resign`
 *   true, `acquired` true) and the rows are those of exactly one application.
 */
import type { DataSource, Logger } from 'typeorm';
import { ElectionService } from 'gemstone-utils';
import { describeEachDatabase, query, snapshot, uuid } from '../support/databases';
import { ns as freshNs } from '../support/rows';
import { recordingGroup, waitFor } from '../group/helpers';
import { SqliteDriverName, SyncSqliteLocker } from '../support/sqlite-locker';

/**
 * Takes the write lock on another connection when the library is about to send its BEGIN IMMEDIATE
 * (its statements are logged before they run) and releases it at the `releaseAt`-th error the
 * library logs while it is held (errors are logged as they happen, before the driver runs the
 * next statement).
 */
class BusyBegin implements Logger {
  private state: 'idle' | 'armed' | 'held' | 'released' = 'idle';
  private errors = 0;
  private releaseAt = 1;
  private locker?: SyncSqliteLocker;

  open(file: string, driver: SqliteDriverName): void {
    this.locker = new SyncSqliteLocker(file, driver);
  }

  async close(): Promise<void> {
    this.disarm();
    await this.locker?.close();
  }

  arm(releaseAt: number): void {
    this.state = 'armed';
    this.errors = 0;
    this.releaseAt = releaseAt;
  }

  /** Whether the lock was taken and released during the call (the case under test happened). */
  get happened(): boolean {
    return this.state === 'released';
  }

  disarm(): void {
    if (this.state === 'held') this.locker!.run('ROLLBACK');
    this.state = 'idle';
  }

  logQuery(query: string): void {
    // (A lock the locker could not get within its wait is tried again at the next BEGIN.)
    if (this.state === 'armed' && query.trim() === 'BEGIN IMMEDIATE' && this.locker!.lock()) this.state = 'held';
  }

  logQueryError(): void {
    if (this.state !== 'held') return;
    if (++this.errors < this.releaseAt) return;
    this.locker!.release();
    this.state = 'released';
  }

  logQuerySlow(): void {}
  logSchemaBuild(): void {}
  logMigration(): void {}
  log(): void {}
}

interface HistoryRow {
  term: number;
  leader_id: string;
  ended_at: string | null;
  end_reason: string | null;
}

async function historyOf(ds: DataSource, ns: string): Promise<HistoryRow[]> {
  const rows = await query<HistoryRow>(ds, 'SELECT term, leader_id, ended_at, end_reason FROM gemstone_election_history WHERE ns = ? ORDER BY term', [ns]);
  return rows.map((r) => ({ ...r, term: Number(r.term) }));
}

async function leaderOf(ds: DataSource, ns: string): Promise<{ leader_id: string | null; term: number } | undefined> {
  const [row] = await query<{ leader_id: string | null; term: number }>(ds, 'SELECT leader_id, term FROM gemstone_election_leader WHERE ns = ?', [ns]);
  return row && { leader_id: row.leader_id, term: Number(row.term) };
}

async function candidateIds(ds: DataSource, ns: string): Promise<string[]> {
  return (await query<{ candidate_id: string }>(ds, 'SELECT candidate_id FROM gemstone_election_candidate WHERE ns = ?', [ns])).map((r) => r.candidate_id);
}

/** The history matches the leader row: terms 1..term, only the current one open, and only while the row names its leader. */
async function expectConsistent(ds: DataSource, ns: string): Promise<void> {
  const leader = await leaderOf(ds, ns);
  const history = await historyOf(ds, ns);
  expect(history.map((h) => h.term)).toEqual(Array.from({ length: leader?.term ?? 0 }, (_, i) => i + 1));
  const open = history.filter((h) => h.ended_at === null).map((h) => h.term);
  expect(open).toEqual(leader?.leader_id ? [leader.term] : []);
}

/** The three moments the lock is released: after the first, second or third error the library logs. */
const RELEASES = [1, 2, 3];

describeEachDatabase(
  'a busy BEGIN IMMEDIATE',
  (db) => {
    const busy = new BusyBegin();
    let ds: DataSource;

    beforeAll(async () => {
      ds = await db.connect({ logger: busy });
      busy.open(db.url().slice('sqlite:'.length).split('?')[0]!, /better-sqlite3/.test(db.name) ? 'better-sqlite3' : 'sqlite3');
    });

    afterAll(() => busy.close());
    afterEach(() => busy.disarm());

    /** Runs `call` with the lock taken at its BEGIN and released at the `releaseAt`-th error. */
    async function whileBusy<T>(releaseAt: number, call: () => Promise<T>): Promise<PromiseSettledResult<T>> {
      busy.arm(releaseAt);
      const [result] = await Promise.allSettled([call()]);
      expect(busy.happened).toBe(true);
      return result!;
    }

    describe('without retry (sqliteWaitMs: 0): a call that fails changed nothing', () => {
      const noRetry = () => new ElectionService(ds, { sqliteWaitMs: 0 });

      type Call = (svc: ElectionService, holder: string, ns: string) => Promise<unknown>;
      const calls: [string, Call][] = [
        ['resign', (svc, holder, ns) => svc.resign(holder, { ns })],
        ['handOver', (svc, holder, ns) => svc.handOver(holder, { ns })],
        ['unregisterCandidate', (svc, holder, ns) => svc.unregisterCandidate(holder, { ns })],
        // The holder resigned first: another candidate takes the vacant lease.
        ['electOutcome of a vacated lease', (svc, _holder, ns) => svc.electOutcome(uuid(), { ns })],
      ];
      test.each(calls)('%s', async (name, call) => {
        const ns = freshNs();
        const a = uuid();
        const svc = noRetry();
        await svc.electOutcome(a, { ns });
        if (name.startsWith('electOutcome')) await svc.resign(a, { ns });
        const before = await snapshot(ds);
        const result = await whileBusy(1, () => call(svc, a, ns));
        if (result.status === 'rejected') {
          expect(String(result.reason)).toMatch(/SQLITE_BUSY|database is locked/);
          expect(await snapshot(ds)).toBe(before);
        } else {
          // better-sqlite3 tries once more at once (its first wait is inside SQLite): it then
          // finds the lock free and runs the whole program.
          expect(db.name).toMatch(/better-sqlite3/);
          expect(await snapshot(ds)).not.toBe(before);
        }
        await expectConsistent(ds, ns);
      });
    });

    describe.each(RELEASES)('retried, the lock released at error %i: exactly one application', (releaseAt) => {
      const svc = () => new ElectionService(ds);

      test('resign: true, the term closed `resigned`, the lease vacant', async () => {
        const ns = freshNs();
        const a = uuid();
        const { term } = await svc().electOutcome(a, { ns });
        const result = await whileBusy(releaseAt, () => svc().resign(a, { ns }));
        expect(result).toEqual({ status: 'fulfilled', value: true });
        expect(await leaderOf(ds, ns)).toEqual({ leader_id: null, term });
        expect((await historyOf(ds, ns)).map((h) => [h.term, h.end_reason])).toEqual([[term, 'resigned']]);
        await expectConsistent(ds, ns);
      });

      test('handOver: true, the term closed `handed-over`', async () => {
        const ns = freshNs();
        const a = uuid();
        const { term } = await svc().electOutcome(a, { ns });
        expect(await whileBusy(releaseAt, () => svc().handOver(a, { ns }))).toEqual({ status: 'fulfilled', value: true });
        expect((await historyOf(ds, ns)).map((h) => [h.term, h.end_reason])).toEqual([[term, 'handed-over']]);
        await expectConsistent(ds, ns);
      });

      test('unregisterCandidate of the leader: row gone, lease vacant, term closed `unregistered`', async () => {
        const ns = freshNs();
        const a = uuid();
        const { term } = await svc().electOutcome(a, { ns });
        expect((await whileBusy(releaseAt, () => svc().unregisterCandidate(a, { ns }))).status).toBe('fulfilled');
        expect(await candidateIds(ds, ns)).toEqual([]);
        expect(await leaderOf(ds, ns)).toEqual({ leader_id: null, term });
        expect((await historyOf(ds, ns)).map((h) => [h.term, h.end_reason])).toEqual([[term, 'unregistered']]);
        await expectConsistent(ds, ns);
      });

      test('elect of a new namespace: acquired, term 1', async () => {
        const ns = freshNs();
        const a = uuid();
        const result = await whileBusy(releaseAt, () => svc().electOutcome(a, { ns }));
        expect(result).toMatchObject({ status: 'fulfilled', value: { leaderId: a, isLeader: true, acquired: true, term: 1 } });
        expect(await candidateIds(ds, ns)).toEqual([a]);
        await expectConsistent(ds, ns);
      });

      test('elect of a vacated lease: acquired, term + 1', async () => {
        const ns = freshNs();
        const a = uuid();
        const b = uuid();
        const { term } = await svc().electOutcome(a, { ns });
        await svc().resign(a, { ns });
        const result = await whileBusy(releaseAt, () => svc().electOutcome(b, { ns }));
        expect(result).toMatchObject({ status: 'fulfilled', value: { leaderId: b, isLeader: true, acquired: true, term: term + 1 } });
        await expectConsistent(ds, ns);
      });

      test('a renewal: not acquired, same term, no history written', async () => {
        const ns = freshNs();
        const a = uuid();
        const { term } = await svc().electOutcome(a, { ns });
        const result = await whileBusy(releaseAt, () => svc().electOutcome(a, { ns }));
        expect(result).toMatchObject({ status: 'fulfilled', value: { leaderId: a, isLeader: true, acquired: false, term } });
        expect((await historyOf(ds, ns)).map((h) => [h.term, h.end_reason])).toEqual([[term, null]]);
        await expectConsistent(ds, ns);
      });

      test('group: remove (vacate `resigned`) and stop (vacate `unregistered`, candidate rows deleted)', async () => {
        const prefix = freshNs();
        const names = [`${prefix}-a`, `${prefix}-b`, `${prefix}-c`];
        const { group } = recordingGroup(ds, { namespaces: names, expireSeconds: 30, intervalMs: 10_000 });
        await group.start();
        try {
          await waitFor('the group to lead every namespace', () => names.every((ns) => group.isLeader(ns)));
          await whileBusy(releaseAt, () => group.remove(names[0]!));
          expect(await leaderOf(ds, names[0]!)).toEqual({ leader_id: null, term: 1 });
          expect((await historyOf(ds, names[0]!)).map((h) => h.end_reason)).toEqual(['resigned']);
          await whileBusy(releaseAt, () => group.stop());
        } finally {
          await group.stop();
        }
        for (const ns of names) {
          expect(await leaderOf(ds, ns)).toEqual({ leader_id: null, term: 1 });
          await expectConsistent(ds, ns);
        }
        expect((await historyOf(ds, names[1]!)).map((h) => h.end_reason)).toEqual(['unregistered']);
        expect(await candidateIds(ds, names[1]!)).toEqual([]);
      });

      test('group tick: each namespace acquired once, term 1', async () => {
        const prefix = freshNs();
        const names = [`${prefix}-a`, `${prefix}-b`];
        const { group, events } = recordingGroup(ds, { namespaces: names, expireSeconds: 30, intervalMs: 200 });
        busy.arm(releaseAt);
        await group.start();
        try {
          await waitFor('the group to lead every namespace', () => names.every((ns) => group.isLeader(ns)));
          expect(busy.happened).toBe(true);
          for (const ns of names) {
            expect(events.filter((e) => e.kind === 'elected' && e.ns === ns).map((e) => e.term)).toEqual([1]);
            await expectConsistent(ds, ns);
          }
        } finally {
          await group.stop();
        }
      });
    });
  },
  { kinds: ['sqlite'], sharedOnly: true },
);
