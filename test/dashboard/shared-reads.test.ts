/**
 * The dashboard's live views share their reads, on every database, counted at the database (every
 * statement the dashboard's DataSource sends): five browsers on one namespace's stream cost one
 * read of its leader row per interval, not five, and each gets what a `watch()` of its own yields —
 * a late one the current state first, every one another holder under the same term; five
 * overview streams of different pages of one order, and concurrent requests of such pages, read
 * every namespace once per interval, not once per page; and the snapshots kept are bounded.
 */
import type { LeaderChange } from 'gemstone-utils';
import { MAX_OVERVIEW_SNAPSHOTS } from 'gemstone-utils/dashboard';
import { waitFor } from '../elector/helpers';
import { describeEachDatabase, query, sleep, uuid } from '../support/databases';
import { EventReader, getJson, openEvents, Statement } from './support/http';
import { liveHarness, type LeaderEvent } from './support/live-harness';
import { readsEveryNamespace } from './support/overview-statements';

const POLL_MS = 200;
const BROWSERS = 5;
/** How long the reads are counted: enough intervals that five readers would show. */
const WINDOW_MS = POLL_MS * 10;

const states = (reader: EventReader) => reader.events.filter((e) => e.event === 'leader').map((e) => e.data as LeaderEvent);
const asEvent = (change: LeaderChange): LeaderEvent => ({ ns: change.ns, leaderId: change.leaderId, term: change.term, metadata: change.metadata as Record<string, unknown> | null, at: change.at.getTime() });

/** What a window of statements allows one reader that reads, then waits an interval: a read per interval, and one more. */
function oneReaderBound(elapsedMs: number): number {
  return Math.floor(elapsedMs / POLL_MS) + 1;
}

describeEachDatabase(
  'dashboard live views share their reads',
  (db) => {
    const live = liveHarness(db, POLL_MS);
    const { recorder } = live;

    /** The statements sent from now until `work` resolves, and how long that took. */
    async function counted(work: () => Promise<unknown>): Promise<{ statements: Statement[]; elapsedMs: number }> {
      const from = recorder.statements.length;
      const started = performance.now();
      await work();
      return { statements: recorder.statements.slice(from), elapsedMs: performance.now() - started };
    }

    /** A statement that reads every namespace, with `filter` as the overview's filter. */
    const fullReadOf = (filter: string) => (s: Statement) => readsEveryNamespace(s.query) && JSON.stringify(s.parameters ?? []).includes(filter);
    /** A read of `ns`'s leader row (what a watch polls), as the recorder saw it. */
    const leaderReadOf = (ns: string) => (s: Statement) => /\(SELECT 1 AS one\) clock/.test(s.query) && (s.parameters ?? []).includes(ns);

    test(`${BROWSERS} browsers on one namespace: one read per interval; each gets what its own watch() yields, a late one the current state first`, async () => {
      const { dashboard, url } = await live.start();
      const ns = 'shared-ns';
      const [a, b, c] = [uuid(), uuid(), uuid()];
      await live.service.elect(a, { ns, metadata: { host: 'web-a' } });
      // What a watch of its own gives a browser that opened at the same time.
      const controller = new AbortController();
      const own: LeaderChange[] = [];
      const ownDone = (async () => {
        for await (const change of live.service.watch({ ns, pollMs: POLL_MS, signal: controller.signal })) own.push(change);
      })();
      const browsers: EventReader[] = [];
      for (let i = 0; i < BROWSERS; i++) browsers.push(await openEvents(`${url}/api/namespace/events?ns=${ns}`));
      try {
        for (const browser of browsers) await browser.next((e) => e.event === 'leader');
        expect(dashboard.streams).toBe(BROWSERS);

        const window = await counted(() => sleep(WINDOW_MS));
        const reads = window.statements.filter(leaderReadOf(ns));
        // eslint-disable-next-line no-console
        console.log(`${db.name}: ${BROWSERS} namespace streams, ${window.elapsedMs.toFixed(0)} ms at pollMs ${POLL_MS}: ${reads.length} reads of the leader row`);
        expect(reads.length).toBeGreaterThanOrEqual(1);
        expect(reads.length).toBeLessThanOrEqual(oneReaderBound(window.elapsedMs));

        // A hand-over: every browser gets term 1, its end and term 2, as the own watch does.
        await live.service.resign(a, { ns });
        await live.service.elect(b, { ns, metadata: { host: 'web-b' } });
        for (const browser of browsers) await browser.next((e) => e.event === 'leader' && (e.data as LeaderEvent).term === 2, 5_000);
        // The own watch has seen b too, before b's grant is overwritten below.
        await waitFor('the own watch to see b', () => own.some((change) => change.leaderId === b), 5_000);
        // A late browser: the current state at once, from the shared watch.
        const late = await openEvents(`${url}/api/namespace/events?ns=${ns}`);
        browsers.push(late);
        const first = await late.next((e) => e.event === 'leader');
        expect(first.data).toMatchObject({ leaderId: b, term: 2, metadata: { host: 'web-b' } });

        // Term 2 granted again, to c (a failover that lost the first grant): another holder under the same term.
        await query(live.writer, 'UPDATE gemstone_election_leader SET leader_id = ? WHERE ns = ?', [c, ns]);
        await query(live.writer, 'UPDATE gemstone_election_history SET leader_id = ? WHERE ns = ? AND term = 2', [c, ns]);
        for (const browser of browsers) await browser.next((e) => e.event === 'leader' && (e.data as LeaderEvent).leaderId === c, 5_000);
        await waitFor('the own watch to see c', () => own.some((change) => change.leaderId === c), 5_000);

        const expected = own.map(asEvent);
        expect(expected.map((s) => [s.leaderId, s.term])).toEqual([
          [a, 1],
          [null, 1],
          [b, 2],
          [c, 2],
        ]);
        for (const browser of browsers.slice(0, BROWSERS)) expect(states(browser)).toEqual(expected);
        expect(states(late)).toEqual(expected.slice(2));
      } finally {
        controller.abort();
        await ownDone;
        for (const browser of browsers) browser.close();
      }
      await waitFor('every stream to end', () => dashboard.streams === 0, 5_000);
      // The shared watch stopped with its last browser.
      const after = await counted(() => sleep(POLL_MS * 3));
      expect(after.statements.filter(leaderReadOf(ns))).toEqual([]);
    });

    test(`${BROWSERS} overview streams on different pages of one order: every namespace read once per interval, not once per page`, async () => {
      for (let i = 0; i < 10; i++) await live.service.elect(uuid(), { ns: `pages-${i}` });
      const { dashboard, url } = await live.start();
      const browsers: EventReader[] = [];
      try {
        for (let page = 0; page < BROWSERS; page++) browsers.push(await openEvents(`${url}/api/overview/events?q=pages-&sort=health&limit=2&offset=${page * 2}`));
        for (const browser of browsers) await browser.next((e) => e.event === 'overview');
        expect(dashboard.streams).toBe(BROWSERS);
        const window = await counted(() => sleep(WINDOW_MS));
        const full = window.statements.filter(fullReadOf('pages-'));
        // eslint-disable-next-line no-console
        console.log(`${db.name}: ${BROWSERS} overview streams of one order, ${window.elapsedMs.toFixed(0)} ms at pollMs ${POLL_MS}: ${full.length} reads of every namespace`);
        expect(full.length).toBeGreaterThanOrEqual(1);
        // A snapshot is taken when one is asked for and the last began an interval ago or more.
        expect(full.length).toBeLessThanOrEqual(oneReaderBound(window.elapsedMs) + 1);
        const pages = browsers.map((browser) => (browser.events.find((e) => e.event === 'overview')!.data as { total: number; rows: { ns: string }[] }));
        expect(pages.map((page) => page.total)).toEqual(Array(BROWSERS).fill(10));
        expect(new Set(pages.flatMap((page) => page.rows.map((row) => row.ns))).size).toBe(10);
      } finally {
        for (const browser of browsers) browser.close();
      }
      await waitFor('every stream to end', () => dashboard.streams === 0, 5_000);
    });

    test(`${BROWSERS} concurrent requests for pages of one order read every namespace once`, async () => {
      for (let i = 0; i < 10; i++) await live.service.elect(uuid(), { ns: `requests-${i}` });
      // An interval far longer than the requests take, however slow the machine: they all fall in it.
      const { url } = await live.start({ pollMs: 600_000 });
      let pages: { total: number; rows: { ns: string }[] }[] = [];
      const sent = await counted(async () => {
        const answers = await Promise.all(Array.from({ length: BROWSERS }, (_, page) => getJson<(typeof pages)[number]>(`${url}/api/overview?q=requests-&sort=candidates&limit=2&offset=${page * 2}`)));
        pages = answers.map((answer) => answer.body);
      });
      expect(sent.statements.filter(fullReadOf('requests-'))).toHaveLength(1);
      expect(pages.map((page) => page.total)).toEqual(Array(BROWSERS).fill(10));
      expect(new Set(pages.flatMap((page) => page.rows.map((row) => row.ns))).size).toBe(10);
    });

    test(`at most ${MAX_OVERVIEW_SNAPSHOTS} snapshots are kept: past that the oldest is read again, the newest is not`, async () => {
      // An interval far longer than the test: only the bound drops a snapshot.
      const { url } = await live.start({ pollMs: 600_000 });
      const filter = (i: number) => `bound-${String(i).padStart(3, '0')}`;
      const fullReads = async (i: number) => (await counted(() => getJson(`${url}/api/overview?q=${filter(i)}`))).statements.filter(fullReadOf(filter(i))).length;
      for (let i = 0; i <= MAX_OVERVIEW_SNAPSHOTS; i++) expect(await fullReads(i)).toBe(1);
      expect(await fullReads(MAX_OVERVIEW_SNAPSHOTS)).toBe(0);
      expect(await fullReads(1)).toBe(0);
      expect(await fullReads(0)).toBe(1);
    });
  },
  { sharedOnly: true },
);
