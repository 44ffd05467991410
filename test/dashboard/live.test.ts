/**
 * The dashboard's live streams on every database (shared ones: the dashboard reads through a
 * DataSource of its own while others elect): a namespace's states in term order from watch(), an
 * overview that follows new namespaces, every statement a read, the streams ended when a client
 * goes away and when the dashboard closes — after which nothing it started runs — and the bound
 * on open streams.
 */
import { waitFor } from '../elector/helpers';
import { describeEachDatabase, query, sleep, uuid } from '../support/databases';
import { openEvents, writes } from './support/http';
import { liveHarness, type LeaderEvent } from './support/live-harness';

const POLL_MS = 200;

describeEachDatabase(
  'dashboard live streams',
  (db) => {
    const live = liveHarness(db, POLL_MS);
    const { recorder } = live;

    test("a namespace's stream: its current state, then every change in term order, with the leader's metadata", async () => {
      const { url } = await live.start();
      const [a, b] = [uuid(), uuid()];
      await live.service.elect(a, { ns: 'live', metadata: { host: 'web-a' } });
      const events = await openEvents(`${url}/api/namespace/events?ns=live`);
      try {
        expect(events.status).toBe(200);
        const first = await events.next((e) => e.event === 'leader');
        expect(first.data).toMatchObject({ ns: 'live', leaderId: a, term: 1, metadata: { host: 'web-a' } });
        await live.service.resign(a, { ns: 'live' });
        await live.service.elect(b, { ns: 'live', metadata: { host: 'web-b' } });
        await events.next((e) => e.event === 'leader' && (e.data as LeaderEvent).term === 2, 5_000);
        const states = events.events.filter((e) => e.event === 'leader').map((e) => e.data as LeaderEvent);
        // The vacancy between the terms is reported even if both changes fell between two reads (from the history).
        expect(states.map((s) => [s.leaderId, s.term])).toEqual([
          [a, 1],
          [null, 1],
          [b, 2],
        ]);
        expect(states[2]!.metadata).toEqual({ host: 'web-b' });
        expect(states[1]!.at).toBeLessThanOrEqual(states[2]!.at);
      } finally {
        events.close();
      }
    });

    test('the overview stream sends the page again when it changed: a new namespace appears within the poll (NOTIFY on PostgreSQL)', async () => {
      const { url } = await live.start();
      const events = await openEvents(`${url}/api/overview/events?q=fresh`);
      try {
        const first = await events.next((e) => e.event === 'overview');
        expect(first.data).toMatchObject({ total: 0, rows: [] });
        const before = performance.now();
        const id = uuid();
        await live.service.elect(id, { ns: 'fresh-ns' });
        const changed = await events.next((e) => e.event === 'overview' && (e.data as { total: number }).total === 1, 5_000);
        expect(changed.at - before).toBeLessThan(POLL_MS + 1_000);
        expect((changed.data as { rows: { ns: string; leaderId: string }[] }).rows).toEqual([expect.objectContaining({ ns: 'fresh-ns', leaderId: id })]);
        // Nothing changed: nothing more is sent, however many polls run.
        const count = events.events.length;
        await sleep(POLL_MS * 4);
        expect(events.events.length).toBe(count);
      } finally {
        events.close();
      }
    });

    test('a client that goes away ends its watch and its polls: no statement follows', async () => {
      const { dashboard, url } = await live.start();
      await live.service.elect(uuid(), { ns: 'leaving' });
      const streams = [await openEvents(`${url}/api/namespace/events?ns=leaving`), await openEvents(`${url}/api/overview/events`)];
      await streams[0]!.next((e) => e.event === 'leader');
      await streams[1]!.next((e) => e.event === 'overview');
      expect(dashboard.streams).toBe(2);
      for (const stream of streams) stream.close();
      await waitFor('both streams to end', () => dashboard.streams === 0, 5_000);
      const count = recorder.statements.length;
      await sleep(POLL_MS * 5);
      expect(recorder.statements.slice(count).map((s) => s.query)).toEqual([]);
    });

    test('close() ends every stream, waits for what runs, answers 503 after; nothing it started runs any more', async () => {
      const { dashboard, url } = await live.start();
      await live.service.elect(uuid(), { ns: 'closing' });
      const streams = [await openEvents(`${url}/api/namespace/events?ns=closing`), await openEvents(`${url}/api/overview/events`)];
      await streams[0]!.next((e) => e.event === 'leader');
      await streams[1]!.next((e) => e.event === 'overview');
      const pending = fetch(`${url}/api/overview`); // a read in flight while closing
      await dashboard.close();
      expect(dashboard.closed).toBe(true);
      expect(dashboard.streams).toBe(0);
      await Promise.all(streams.map((s) => s.ended)); // the server ended them
      expect([200, 503]).toContain((await pending).status);
      const count = recorder.statements.length;
      const after = await fetch(`${url}/api/overview`);
      expect(after.status).toBe(503);
      expect((await fetch(`${url}/api/namespace/events?ns=closing`)).status).toBe(503);
      await sleep(POLL_MS * 5);
      expect(recorder.statements.slice(count).map((s) => s.query)).toEqual([]);
      if (db.kind === 'postgres') {
        // The LISTEN connection of the watch and the overview is gone too.
        const listeners = await query<{ n: unknown }>(live.writer, "SELECT COUNT(*) AS n FROM pg_stat_activity WHERE datname = current_database() AND application_name = 'gemstone-utils listener'");
        expect(Number(listeners[0]!.n)).toBe(0);
      }
    });

    test('at most maxStreams streams at once: one more is answered 503 with Retry-After; a closed one frees its place', async () => {
      const { dashboard, url } = await live.start({ maxStreams: 2 });
      const one = await openEvents(`${url}/api/overview/events`);
      const two = await openEvents(`${url}/api/namespace/events?ns=closing`);
      const refused = await fetch(`${url}/api/overview/events`);
      expect(refused.status).toBe(503);
      expect(refused.headers.get('retry-after')).toBe('5');
      expect(((await refused.json()) as { error: string }).error).toMatch(/too many live streams \(at most 2\)/);
      one.close();
      await waitFor('the closed stream to end', () => dashboard.streams === 1, 5_000);
      const three = await openEvents(`${url}/api/overview/events`);
      expect(three.status).toBe(200);
      two.close();
      three.close();
    });

    test('overview streams of one page share one read per interval, however many browsers show it (one poll per page)', async () => {
      const { dashboard, url } = await live.start();
      await live.service.elect(uuid(), { ns: 'shared-a' });
      await live.service.elect(uuid(), { ns: 'shared-b' });
      const pageA = `${url}/api/overview/events?q=shared-a`;
      const streams = [await openEvents(pageA), await openEvents(pageA), await openEvents(pageA), await openEvents(`${url}/api/overview/events?q=shared-b`)];
      try {
        for (const stream of streams) await stream.next((e) => e.event === 'overview');
        // The totals statement opens each read of a page; its LIKE parameter names the page.
        const reads = (from: number, filter: string) =>
          recorder.statements.slice(from).filter((s) => /AS flapping/.test(s.query) && (s.parameters ?? []).includes(`%${filter}%`)).length;
        const from = recorder.statements.length;
        const started = performance.now();
        await sleep(POLL_MS * 15);
        const intervals = (performance.now() - started) / POLL_MS;
        // A poll reads at most once per interval (and once more at the window's edge); three unshared streams read about three times as often.
        expect(reads(from, 'shared-a')).toBeGreaterThanOrEqual(1);
        expect(reads(from, 'shared-a')).toBeLessThanOrEqual(Math.floor(intervals) + 1);
        expect(reads(from, 'shared-b')).toBeLessThanOrEqual(Math.floor(intervals) + 1);
        // Every browser of the page got the same page.
        expect(streams[1]!.events.find((e) => e.event === 'overview')!.data).toMatchObject({ total: 1, rows: [expect.objectContaining({ ns: 'shared-a' })] });
        expect(dashboard.streams).toBe(4);
      } finally {
        for (const stream of streams) stream.close();
      }
      await waitFor('the streams to end', () => dashboard.streams === 0, 5_000);
    });

    test('every statement the dashboard sent, through all of the above, was a read', () => {
      // The check itself catches a write, a locking read and SELECT … INTO.
      for (const planted of [
        'UPDATE t SET x = 1',
        'SELECT * FROM t FOR UPDATE',
        'SELECT 1 INTO @x',
        'INSERT INTO t VALUES (1)',
        'SET STATEMENT max_statement_time = 1.000 FOR UPDATE t SET x = 1',
        'SET STATEMENT max_statement_time = 1.000 FOR SELECT * FROM t FOR UPDATE',
        'KILL 42',
        'SET TRANSACTION ISOLATION LEVEL SERIALIZABLE',
      ]) {
        expect(writes([{ query: planted, at: 0 }])).toEqual([planted]);
      }
      expect(recorder.statements.length).toBeGreaterThan(20);
      expect(writes(recorder.statements)).toEqual([]);
    });
  },
  { sharedOnly: true },
);
