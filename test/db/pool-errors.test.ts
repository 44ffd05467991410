/**
 * A PostgreSQL session the server ends in the same packet that reports it ready (a demoting
 * Patroni primary, `pg_terminate_backend`, a restart) reached the application's process as an
 * 'error' event with no listener: pg-pool removes its listener as it hands the client out, and
 * TypeORM adds its own a microtask later. Node throws such an event, and the process exited
 * (seen in the Patroni test as a worker's "Unhandled 'error' event", code 57P01). Once the library
 * has used a DataSource, the transaction that took such a connection fails instead, and the
 * next ones succeed. The child (test/support/children/pool-error.js) ends the sessions through a
 * proxy, every one of them deterministically; it runs in a process of its own so that a crash is
 * a crash.
 */
import { describeEachDatabase } from '../support/databases';
import { runNode } from '../support/children/spawn';

describeEachDatabase(
  'a session ended as it connects',
  (db) => {
    async function run(reinitialize: boolean) {
      const armed = 4;
      const result = await runNode(['test/support/children/pool-error.js', JSON.stringify({ url: db.url(), armed, reinitialize })], { timeoutMs: 60_000 });
      expect({ code: result.code, stderr: result.stderr.slice(0, 2_000) }).toEqual({ code: 0, stderr: '' });
      const report = JSON.parse(result.stdout.trim().split('\n').pop()!) as { injected: number; failed: number; errors: string[]; after: number };
      // Every armed session was ended in its ready packet, and each failed its transaction.
      const rounds = reinitialize ? 2 : 1;
      expect(report.injected).toBe(armed * rounds);
      expect(report.failed).toBe(armed * rounds);
      expect(report.errors.length).toBeGreaterThan(0);
      expect(report.after).toBe(3 * rounds);
    }

    test('fails the transaction that took it; the process lives on and the next transactions succeed', async () => {
      await run(false);
    }, 90_000);

    // A DataSource destroyed and initialized again has a new pool, which is adopted too.
    test('the same after the DataSource was destroyed and initialized again', async () => {
      await run(true);
    }, 90_000);
  },
  { kinds: ['postgres'] },
);
