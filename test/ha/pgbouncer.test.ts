/**
 * PostgreSQL behind PgBouncer in transaction pooling mode (a private PgBouncer in front of the
 * shared server; it only forwards connections): the service, fencing inside caller transactions
 * and the elector work through it with no named prepared statements and no session state; LISTEN
 * cannot work through it, which the elector detects and reports once, falling back to ticks; and
 * `listen: { url }` to PostgreSQL directly restores instant hand-over. Hand-over times of both are
 * measured (GEMSTONE_HA_FULL=1 for the long run).
 */
import type { DataSource } from 'typeorm';
import { ElectionService, initDb, LeaderElector, LeaderElectorError, NotLeaderError } from 'gemstone-utils';
import { describeEachDatabase, inCallerTransaction, query, uuid } from '../support/databases';
import { ns as freshNs } from '../support/rows';
import { recordingElector, waitFor } from '../elector/helpers';
import { FULL, measureHandovers, privateDb, PrivatePgbouncer, report } from './support';

const EXPIRE = 5;
const INTERVAL = 1_000;
const ROUNDS = FULL ? 30 : 3;

describeEachDatabase(
  'PostgreSQL behind PgBouncer (pool_mode = transaction)',
  (db) => {
    let bouncer: PrivatePgbouncer;
    let pooled: DataSource;
    const electors: LeaderElector[] = [];

    beforeAll(async () => {
      bouncer = await privateDb.startPgbouncer({ poolMode: 'transaction', poolSize: 3 });
      pooled = db.track(await initDb({ ...db.options(), url: bouncer.rewrite(db.url()) } as never));
      await query(pooled, 'CREATE TABLE ledger (id serial PRIMARY KEY, ns text NOT NULL, term bigint NOT NULL)');
    });
    afterEach(async () => {
      await Promise.all(electors.splice(0).map((e) => e.stop()));
    });
    afterAll(async () => {
      // The database is dropped (and its pooled server connections closed) by describeEachDatabase.
      await pooled?.destroy().catch(() => undefined);
      bouncer?.stop();
    });

    function elector(options: Parameters<typeof recordingElector>[1]) {
      const made = recordingElector(pooled, { expireSeconds: EXPIRE, intervalMs: INTERVAL, ...options });
      electors.push(made.elector);
      return made;
    }

    test('elect, renew, and assertLeader fencing inside caller transactions work through the pooler', async () => {
      const svc = new ElectionService(pooled, { expireSeconds: EXPIRE });
      const ns = freshNs();
      const [a, b] = [uuid(), uuid()];
      expect(await svc.elect(a, { ns })).toBe(a);
      expect(await svc.elect(b, { ns })).toBe(a);
      expect(await svc.elect(a, { ns })).toBe(a);
      expect((await svc.getLeader({ ns }))?.term).toBe(1);
      expect(await svc.listCandidates({ ns })).toEqual([a, b].sort());

      // The leader's fenced write commits; the follower's is refused and rolled back.
      await inCallerTransaction(pooled, async (runner) => {
        const info = await svc.assertLeader(a, { ns, term: 1, session: runner });
        await runner.query('INSERT INTO ledger (ns, term) VALUES ($1, $2)', [ns, info.term]);
      });
      await expect(
        inCallerTransaction(pooled, async (runner) => {
          await runner.query('INSERT INTO ledger (ns, term) VALUES ($1, $2)', [ns, 99]);
          await svc.assertLeader(b, { ns, session: runner });
        }),
      ).rejects.toBeInstanceOf(NotLeaderError);
      expect(await query(pooled, 'SELECT term FROM ledger WHERE ns = $1', [ns])).toEqual([{ term: '1' }]);

      // A takeover waits for the fenced transaction; after it the old term is refused.
      expect(await svc.resign(a, { ns })).toBe(true);
      expect(await svc.elect(b, { ns })).toBe(b);
      await expect(
        inCallerTransaction(pooled, (runner) => svc.assertLeader(a, { ns, term: 1, session: runner })),
      ).rejects.toMatchObject({ name: 'NotLeaderError', leaderId: b, term: 2 });
      await svc.unregisterCandidate(b, { ns });
      expect(await svc.getLeader({ ns })).toBeNull();
    });

    test('no named prepared statements and no session state: one server connection carries every client', async () => {
      // One server connection: whatever any client left in its session would be seen here.
      const single = await privateDb.startPgbouncer({ poolMode: 'transaction', poolSize: 1 });
      const ds = db.track(await initDb({ ...db.options(), url: single.rewrite(db.url()) } as never));
      try {
        const ns = freshNs();
        const svc = new ElectionService(ds, { expireSeconds: EXPIRE });
        const made = recordingElector(ds, { ns, expireSeconds: EXPIRE, intervalMs: INTERVAL, listen: false });
        await made.elector.start();
        expect(made.elector.isLeader).toBe(true);
        await inCallerTransaction(ds, (runner) => svc.assertLeader(made.elector.candidateId, { ns, term: made.elector.term!, session: runner }));
        await Promise.all([1, 2, 3, 4].map(() => svc.elect(uuid(), { ns })));
        await made.elector.stop();
        expect(made.log.filter((r) => r.kind === 'error')).toEqual([]);
        const prepared = await query(ds, 'SELECT name FROM pg_prepared_statements');
        expect(prepared).toEqual([]);
        // Nothing set for the session. (`SET TRANSACTION` marks transaction_isolation and its
        // siblings as session-sourced although they end with the transaction: excluded.)
        const changed = await query(ds, "SELECT name FROM pg_settings WHERE source = 'session' AND name NOT LIKE 'transaction\\_%'");
        expect(changed).toEqual([]);
        const [{ listening }] = await query<{ listening: number }>(ds, 'SELECT count(*)::int AS listening FROM pg_listening_channels()');
        expect(listening).toBe(0);
      } finally {
        await ds.destroy().catch(() => undefined);
        single.stop();
      }
    });

    test('LISTEN through the pooler is detected: one warning, hand-over falls back to the next tick', async () => {
      const ns = freshNs();
      const leader = elector({ ns });
      const follower = elector({ ns });
      await leader.elector.start();
      await follower.elector.start();
      expect(leader.elector.isLeader).toBe(true);
      const unavailable = (log: typeof leader.log) =>
        log.filter((r): r is { kind: 'error'; error: LeaderElectorError } => r.kind === 'error' && /did not arrive on the LISTEN connection/.test(r.error.message));
      await waitFor('the probe to give LISTEN up', () => unavailable(follower.log).length > 0, 15_000, 50);
      expect(unavailable(follower.log)[0]!.error.phase).toBe('listen');
      expect(unavailable(follower.log)[0]!.error.message).toMatch(/listen: \{ url \}/);
      // Both electors share the DataSource's LISTEN connection: each reports it once.
      await waitFor('the leader to report it too', () => unavailable(leader.log).length > 0, 2_000);
      await new Promise((resolve) => setTimeout(resolve, 1_500));
      expect(unavailable(leader.log)).toHaveLength(1);
      expect(unavailable(follower.log)).toHaveLength(1);
      expect(leader.log.filter((r) => r.kind === 'error')).toHaveLength(1);

      const stats = await measureHandovers(leader.elector, follower.elector, ROUNDS, INTERVAL * 3 + 3_000);
      report(`hand-over through PgBouncer (transaction mode) without a direct LISTEN connection, intervalMs ${INTERVAL}`, stats);
      // The next tick of the follower: at most 1.1 × intervalMs, plus a loaded machine's slack.
      expect(stats.maxMs).toBeLessThanOrEqual(INTERVAL * 1.1 + 1_500);
    }, 120_000);

    test('listen: { url } to PostgreSQL directly: instant hand-over behind the pooler', async () => {
      const ns = freshNs();
      const listen = { url: db.url() };
      const a = elector({ ns, listen });
      const b = elector({ ns, listen });
      await a.elector.start();
      await b.elector.start();
      // Long enough for the probe to have failed had it been going to.
      await new Promise((resolve) => setTimeout(resolve, 1_000));
      const stats = await measureHandovers(a.elector, b.elector, ROUNDS, INTERVAL * 3 + 3_000);
      report(`hand-over through PgBouncer (transaction mode) with listen: { url } direct, intervalMs ${INTERVAL}`, stats);
      expect(stats.medianMs).toBeLessThan(Math.min(500, INTERVAL / 2));
      expect(a.log.filter((r) => r.kind === 'error')).toEqual([]);
      expect(b.log.filter((r) => r.kind === 'error')).toEqual([]);
    }, 120_000);
  },
  { kinds: ['postgres'] },
);
