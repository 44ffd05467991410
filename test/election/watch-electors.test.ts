/**
 * Watchers beside real `LeaderElector`s: through a crash (a holder whose lease runs out without
 * renewal), graceful hand-overs (`stop()`), a namespace left without candidates and a last
 * expiry, every watcher — fast poll, default poll, module-level — yields every term and every
 * vacancy in order, never a state twice, dated like the history.
 */
import type { DataSource } from 'typeorm';
import { ElectionService, LeaderElector, watch } from 'gemstone-utils';
import { describeEachDatabase, uuid } from '../support/databases';
import { ns as freshNs } from '../support/rows';
import { waitFor } from '../elector/helpers';
import { collect, expectWellOrdered } from './watch-support';

describeEachDatabase('watch beside electors', (db) => {
  let ds: DataSource;

  beforeAll(async () => {
    ds = await db.connect();
  });

  test('crash, hand-overs, vacancy and expiry: every watcher sees every term and vacancy in order, once', async () => {
    const ns = freshNs();
    const svc = new ElectionService(ds);
    const crashing = new ElectionService(ds, { expireSeconds: 1.5 });
    const controller = new AbortController();
    const { signal } = controller;
    const watchers = [
      collect(svc.watch({ ns, pollMs: 100, signal })),
      collect(svc.watch({ ns, signal })), // the default poll (1 s): most fast changes fall between its reads
      collect(watch({ ns, dataSource: ds, pollMs: 250, signal })),
    ];
    const electors: LeaderElector[] = [];
    const elector = () => {
      const e = new LeaderElector({ dataSource: ds, ns, expireSeconds: 2, intervalMs: 300 });
      e.on('error', () => undefined); // a busy shared machine may fail a tick; it is retried
      electors.push(e);
      return e;
    };
    const leaderOf = async (term: number) => {
      await waitFor(`term ${term}`, async () => (await svc.getLeader({ ns }))?.term === term, 20_000, 20);
    };
    const waitAll = (leaderId: string | null, term: number | null) => Promise.all(watchers.map((w) => w.waitForState(leaderId, term, 20_000)));

    try {
      await waitAll(null, null);
      // 1. A holder that never renews (a crashed process): its lease runs out, an elector takes over.
      const crashed = uuid();
      await crashing.elect(crashed, { ns }); // term 1
      const [e1, e2] = [elector(), elector()];
      await Promise.all([e1.start(), e2.start()]);
      await leaderOf(2);
      // 2. Graceful hand-over: the leader stops, the other takes over at once (PostgreSQL) or on its tick.
      // Picked by the database's answer: the elector's own flag may not be set yet on a busy
      // machine (its tick's answer not yet applied), and stopping the follower would hand over nothing.
      const holder = (await svc.getLeader({ ns }))?.leaderId;
      const first = holder === e1.candidateId ? e1 : e2;
      expect([e1.candidateId, e2.candidateId]).toContain(holder);
      const second = first === e1 ? e2 : e1;
      await first.stop();
      await leaderOf(3);
      await waitFor('the other elector to lead', () => second.isLeader, 10_000);
      // 3. The last candidate stops: vacant until someone comes.
      await second.stop();
      await waitAll(null, 3);
      // 4. A new elector leads, then hands over to nobody.
      const e3 = elector();
      await e3.start();
      await leaderOf(4);
      await e3.stop();
      // 5. Another lease runs out with nobody to take it: only the clock tells.
      await crashing.elect(uuid(), { ns }); // term 5
      await waitAll(null, 5);
    } finally {
      await Promise.all(electors.map((e) => e.stop()));
      controller.abort();
    }
    for (const w of watchers) expect(await w.ended).toEqual({});

    const history = [...(await svc.getHistory({ ns }))].reverse();
    expect(history.map((e) => e.term)).toEqual([1, 2, 3, 4, 5]);
    const expected: Array<[string | null, number | null]> = [[null, null]];
    for (const entry of history) expected.push([entry.leaderId, entry.term], [null, entry.term]);
    for (const w of watchers) {
      expect(w.states()).toEqual(expected);
      expectWellOrdered(w.changes);
      // Each state is dated by the history: acquisitions and ends (term 5's lapse is not closed
      // yet, as nobody took over: it is dated at its lease's end).
      for (const entry of history) {
        const leading = w.changes.find((c) => c.leaderId === entry.leaderId && c.term === entry.term)!;
        expect(leading.at.getTime()).toBe(entry.acquiredAt.getTime());
        if (entry.endedAt) {
          const vacant = w.changes.find((c) => c.leaderId === null && c.term === entry.term)!;
          expect(vacant.at.getTime()).toBe(entry.endedAt.getTime());
        }
      }
    }
    expect(history.slice(0, 4).map((e) => e.endReason)).toEqual(['expired', 'unregistered', 'unregistered', 'unregistered']);
  }, 90_000);
});
