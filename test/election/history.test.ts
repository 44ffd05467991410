/**
 * The history table: one row per term, written in the transaction that changes leadership;
 * renewals write nothing; `getHistory` newest first; terms contiguous and never overlapping
 * under churn.
 */
import type { DataSource } from 'typeorm';
import { ElectionService, getHistory, HistoryEntry, ValidationError } from 'gemstone-utils';
import { describeEachDatabase, inCallerTransaction, query, sleep, uuid } from '../support/databases';
import { ns as freshNs } from '../support/rows';
import { waitFor } from '../elector/helpers';

/** Lease short enough to wait out, long enough for a loaded machine. */
const SHORT = 1.2;

const brief = (entries: readonly HistoryEntry[]) => entries.map((e) => [e.term, e.leaderId, e.endReason]);

/** Every history rule that holds whatever happened: contiguous terms, closed before the next opens, only the newest open. */
function expectConsistent(entries: readonly HistoryEntry[], currentTerm: number): void {
  const ascending = [...entries].sort((a, b) => a.term - b.term);
  expect(ascending.map((e) => e.term)).toEqual(Array.from({ length: currentTerm }, (_, i) => i + 1));
  for (let i = 0; i < ascending.length; i++) {
    const entry = ascending[i]!;
    const next = ascending[i + 1];
    expect(entry.acquiredAt).toBeInstanceOf(Date);
    if (next) {
      expect(entry.endedAt).not.toBeNull();
      expect(entry.endReason).not.toBeNull();
      expect(entry.endedAt!.getTime()).toBeGreaterThanOrEqual(entry.acquiredAt.getTime());
      expect(entry.endedAt!.getTime()).toBeLessThanOrEqual(next.acquiredAt.getTime());
    }
  }
}

describeEachDatabase('election history', (db) => {
  let ds: DataSource;
  let svc: ElectionService;

  beforeAll(async () => {
    ds = await db.connect();
    svc = new ElectionService(ds);
  });

  async function historyRows(ns: string): Promise<string> {
    return JSON.stringify(await query(ds, 'SELECT * FROM gemstone_election_history WHERE ns = ? ORDER BY term', [ns]));
  }

  test('elect, resign, unregister, takeover after expiry, resign and unregister of a lapsed lease: exactly the expected rows', async () => {
    const ns = freshNs();
    const [a, b] = [uuid(), uuid()];
    const short = new ElectionService(ds, { expireSeconds: SHORT });

    await svc.elect(a, { ns }); // term 1
    expect(brief(await svc.getHistory({ ns }))).toEqual([[1, a, null]]);
    const before = await historyRows(ns);
    for (let i = 0; i < 3; i++) expect(await svc.elect(a, { ns })).toBe(a); // renewals
    expect(await svc.elect(b, { ns })).toBe(a); // a follower's elect
    expect(await historyRows(ns)).toBe(before);

    expect(await svc.resign(a, { ns })).toBe(true); // term 1 resigned
    await svc.elect(b, { ns }); // term 2
    await svc.unregisterCandidate(b, { ns }); // term 2 unregistered
    await short.elect(a, { ns }); // term 3
    const lapsing = (await svc.getLeader({ ns }))!;
    await waitFor('the lease of term 3 to expire', async () => (await svc.getLeader({ ns })) === null, 10_000, 50);
    await svc.elect(b, { ns }); // takes over: term 3 expired, term 4
    expect(await svc.resign(b, { ns })).toBe(true); // term 4 resigned
    await short.elect(a, { ns }); // term 5
    await waitFor('the lease of term 5 to expire', async () => (await svc.getLeader({ ns })) === null, 10_000, 50);
    expect(await svc.resign(a, { ns })).toBe(false); // vacates the lapsed lease: term 5 expired
    await short.elect(b, { ns }); // term 6
    await waitFor('the lease of term 6 to expire', async () => (await svc.getLeader({ ns })) === null, 10_000, 50);
    await svc.unregisterCandidate(b, { ns }); // term 6 expired
    await svc.elect(a, { ns }); // term 7, current

    const history = await svc.getHistory({ ns });
    expect(brief(history)).toEqual([
      [7, a, null],
      [6, b, 'expired'],
      [5, a, 'expired'],
      [4, b, 'resigned'],
      [3, a, 'expired'],
      [2, b, 'unregistered'],
      [1, a, 'resigned'],
    ]);
    expect(history.every((e) => e.ns === ns)).toBe(true);
    expect(history[0]!.endedAt).toBeNull();
    expectConsistent(history, 7);
    // An expired term ends at its lease's end, not when the takeover noticed it.
    const term3 = history.find((e) => e.term === 3)!;
    expect(term3.endedAt!.getTime()).toBe(lapsing.leaseExpiresAt.getTime());
    expect(term3.endedAt!.getTime() - term3.acquiredAt.getTime()).toBeGreaterThanOrEqual(SHORT * 1000 - 5);
    expect(term3.endedAt!.getTime() - term3.acquiredAt.getTime()).toBeLessThanOrEqual(SHORT * 1000 + 5);

    // Paging backwards, and the module-level function on the default DataSource (the latest initDb's).
    expect((await svc.getHistory({ ns, limit: 2 })).map((e) => e.term)).toEqual([7, 6]);
    expect((await svc.getHistory({ ns, limit: 2, before: 6 })).map((e) => e.term)).toEqual([5, 4]);
    expect(await svc.getHistory({ ns, before: 1 })).toEqual([]);
    expect(await svc.getHistory({ ns: freshNs() })).toEqual([]);
    expect(brief(await getHistory({ ns, limit: 1 }))).toEqual([[7, a, null]]);
  });

  test("a leader's elect after its own lease lapsed (database clock) is a new term; the old one ends 'expired' at its lease's end", async () => {
    const ns = freshNs();
    const a = uuid();
    const short = new ElectionService(ds, { expireSeconds: SHORT });
    const first = await short.electOutcome(a, { ns });
    expect(first).toMatchObject({ isLeader: true, acquired: true, term: 1 });
    // Renewals keep the term and write no history.
    expect(await short.electOutcome(a, { ns })).toMatchObject({ isLeader: true, acquired: false, term: 1 });
    const lapsing = (await svc.getLeader({ ns }))!;
    await waitFor('the lease of term 1 to expire', async () => (await svc.getLeader({ ns })) === null, 10_000, 50);
    const again = await short.electOutcome(a, { ns });
    expect(again).toMatchObject({ leaderId: a, isLeader: true, acquired: true, term: 2 });
    const history = await svc.getHistory({ ns });
    expect(brief(history)).toEqual([
      [2, a, null],
      [1, a, 'expired'],
    ]);
    expect(history[1]!.endedAt!.getTime()).toBe(lapsing.leaseExpiresAt.getTime());
    expectConsistent(history, 2);
  });

  test('handOver steps down like resign, recorded as handed-over; by a non-holder it changes nothing', async () => {
    const ns = freshNs();
    const [a, b] = [uuid(), uuid()];
    await svc.elect(a, { ns });
    expect(await svc.handOver(b, { ns })).toBe(false);
    expect(brief(await svc.getHistory({ ns }))).toEqual([[1, a, null]]);
    expect(await svc.handOver(a, { ns })).toBe(true);
    expect(await svc.getLeader({ ns })).toBeNull();
    await svc.elect(b, { ns });
    expect(brief(await svc.getHistory({ ns }))).toEqual([
      [2, b, null],
      [1, a, 'handed-over'],
    ]);
    expectConsistent(await svc.getHistory({ ns }), 2);
  });

  test('resign or unregister by a candidate that does not hold the lease leaves the holder’s term open', async () => {
    const ns = freshNs();
    const [a, b] = [uuid(), uuid()];
    await svc.elect(a, { ns });
    await svc.registerCandidate(b, { ns });
    const before = await historyRows(ns);
    expect(await svc.resign(b, { ns })).toBe(false);
    await svc.unregisterCandidate(b, { ns });
    expect(await historyRows(ns)).toBe(before);
    expect(brief(await svc.getHistory({ ns }))).toEqual([[1, a, null]]);
  });

  if (db.kind !== 'sqlite') {
    test('the history is written in the transaction that changes leadership: a rollback leaves neither', async () => {
      const ns = freshNs();
      const [a, b] = [uuid(), uuid()];
      await svc.elect(a, { ns });
      const rolledBack = new Error('roll back');
      await expect(
        inCallerTransaction(ds, async (runner) => {
          await svc.resign(a, { ns, session: runner });
          await svc.elect(b, { ns, session: runner });
          expect(brief(await svc.getHistory({ ns, session: runner }))).toEqual([
            [2, b, null],
            [1, a, 'resigned'],
          ]);
          throw rolledBack;
        }),
      ).rejects.toBe(rolledBack);
      expect(brief(await svc.getHistory({ ns }))).toEqual([[1, a, null]]);
      expect((await svc.getLeader({ ns }))?.leaderId).toBe(a);
    });
  }

  test('bad options are refused before any statement', async () => {
    const bad: Array<[unknown, string]> = [
      [{ limit: 0 }, 'options.limit'],
      [{ limit: 1.5 }, 'options.limit'],
      [{ limit: 10_001 }, 'options.limit'],
      [{ limit: '5' }, 'options.limit'],
      [{ before: -1 }, 'options.before'],
      [{ before: 2.5 }, 'options.before'],
      [{ ns: '' }, 'options.ns'],
      [{ namespace: 'x' }, 'options.namespace'],
      [{ session: {} }, 'options.session'],
    ];
    for (const [options, parameter] of bad) {
      await expect(svc.getHistory(options as never)).rejects.toThrow(ValidationError);
      await expect(svc.getHistory(options as never)).rejects.toMatchObject({ parameter });
    }
  });

  test('many candidates churning (elect, resign, unregister, expiry): terms 1..n, each closed before the next begins', async () => {
    const ns = freshNs();
    const ids = Array.from({ length: 6 }, uuid);
    const short = new ElectionService(ds, { expireSeconds: 0.3 });
    const errors: unknown[] = [];
    const churn = () =>
      Promise.all(
        ids.map(async (id, i) => {
          for (let round = 0; round < 8; round++) {
            try {
              // Some leases are left to run out (expiry takeovers); the rest end by resign or unregister.
              const outcome = await (i % 2 === 0 ? short : svc).electOutcome(id, { ns });
              if (outcome.isLeader && (i + round) % 3 === 0) await svc.resign(id, { ns });
              if ((i + round) % 4 === 0) await svc.unregisterCandidate(id, { ns });
              if (i % 2 === 0 && round % 3 === 2) await sleep(350);
            } catch (error) {
              errors.push(error);
            }
          }
        }),
      );
    const leaderRow = async () => (await query(ds, 'SELECT term, leader_id FROM gemstone_election_leader WHERE ns = ?', [ns]))[0] ?? { term: 0, leader_id: null };
    // How many terms one pass makes depends on how the racers interleave (a quiet run once made
    // 3): the churn goes on, pass after pass, until it has made more than three, so the checks
    // below always judge a real history. Five passes without a fourth term is a failure.
    for (let pass = 0; pass < 5 && Number((await leaderRow()).term) <= 3; pass++) await churn();
    expect(errors).toEqual([]);
    const row = await leaderRow();
    const term = Number(row.term);
    expect(term).toBeGreaterThan(3);
    const history = await svc.getHistory({ ns, limit: 10_000 });
    expectConsistent(history, term);
    // The newest term is the leader row's; it is open exactly while the row names a holder.
    expect(history[0]!.term).toBe(term);
    if (row.leader_id !== null) {
      expect(history[0]!.leaderId).toBe(String(row.leader_id));
      expect(history[0]!.endedAt).toBeNull();
    } else {
      expect(history[0]!.endedAt).not.toBeNull();
    }
    const reasons = new Set(history.map((e) => e.endReason));
    expect(reasons.has('resigned') || reasons.has('unregistered')).toBe(true);
  });
});
