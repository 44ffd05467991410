/**
 * MySQL/MariaDB sessions with any `sql_mode`: the library's statements stay safe and correct.
 * Under `NO_BACKSLASH_ESCAPES` a backslash is an ordinary character inside a string literal, so a
 * value spliced into SQL text with backslash escapes (what mysql2's `query()` does) can end its
 * literal: `ns = 'zz\' OR 1=1 -- '`. `ANSI_QUOTES` makes `"…"` an identifier, `PIPES_AS_CONCAT`
 * makes `||` a concatenation, `TRADITIONAL` is strict about every value.
 *
 * For every mode: a fresh database created by `initDb` under that mode, a bystander namespace
 * `zz` with a leader, candidates and history, then every public operation with hostile
 * namespaces and metadata. Each result is the hostile namespace's own, exactly, and the
 * bystander's rows are exactly as they were.
 */
import { DataSource, DataSourceOptions } from 'typeorm';
import {
  ElectionService,
  GemstoneDB,
  initDb,
  LeaderElector,
  LeaderElectorGroup,
  pruneExpiredCandidates,
  pruneHistory,
  ValidationError,
  withTransaction,
} from 'gemstone-utils';
import { describeEachDatabase, query, TestDatabase, uuid } from '../support/databases';
import { onEveryNewConnection, withConnectionHook } from '../support/mysql-sessions';
import { waitFor } from '../elector/helpers';

const MODES = ['NO_BACKSLASH_ESCAPES', 'ANSI_QUOTES', 'ANSI', 'PIPES_AS_CONCAT', 'TRADITIONAL', ''];

const BYSTANDER = 'zz';

/** Namespaces that break out of a string literal when escaped with backslashes under NO_BACKSLASH_ESCAPES, and more. */
const HOSTILE = [
  "zz' OR 1=1 -- ",
  "o'brien",
  "zz\\' OR 1=1 -- ",
  'back\\slash\\',
  '\\',
  "'",
  '" OR "1"="1',
  "zz' OR '1'='1",
  "'; DELETE FROM gemstone_election_candidate; -- ",
  'a`b',
  '%_*',
  'zz || 1',
  'ünïcödé 😀 名前',
];

const HOSTILE_METADATA = { "k'\"\\`": "v' OR 1=1 -- \\", quote: '"', nested: { emoji: '😀', back: '\\\\' } };

/** Everything the bystander namespace has, read behind the library's back. */
async function bystander(ds: DataSource): Promise<string> {
  const candidates = await query(ds, 'SELECT candidate_id, expires_at, metadata FROM gemstone_election_candidate WHERE ns = ? ORDER BY candidate_id', [BYSTANDER]);
  const leader = await query(ds, 'SELECT leader_id, term, lease_expires_at, updated_at FROM gemstone_election_leader WHERE ns = ?', [BYSTANDER]);
  const history = await query(ds, 'SELECT term, leader_id, ended_at, end_reason FROM gemstone_election_history WHERE ns = ? ORDER BY term', [BYSTANDER]);
  return JSON.stringify({ candidates, leader, history });
}

async function connectWithMode(db: TestDatabase, mode: string): Promise<DataSource> {
  // A database of its own, so that initDb creates the tables under the mode.
  const other = await db.sibling();
  return other.connect(onEveryNewConnection([['SET SESSION sql_mode = ?', [mode]]]) as Partial<DataSourceOptions>);
}

describeEachDatabase(
  'every sql_mode: hostile values stay values',
  (db) => {
    describe.each(MODES)('sql_mode = %j', (mode) => {
      let ds: DataSource;
      let svc: ElectionService;
      const [leader, follower] = [uuid(), uuid()];
      let before: string;

      beforeAll(async () => {
        ds = await connectWithMode(db, mode);
        const [row] = await query<{ mode: string }>(ds, 'SELECT @@SESSION.sql_mode AS mode');
        if (mode === '') expect(row!.mode).toBe('');
        else for (const flag of mode === 'ANSI' ? ['ANSI_QUOTES', 'PIPES_AS_CONCAT'] : mode === 'TRADITIONAL' ? ['STRICT_ALL_TABLES'] : [mode]) expect(row!.mode).toContain(flag);
        svc = new ElectionService(ds, { expireSeconds: 60 });
        await svc.registerCandidate(follower, { ns: BYSTANDER, metadata: { role: 'bystander' } });
        expect(await svc.elect(leader, { ns: BYSTANDER })).toBe(leader);
        await svc.resign(leader, { ns: BYSTANDER });
        expect(await svc.elect(leader, { ns: BYSTANDER })).toBe(leader);
        before = await bystander(ds);
      });

      test('reads of a hostile namespace see only that namespace', async () => {
        for (const ns of HOSTILE) {
          expect({ ns, leader: await svc.getLeader({ ns }) }).toEqual({ ns, leader: null });
          expect({ ns, candidates: await svc.listCandidates({ ns }) }).toEqual({ ns, candidates: [] });
          expect({ ns, candidates: await svc.getCandidates({ ns }) }).toEqual({ ns, candidates: [] });
          expect({ ns, history: await svc.getHistory({ ns }) }).toEqual({ ns, history: [] });
          expect({ ns, isLeader: await svc.isLeader(leader, { ns }) }).toEqual({ ns, isLeader: false });
        }
        expect(await bystander(ds)).toBe(before);
      });

      test('writes to a hostile namespace change only that namespace', async () => {
        for (const ns of HOSTILE) {
          // The bystander's candidates named in a hostile namespace: nothing of theirs goes.
          await svc.unregisterCandidate(follower, { ns });
          await svc.unregisterCandidate(leader, { ns });
          expect(await svc.resign(leader, { ns })).toBe(false);
          expect(await svc.handOver(leader, { ns })).toBe(false);
          expect(await bystander(ds)).toBe(before);
        }
      });

      test('every operation on a hostile namespace, with hostile metadata, returns exactly its own rows', async () => {
        const pruned = { history: 0 };
        for (const ns of HOSTILE) {
          const [a, b] = [uuid(), uuid()].sort();
          await svc.registerCandidate(a!, { ns, metadata: HOSTILE_METADATA });
          await svc.heartbeat(b!, { ns, metadata: { ns } });
          expect(await svc.elect(a!, { ns })).toBe(a);
          expect(await svc.electOutcome(b!, { ns })).toMatchObject({ ns, leaderId: a, term: 1, isLeader: false });
          expect(await svc.electOutcome(a!, { ns })).toMatchObject({ ns, leaderId: a, term: 1, isLeader: true, acquired: false });
          expect([await svc.isLeader(a!, { ns }), await svc.isLeader(b!, { ns })]).toEqual([true, false]);
          expect(await svc.listCandidates({ ns })).toEqual([a, b]);
          expect((await svc.getCandidates({ ns })).map((c) => [c.candidateId, c.metadata])).toEqual([
            [a, HOSTILE_METADATA],
            [b, { ns }],
          ]);
          expect(await svc.getLeader({ ns })).toMatchObject({ ns, leaderId: a, term: 1, metadata: HOSTILE_METADATA });
          const fenced = await withTransaction(ds, (m) => svc.assertLeader(a!, { ns, session: m, term: 1 }));
          expect(fenced).toMatchObject({ ns, leaderId: a, term: 1 });
          const watch = svc.watch({ ns, pollMs: 100 });
          const first = await watch.next();
          await watch.return();
          expect(first.value).toMatchObject({ ns, leaderId: a, term: 1, metadata: HOSTILE_METADATA });
          expect(await svc.resign(a!, { ns })).toBe(true);
          expect(await svc.getLeader({ ns })).toBeNull();
          expect(await svc.elect(b!, { ns })).toBe(b);
          expect(await svc.handOver(b!, { ns })).toBe(true);
          expect((await svc.getHistory({ ns })).map((e) => [e.ns, e.term, e.leaderId, e.endReason])).toEqual([
            [ns, 2, b, 'handed-over'],
            [ns, 1, a, 'resigned'],
          ]);
          expect((await svc.getHistory({ ns, limit: 1, before: 2 })).map((e) => [e.term, e.leaderId])).toEqual([[1, a]]);
          await svc.unregisterCandidate(a!, { ns });
          expect(await svc.listCandidates({ ns })).toEqual([b]);
          await svc.unregisterCandidate(b!, { ns });
          expect(await svc.listCandidates({ ns })).toEqual([]);
          pruned.history += 2;
          expect(await bystander(ds)).toBe(before);
        }
        // Nothing has been expired a day; every term above has ended (the bystander's first too).
        expect(await pruneExpiredCandidates(ds)).toBe(0);
        expect(await pruneHistory(ds, { retentionSeconds: 0 })).toBe(pruned.history + 1);
        const after = JSON.parse(await bystander(ds)) as { history: unknown[] };
        expect(after.history).toHaveLength(1);
        expect(await svc.getLeader({ ns: BYSTANDER })).toMatchObject({ leaderId: leader, term: 2 });
        expect(await initDb(ds)).toBe(ds);
      });

      test('hostile candidate ids and a NUL in a namespace are ValidationErrors that change nothing', async () => {
        const state = await bystander(ds);
        const ids = ["' OR 1=1 -- ", `${uuid()}' OR '1'='1`, `${uuid()}\\`, '"', ''];
        for (const id of ids) {
          await expect(svc.elect(id, { ns: BYSTANDER })).rejects.toBeInstanceOf(ValidationError);
          await expect(svc.unregisterCandidate(id, { ns: BYSTANDER })).rejects.toMatchObject({ parameter: 'candidateId' });
        }
        await expect(svc.getLeader({ ns: 'zz\0' })).rejects.toMatchObject({ parameter: 'options.ns' });
        await expect(svc.unregisterCandidate(follower, { ns: "zz\0' OR 1=1 -- " })).rejects.toMatchObject({ parameter: 'options.ns' });
        expect(await bystander(ds)).toBe(state);
      });

      test('a LeaderElector and a LeaderElectorGroup on hostile namespaces lead exactly those', async () => {
        const ns = HOSTILE[0]!;
        const state = await bystander(ds);
        const elector = new LeaderElector({ dataSource: ds, ns, expireSeconds: 3, intervalMs: 300, metadata: HOSTILE_METADATA });
        const group = new LeaderElectorGroup({ dataSource: ds, namespaces: HOSTILE.slice(1), expireSeconds: 3, intervalMs: 300 });
        const errors: unknown[] = [];
        elector.on('error', (error) => errors.push(error));
        group.on('error', (error) => errors.push(error));
        await elector.start();
        await group.start();
        try {
          expect(elector.isLeader).toBe(true);
          expect(await svc.getLeader({ ns })).toMatchObject({ ns, leaderId: elector.candidateId, metadata: HOSTILE_METADATA });
          await waitFor('the group to lead every namespace', () => group.leases.size === HOSTILE.length - 1, 10_000);
          for (const other of HOSTILE.slice(1)) expect(await svc.getLeader({ ns: other })).toMatchObject({ ns: other, leaderId: group.candidateId });
          expect(await bystander(ds)).toBe(state);
        } finally {
          await group.stop();
          await elector.stop();
        }
        expect(errors).toEqual([]);
        for (const other of HOSTILE) expect(await svc.getLeader({ ns: other })).toBeNull();
        expect(await bystander(ds)).toBe(state);
      });
    });
  },
  { kinds: ['mariadb'] },
);

describeEachDatabase(
  'a MySQL connection without server-side parameters (the old `mysql` package)',
  (db) => {
    test('is refused with UnsupportedConfigurationError naming connectorPackage; nothing is created', async () => {
      const other = await db.sibling();
      // mysql2 without execute(): what the `mysql` package's connections look like to the library.
      const withoutExecute = withConnectionHook((connection) => {
        connection.execute = undefined;
      });
      const ds = other.track(new DataSource({ ...other.options(withoutExecute), entities: [...GemstoneDB.entities] } as DataSourceOptions));
      const refused = { name: 'UnsupportedConfigurationError', option: 'connectorPackage' };
      await expect(initDb(ds)).rejects.toMatchObject(refused);
      await expect(new ElectionService(ds).elect(uuid(), { ns: BYSTANDER })).rejects.toMatchObject(refused);
      const tables = await query<Record<string, string>>(ds, "SHOW TABLES LIKE 'gemstone%'");
      expect(tables).toEqual([]);
    });
  },
  { kinds: ['mariadb'] },
);
