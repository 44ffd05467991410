/**
 * `dashboard.close()` is bounded: with an overview read stuck behind a lock
 * held by another session (PostgreSQL `LOCK TABLE … ACCESS EXCLUSIVE`, MariaDB `LOCK TABLES …
 * WRITE`), close() resolves after `closeTimeoutMs`, while the lock is still held; the abandoned
 * read ends, and its connection is free, once the lock is released. SQLite is left out: a read
 * there waits at most the driver's busy timeout, then fails.
 */
import type { DataSource, QueryRunner } from 'typeorm';
import { ElectionService } from 'gemstone-utils';
import { createDashboard } from 'gemstone-utils/dashboard';
import { waitFor } from '../elector/helpers';
import { describeEachDatabase, query, uuid } from '../support/databases';
import { openEvents, serve } from './support/http';

const CLOSE_TIMEOUT_MS = 300;
/** How long the lock is held at most: far beyond the close bound. */
const LOCK_MS = 20_000;

describeEachDatabase(
  'dashboard close() with reads stuck behind a lock',
  (db) => {
    let writer: DataSource;
    let reader: DataSource;

    beforeAll(async () => {
      writer = await db.connect();
      reader = await db.connect({}, { createTables: false });
      await new ElectionService(writer).elect(uuid(), { ns: 'locked' });
    });

    async function lock(runner: QueryRunner): Promise<() => Promise<void>> {
      if (db.kind === 'postgres') {
        await runner.startTransaction();
        await runner.query('LOCK TABLE gemstone_election_leader IN ACCESS EXCLUSIVE MODE');
        return () => runner.commitTransaction();
      }
      await runner.query('LOCK TABLES gemstone_election_leader WRITE');
      return async () => void (await runner.query('UNLOCK TABLES'));
    }

    /** Sessions of this database waiting for a lock. */
    async function waiting(): Promise<number> {
      const rows =
        db.kind === 'postgres'
          ? await query<{ n: unknown }>(writer, "SELECT COUNT(*) AS n FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'")
          : await query<{ n: unknown }>(writer, "SELECT COUNT(*) AS n FROM information_schema.processlist WHERE db = DATABASE() AND state LIKE 'Waiting for table metadata lock%'");
      return Number(rows[0]!.n);
    }

    test('close() resolves after closeTimeoutMs while the lock is held; the abandoned reads end when it is released', async () => {
      const errors: unknown[] = [];
      const dashboard = createDashboard({ dataSource: reader, pollMs: 200, closeTimeoutMs: CLOSE_TIMEOUT_MS, onError: (error) => errors.push(error) });
      const served = await serve((request, response) => dashboard(request, response));
      const runner = writer.createQueryRunner();
      await runner.connect();
      let released = false;
      let unlock: (() => Promise<void>) | undefined;
      let timer: NodeJS.Timeout | undefined;
      try {
        const stream = await openEvents(`${served.url}/api/overview/events`);
        await stream.next((e) => e.event === 'overview');
        const release = await lock(runner);
        unlock = async () => {
          if (released) return;
          released = true;
          clearTimeout(timer);
          await release();
        };
        timer = setTimeout(() => void unlock?.(), LOCK_MS);
        const pending = fetch(`${served.url}/api/overview`);
        // The stream's next poll and the request both wait for the lock.
        await waitFor('two reads waiting for the lock', async () => (await waiting()) >= 2, 10_000, 50);
        const started = performance.now();
        await dashboard.close();
        const took = performance.now() - started;
        expect(released).toBe(false);
        expect(took).toBeGreaterThanOrEqual(CLOSE_TIMEOUT_MS - 50);
        await unlock();
        // The abandoned reads end; their connections are back in the pool, and work.
        await pending;
        await waitFor('no read waiting', async () => (await waiting()) === 0, 10_000, 50);
        expect(await query(reader, 'SELECT 1 AS one')).toEqual([{ one: 1 }]);
        stream.close();
      } finally {
        await unlock?.();
        await runner.release();
        await dashboard.close();
        await served.close();
      }
      expect(errors).toEqual([]);
    }, 60_000);
  },
  { kinds: ['postgres', 'mariadb'] },
);
