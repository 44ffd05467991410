/**
 * `dashboard.close()` cancels what it started instead of abandoning it. With the dashboard's reads
 * waiting behind a lock another session holds (PostgreSQL `LOCK TABLE … ACCESS EXCLUSIVE`, MariaDB
 * `LOCK TABLES … WRITE`) — an overview stream's poll, a namespace stream's watch, a request for the
 * overview and one for a timeline — close() resolves well within `closeTimeoutMs` while the lock
 * is still held, and when it resolves no statement of the dashboard's runs at the server any more.
 * A request whose client goes away is cancelled at the server the same way, and `readTimeoutMs`
 * bounds one read: a request answers 503 naming it, a stream sends a `problem` and goes on.
 * On SQLite, where no read waits without a bound, a read waiting for the shared connection (an
 * application's transaction holds it) stops waiting when close() is called.
 */
import type { DataSource, QueryRunner } from 'typeorm';
import { ElectionService } from 'gemstone-utils';
import { createDashboard, type DashboardOptions } from 'gemstone-utils/dashboard';
import { waitFor } from '../elector/helpers';
import { describeEachDatabase, query, uuid } from '../support/databases';
import { openEvents, serve } from './support/http';

/** Far above what a cancel takes, even beside busy loops: reaching it means reads were waited out, not cancelled. */
const CLOSE_TIMEOUT_MS = 10_000;
/** How long the lock is held at most: beyond every bound of the tests. */
const LOCK_MS = 30_000;
const READ_TIMEOUT_MS = 1_000;
/** The reader's PostgreSQL `application_name`: its sessions are the dashboard's. */
const APP = 'gemstone-dashboard-close-test';

describeEachDatabase(
  'dashboard reads are cancelled at the database',
  (db) => {
    let writer: DataSource;
    let reader: DataSource;

    beforeAll(async () => {
      writer = await db.connect();
      // Only the dashboards of this file read through it.
      reader = await db.connect(db.kind === 'postgres' ? { applicationName: APP } : {}, { createTables: false });
      const service = new ElectionService(writer);
      await service.elect(uuid(), { ns: 'locked' });
    });

    interface Lock {
      /** The holder's session id at the server. */
      readonly session: number;
      readonly released: () => boolean;
      release(): Promise<void>;
    }

    /** Locks the leader and history tables from another session (released after LOCK_MS at the latest). */
    async function lock(): Promise<Lock> {
      const runner: QueryRunner = writer.createQueryRunner();
      await runner.connect();
      let done: () => Promise<void>;
      let session: number;
      if (db.kind === 'postgres') {
        session = Number((await runner.query('SELECT pg_backend_pid() AS pid'))[0].pid);
        await runner.startTransaction();
        await runner.query('LOCK TABLE gemstone_election_leader, gemstone_election_history IN ACCESS EXCLUSIVE MODE');
        done = () => runner.commitTransaction();
      } else {
        session = Number((await runner.query('SELECT CONNECTION_ID() AS id'))[0].id);
        await runner.query('LOCK TABLES gemstone_election_leader WRITE, gemstone_election_history WRITE');
        done = async () => void (await runner.query('UNLOCK TABLES'));
      }
      let released = false;
      const release = async () => {
        if (released) return;
        released = true;
        clearTimeout(timer);
        try {
          await done();
        } finally {
          await runner.release();
        }
      };
      const timer = setTimeout(() => void release(), LOCK_MS);
      return { session, released: () => released, release };
    }

    /** The dashboard's statements waiting for a lock now, as the server shows them. */
    async function waiting(): Promise<string[]> {
      const rows =
        db.kind === 'postgres'
          ? await query<{ query: string }>(writer, "SELECT query FROM pg_stat_activity WHERE application_name = $1 AND wait_event_type = 'Lock'", [APP])
          : await query<{ query: string }>(
              writer,
              "SELECT info AS query FROM information_schema.processlist WHERE db = DATABASE() AND state LIKE 'Waiting for table metadata lock%'",
            );
      return rows.map((row) => String(row.query));
    }

    /**
     * Statements of the dashboard's the server still runs, or a transaction it left open: every
     * session of the reader's but idle ones (PostgreSQL), every session of this database but this
     * one, the lock's holder and sleeping ones (MariaDB: only the reader sends statements here).
     */
    async function running(lock: Lock): Promise<string[]> {
      const rows =
        db.kind === 'postgres'
          ? await query<{ state: string; query: string }>(writer, "SELECT state, query FROM pg_stat_activity WHERE application_name = $1 AND state <> 'idle'", [APP])
          : await query<{ state: string; query: string }>(
              writer,
              "SELECT command AS state, info AS query FROM information_schema.processlist WHERE db = DATABASE() AND id <> CONNECTION_ID() AND id <> ? AND command <> 'Sleep'",
              [lock.session],
            );
      return rows.map((row) => `${row.state}: ${row.query}`);
    }

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
      const { dashboard, url, errors, close } = await start({ pollMs: 200 });
      let held: Lock | undefined;
      try {
        const overviewStream = await openEvents(`${url}/api/overview/events`);
        const namespaceStream = await openEvents(`${url}/api/namespace/events?ns=locked`);
        await overviewStream.next((e) => e.event === 'overview');
        await namespaceStream.next((e) => e.event === 'leader');
        held = await lock();
        const requests = [fetch(`${url}/api/overview`), fetch(`${url}/api/namespace/timeline?ns=locked`)];
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
          // Each statement carried its own bound at the server (readTimeoutMs, 10 s by default).
          for (const statement of waited) expect(statement).toMatch(/^SET STATEMENT max_statement_time = 10\.000 FOR SELECT /);
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
      const { url, errors, close } = await start();
      const held = await lock();
      try {
        const client = new AbortController();
        const request = fetch(`${url}/api/overview`, { signal: client.signal }).catch((error: unknown) => error);
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

    test('readTimeoutMs: a read stuck behind a lock is cancelled at the bound; a request answers 503 naming it, nothing keeps running', async () => {
      const { url, errors, close } = await start({ readTimeoutMs: READ_TIMEOUT_MS });
      let held: Lock | undefined;
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
        expect(body.error).toMatch(/^the database did not answer this read within readTimeoutMs \(1000 ms\), so it was cancelled there; .*raise readTimeoutMs$/);
        expect(took).toBeGreaterThanOrEqual(READ_TIMEOUT_MS - 20);
        expect(took).toBeLessThan(READ_TIMEOUT_MS + margin);
      } finally {
        await held?.release();
        await close();
      }
      expect(errors).toEqual([]);
    }, 60_000);

    test("readTimeoutMs: an overview stream whose read hits it sends a 'problem' naming it, tells onError, and goes on once the lock is gone", async () => {
      const { url, errors, close } = await start({ pollMs: 200, readTimeoutMs: READ_TIMEOUT_MS });
      let held: Lock | undefined;
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
