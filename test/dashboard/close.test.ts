/**
 * `dashboard.close()` cancels what it started instead of abandoning it. With the dashboard's reads
 * waiting behind a lock another session holds (PostgreSQL `LOCK TABLE … ACCESS EXCLUSIVE`, MariaDB
 * `LOCK TABLES … WRITE`) — an overview stream's poll, a namespace stream's watch, a request for the
 * overview and one for a timeline — close() resolves well within `closeTimeoutMs` while the lock
 * is still held, and when it resolves no statement of the dashboard's runs at the server any more.
 * A request whose client goes away is cancelled at the server the same way (an overview snapshot
 * that requests and streams share, once the last of them has gone), and `readTimeoutMs`
 * bounds one read: a request answers 503 naming it, a stream sends a `problem` and goes on.
 * On SQLite, where no read waits without a bound, a read waiting for the shared connection (an
 * application's transaction holds it) stops waiting when close() is called.
 */
import type { DataSource } from 'typeorm';
import { ElectionService } from 'gemstone-utils';
import { createDashboard, type DashboardOptions } from 'gemstone-utils/dashboard';
import { waitFor } from '../elector/helpers';
import { describeEachDatabase, query, uuid } from '../support/databases';
import { openEvents, serve } from './support/http';
import { HeldLock, lockTables, runningStatements, waitingForLocks } from './support/locks';
import { readsEveryNamespace } from './support/overview-statements';

/** Far above what a cancel takes, even beside busy loops: reaching it means reads were waited out, not cancelled. */
const CLOSE_TIMEOUT_MS = 10_000;
/** How long the lock is held at most: beyond every bound of the tests. */
const LOCK_MS = 30_000;
const READ_TIMEOUT_MS = 1_000;
/** A read bound none of the waits below reaches: only a cancel can end those reads in time. */
const LONG_READ_TIMEOUT_MS = 60_000;

describeEachDatabase(
  'dashboard reads are cancelled at the database',
  (db) => {
    let writer: DataSource;
    let reader: DataSource;

    beforeAll(async () => {
      writer = await db.connect();
      // Only the dashboards of this file read through it.
      reader = await db.connect({}, { createTables: false });
      const service = new ElectionService(writer);
      await service.elect(uuid(), { ns: 'locked' });
    });

    /** Locks the leader and history tables from another session (released after LOCK_MS at the latest). */
    const lock = () => lockTables(writer, db.kind, ['gemstone_election_leader', 'gemstone_election_history'], LOCK_MS);
    /** The dashboard's statements waiting for a lock now (only its reads can wait here). */
    const waiting = () => waitingForLocks(writer, db.kind);
    /** The dashboard's statements the server still runs, or a transaction it left open (only the reader sends any besides the lock). */
    const running = (held: HeldLock) => runningStatements(writer, db.kind, held);

    /** A dashboard on the reader with a port of its own; `errors` is what it told `onError`. */
    async function start(options: DashboardOptions = {}) {
      const errors: unknown[] = [];
      const dashboard = createDashboard({ dataSource: reader, closeTimeoutMs: CLOSE_TIMEOUT_MS, onError: (error) => errors.push(error), ...options });
      const served = await serve((request, response) => dashboard(request, response));
      const close = async () => {
        await dashboard.close();
        await served.close();
      };
      return { dashboard, url: served.url, errors, close };
    }

    test('close() cancels every read waiting behind a lock at the database, and resolves once they ended, while the lock is held', async () => {
      const { dashboard, url, errors, close } = await start({ pollMs: 200, readTimeoutMs: LONG_READ_TIMEOUT_MS });
      let held: HeldLock | undefined;
      try {
        const overviewStream = await openEvents(`${url}/api/overview/events`);
        const namespaceStream = await openEvents(`${url}/api/namespace/events?ns=locked`);
        await overviewStream.next((e) => e.event === 'overview');
        await namespaceStream.next((e) => e.event === 'leader');
        held = await lock();
        // The request's page has a filter of its own: its snapshot is not the stream's, which it would share.
        const requests = [fetch(`${url}/api/overview?q=locked`), fetch(`${url}/api/namespace/timeline?ns=locked`)];
        // Both streams' next reads and both requests wait for the lock, as the server shows.
        await waitFor('four reads waiting for the lock', async () => (await waiting()).length >= 4, 15_000, 20);
        const waited = await waiting();
        const started = performance.now();
        await dashboard.close();
        const took = performance.now() - started;
        // Nothing of the dashboard's runs at the server any more, although the lock is still held.
        const left = await running(held);
        expect(held.released()).toBe(false);
        expect(left).toEqual([]);
        expect(await waiting()).toEqual([]);
        // It resolved because the reads ended, not because closeTimeoutMs ran out.
        expect(took).toBeLessThan(CLOSE_TIMEOUT_MS);
        if (db.kind === 'mariadb') {
          // Each statement carried its own bound at the server: readTimeoutMs.
          for (const statement of waited) expect(statement).toMatch(/^SET STATEMENT max_statement_time = 60\.000 FOR SELECT /);
        }
        for (const response of await Promise.all(requests)) {
          expect({ status: response.status, body: await response.json() }).toEqual({ status: 503, body: { error: 'the dashboard is closed' } });
        }
        await overviewStream.ended;
        await namespaceStream.ended;
        await held.release();
        // The connections went back to the pool in working order.
        expect(await query(reader, 'SELECT 1 AS one')).toEqual([{ one: 1 }]);
      } finally {
        await held?.release();
        await close();
      }
      expect(errors).toEqual([]);
    }, 60_000);

    test('a request whose client goes away is cancelled at the database', async () => {
      const { url, errors, close } = await start({ readTimeoutMs: LONG_READ_TIMEOUT_MS });
      const held = await lock();
      try {
        const client = new AbortController();
        // A read of its own (an overview's snapshot, which requests share, is the next test's).
        const request = fetch(`${url}/api/namespace?ns=locked`, { signal: client.signal }).catch((error: unknown) => error);
        await waitFor('the read waiting for the lock', async () => (await waiting()).length >= 1, 15_000, 20);
        client.abort();
        await request;
        await waitFor('the read to be cancelled at the database', async () => (await running(held)).length === 0, 10_000, 20);
        expect(held.released()).toBe(false);
      } finally {
        await held.release();
        await close();
      }
      expect(errors).toEqual([]);
    }, 60_000);

    test('an overview snapshot is cancelled at the database once every request and stream waiting for it has gone, not before', async () => {
      const errors: unknown[] = [];
      let authorized!: () => void;
      let arrival = new Promise<void>((resolve) => (authorized = resolve));
      const authorize = () => {
        authorized();
        return true;
      };
      /** Resolves once the next request has passed authorize and joined a read: from there to the wait nothing waits for I/O. */
      const joined = async () => {
        await arrival;
        arrival = new Promise<void>((resolve) => (authorized = resolve));
        await new Promise((resolve) => setImmediate(resolve));
      };
      const dashboard = createDashboard({ dataSource: reader, closeTimeoutMs: CLOSE_TIMEOUT_MS, pollMs: 200, readTimeoutMs: LONG_READ_TIMEOUT_MS, authorize, onError: (error) => errors.push(error) });
      /** Responses whose connection went: the dashboard heard of each in the same event. */
      let gone = 0;
      const served = await serve((request, response) => {
        response.once('close', () => gone++);
        dashboard(request, response);
      });
      const { url } = served;
      const snapshotWaiting = async () => (await waiting()).filter(readsEveryNamespace).length;
      let held: HeldLock | undefined;
      try {
        // Two requests of one filter and order share one snapshot, which waits for the lock; one goes.
        held = await lock();
        const leaving = new AbortController();
        const left = fetch(`${url}/api/overview?q=shared-snap`, { signal: leaving.signal }).catch((error: unknown) => error);
        await joined();
        const staying = fetch(`${url}/api/overview?q=shared-snap`);
        await joined();
        await waitFor('the snapshot waiting for the lock', async () => (await snapshotWaiting()) >= 1, 15_000, 20);
        expect(await snapshotWaiting()).toBe(1);
        leaving.abort();
        await left;
        await waitFor('the dashboard to hear the client went', () => gone >= 1, 10_000);
        // The snapshot went on for the other: it answers once the lock is gone.
        await held.release();
        expect((await staying).status).toBe(200);

        // The one request waiting for a snapshot goes: the snapshot is cancelled at the database.
        held = await lock();
        const client = new AbortController();
        const request = fetch(`${url}/api/overview?q=alone`, { signal: client.signal }).catch((error: unknown) => error);
        await waitFor('the snapshot waiting for the lock', async () => (await snapshotWaiting()) >= 1, 15_000, 20);
        client.abort();
        await request;
        await waitFor('the snapshot to be cancelled at the database', async () => (await running(held!)).length === 0, 10_000, 20);
        expect(held.released()).toBe(false);

        // A stream's poll: its snapshot (the first read of each of its intervals) waits for the lock; the stream goes.
        await held.release();
        const stream = await openEvents(`${url}/api/overview/events?q=locked`);
        await stream.next((e) => e.event === 'overview');
        held = await lock();
        await waitFor("the stream's snapshot waiting for the lock", async () => (await snapshotWaiting()) >= 1, 15_000, 20);
        stream.close();
        await waitFor('the stream to end, its snapshot cancelled at the database', async () => dashboard.streams === 0 && (await running(held!)).length === 0, 10_000, 20);
        expect(held.released()).toBe(false);
      } finally {
        await held?.release();
        await dashboard.close();
        await served.close();
      }
      expect(errors).toEqual([]);
    }, 60_000);

    test('readTimeoutMs: a read stuck behind a lock is cancelled at the bound; a request answers 503 naming it, nothing keeps running', async () => {
      const { url, errors, close } = await start({ readTimeoutMs: READ_TIMEOUT_MS });
      let held: HeldLock | undefined;
      try {
        // What an unhindered request takes here and now: the margin for what follows the bound.
        const unhindered = performance.now();
        expect((await fetch(`${url}/api/overview`)).status).toBe(200);
        const margin = Math.max(1_000, 10 * (performance.now() - unhindered));
        held = await lock();
        const started = performance.now();
        const response = await fetch(`${url}/api/overview`);
        const took = performance.now() - started;
        const body = (await response.json()) as { error: string };
        expect(held.released()).toBe(false);
        expect(await running(held)).toEqual([]);
        expect(response.status).toBe(503);
        expect(response.headers.get('retry-after')).toBe('5');
        expect(body.error).toMatch(/^the database did not answer this read within readTimeoutMs \(1000 ms\), so it was stopped there; .*raise readTimeoutMs$/);
        // The bound is counted from when the read began, after `started` (the host's timer, counted
        // in whole ms, may run out up to 1 ms before it; the server's, from a statement sent later).
        expect(took).toBeGreaterThanOrEqual(READ_TIMEOUT_MS - 1);
        expect(took).toBeLessThan(READ_TIMEOUT_MS + margin);
      } finally {
        await held?.release();
        await close();
      }
      expect(errors).toEqual([]);
    }, 60_000);

    test("readTimeoutMs: an overview stream whose read hits it sends a 'problem' naming it, tells onError, and goes on once the lock is gone", async () => {
      const { url, errors, close } = await start({ pollMs: 200, readTimeoutMs: READ_TIMEOUT_MS });
      let held: HeldLock | undefined;
      try {
        const stream = await openEvents(`${url}/api/overview/events`);
        await stream.next((e) => e.event === 'overview');
        held = await lock();
        const problem = await stream.next((e) => e.event === 'problem', 15_000);
        expect(problem.data).toEqual({ error: expect.stringMatching(/^the database did not answer this read within readTimeoutMs \(1000 ms\)/) });
        expect(held.released()).toBe(false);
        expect(errors.length).toBeGreaterThanOrEqual(1);
        for (const error of errors) expect(error).toMatchObject({ name: 'ReadTimeoutError', timeoutMs: READ_TIMEOUT_MS });
        const seen = stream.events.length;
        await held.release();
        await stream.next((e) => e.event === 'overview' && stream.events.indexOf(e) >= seen, 15_000);
        stream.close();
      } finally {
        await held?.release();
        await close();
      }
    }, 60_000);
  },
  { kinds: ['postgres', 'mariadb'] },
);

describeEachDatabase(
  'dashboard close() with a read waiting for the shared SQLite connection',
  (db) => {
    test("the read stops waiting: close() resolves with the request answered 503 while the application's transaction is still open", async () => {
      const ds = await db.connect();
      await new ElectionService(ds).elect(uuid(), { ns: 'busy' });
      const errors: unknown[] = [];
      let arrived!: () => void;
      const reached = new Promise<void>((resolve) => (arrived = resolve));
      const authorize = () => {
        arrived();
        return true;
      };
      const dashboard = createDashboard({ dataSource: ds, closeTimeoutMs: CLOSE_TIMEOUT_MS, authorize, onError: (error) => errors.push(error) });
      const served = await serve((request, response) => dashboard(request, response));
      // The application's transaction on the one connection all of the DataSource's QueryRunners share.
      const runner = ds.createQueryRunner();
      await runner.startTransaction();
      try {
        const request = fetch(`${served.url}/api/overview`);
        await reached;
        // From authorize to the wait for the shared connection nothing waits for I/O: a macrotask later the read waits there.
        await new Promise((resolve) => setImmediate(resolve));
        const started = performance.now();
        await dashboard.close();
        const took = performance.now() - started;
        expect(runner.isTransactionActive).toBe(true);
        const response = await request;
        expect({ status: response.status, body: await response.json() }).toEqual({ status: 503, body: { error: 'the dashboard is closed' } });
        expect(took).toBeLessThan(CLOSE_TIMEOUT_MS);
      } finally {
        if (runner.isTransactionActive) await runner.rollbackTransaction();
        await runner.release();
        await dashboard.close();
        await served.close();
      }
      expect(errors).toEqual([]);
    }, 60_000);
  },
  { kinds: ['sqlite'] },
);

describe('dashboard option readTimeoutMs', () => {
  test.each([0, -1, 1.5, 600_001, '1000', Number.NaN])('%p is refused with a ValidationError naming it', (value) => {
    expect(() => createDashboard({ readTimeoutMs: value as number })).toThrow(
      expect.objectContaining({ name: 'ValidationError', parameter: 'options.readTimeoutMs', message: expect.stringMatching(/^options\.readTimeoutMs must be an integer from 1 to 600000/) }),
    );
  });
});
