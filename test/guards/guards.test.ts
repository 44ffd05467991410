/**
 * Guarded tables: the database refuses INSERT, UPDATE, DELETE (and on PostgreSQL TRUNCATE) on a
 * guarded table unless the writing transaction proved, in that transaction, the live leadership
 * of the table's namespace (assertLeader with its session). The same cases run on PostgreSQL and
 * MariaDB, each through {@link Flavor}'s few differences of SQL. Each case drives the state it
 * needs and reads the outcome from the database: the rows a refused write leaves (none), the
 * proof's end with its transaction on the same connection (and, on MariaDB, where it is a user
 * variable, on the pool's one connection), a lease that ran out inside the proving transaction,
 * the catalog's list, hostile names, a renamed table, the migration. SQLite runs them on a database
 * file (another program opens the same file), with cases of its own: a raw COMMIT that would keep
 * the proof is refused, and the proof is never seen by another connection.
 */
import * as mysql from 'mysql2/promise';
import { Client } from 'pg';
import type { DataSource, QueryRunner } from 'typeorm';
import { ElectionService, GemstoneDB, LeaderElector, NotLeaderError, TablesMissingError, ValidationError, withTransaction } from 'gemstone-utils';
import { waitFor } from '../elector/helpers';
import { describeEachDatabase, inCallerTransaction, query, sleep, uuid } from '../support/databases';
import { ns as freshNs } from '../support/rows';

/** What differs between the databases in these tests: quoting, the refusal's code, a raw client, catalog reads. */
interface Flavor {
  /** The refusal's code as any client sees it: PostgreSQL's SQLSTATE GS001, MariaDB's error 45001, SQLite's constraint error (a trigger's RAISE). */
  readonly refused: string;
  /** Whether the refusal names the leader of the moment (SQLite's is a fixed message: it cannot). */
  readonly reportsLeader: boolean;
  quote(name: string): string;
  /** A bound parameter's placeholder. */
  readonly param: string;
  /** The schema guardedTables reports. */
  readonly listedSchema: string | null;
  /** The guard's triggers on a table (one statement trigger on PostgreSQL; three row triggers on MariaDB and SQLite). */
  readonly triggersPerGuard: number;
  /** A client of another program, without the library. */
  rawClient(url: string): Promise<{ query(statement: string): Promise<unknown>; end(): Promise<void> }>;
  triggerCount(ds: DataSource, quoted: string, name: string): Promise<number>;
  /** Milliseconds until the lease of `ns` ends, by the database clock. */
  leaseEndsInMs(runner: QueryRunner, ns: string): Promise<number>;
  /** A trigger of the application's own on the table, that inserts a row into `audit` per insert. */
  ownTrigger(ds: DataSource, quoted: string, name: string, audit: string): Promise<void>;
}

const FLAVORS: Record<'postgres' | 'mariadb' | 'sqlite', Flavor> = {
  postgres: {
    refused: 'GS001',
    reportsLeader: true,
    quote: (name) => `"${name.replace(/"/g, '""')}"`,
    param: '$1',
    listedSchema: 'public',
    triggersPerGuard: 1,
    async rawClient(url) {
      const client = new Client({ connectionString: url });
      await client.connect();
      // The database is dropped after the tests (its sessions terminated): the client may hear of it first.
      client.on('error', () => undefined);
      return { query: (statement) => client.query(statement), end: () => client.end() };
    },
    async triggerCount(ds, quoted) {
      const [row] = await query<{ n: string }>(ds, `SELECT COUNT(*) AS n FROM pg_trigger WHERE tgrelid = '${quoted}'::regclass AND NOT tgisinternal`);
      return Number(row!.n);
    },
    async leaseEndsInMs(runner, ns) {
      const [{ end }] = await runner.query(`SELECT GREATEST(0, EXTRACT(EPOCH FROM lease_expires_at - clock_timestamp()) * 1000) AS end FROM gemstone_election_leader WHERE ns = $1`, [ns]);
      return Number(end);
    },
    async ownTrigger(ds, quoted, name, audit) {
      const fn = FLAVORS.postgres.quote(`${name}_fn`);
      await query(ds, `CREATE FUNCTION ${fn}() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN INSERT INTO ${audit} VALUES (1); RETURN NEW; END $$`);
      await query(ds, `CREATE TRIGGER audit AFTER INSERT ON ${quoted} FOR EACH ROW EXECUTE FUNCTION ${fn}()`);
    },
  },
  mariadb: {
    refused: '45001',
    reportsLeader: true,
    quote: (name) => `\`${name.replace(/`/g, '``')}\``,
    param: '?',
    listedSchema: null,
    triggersPerGuard: 3,
    async rawClient(url) {
      const connection = await mysql.createConnection({ uri: url });
      connection.on('error', () => undefined);
      return { query: (statement) => connection.query(statement), end: () => connection.end() };
    },
    async triggerCount(ds, _quoted, name) {
      const [row] = await query<{ n: string }>(ds, 'SELECT COUNT(*) AS n FROM information_schema.TRIGGERS WHERE EVENT_OBJECT_SCHEMA = DATABASE() AND EVENT_OBJECT_TABLE = ?', [name]);
      return Number(row!.n);
    },
    async leaseEndsInMs(runner, ns) {
      const [{ end }] = await runner.query('SELECT GREATEST(0, TIMESTAMPDIFF(MICROSECOND, UTC_TIMESTAMP(6), lease_expires_at) / 1000) AS end FROM gemstone_election_leader WHERE ns = ?', [ns]);
      return Number(end);
    },
    async ownTrigger(ds, quoted, name, audit) {
      // BEFORE INSERT too, beside the guard's own BEFORE INSERT trigger.
      await query(ds, `CREATE TRIGGER ${FLAVORS.mariadb.quote(`${name}_b`)} BEFORE INSERT ON ${quoted} FOR EACH ROW SET NEW.note = CONCAT(NEW.note, '')`);
      await query(ds, `CREATE TRIGGER ${FLAVORS.mariadb.quote(`${name}_a`)} AFTER INSERT ON ${quoted} FOR EACH ROW INSERT INTO ${audit} VALUES (1)`);
    },
  },
  sqlite: {
    refused: 'SQLITE_CONSTRAINT',
    reportsLeader: false,
    quote: (name) => `"${name.replace(/"/g, '""')}"`,
    param: '?',
    listedSchema: null,
    triggersPerGuard: 3,
    async rawClient(url) {
      // Another program on the same database file: better-sqlite3 directly, no library, no TypeORM.
      const file = decodeURIComponent(/^sqlite:(.*)\?driver=/.exec(url)![1]!);
      // eslint-disable-next-line @typescript-eslint/no-require-imports
      const Database = require('better-sqlite3') as new (file: string, options: { timeout: number }) => { exec(sql: string): void; close(): void };
      const db = new Database(file, { timeout: 5_000 });
      return { query: async (statement) => db.exec(statement), end: async () => db.close() };
    },
    async triggerCount(ds, _quoted, name) {
      const [row] = await query<{ n: number }>(ds, "SELECT COUNT(*) AS n FROM sqlite_master WHERE type = 'trigger' AND tbl_name = ?", [name]);
      return Number(row!.n);
    },
    async leaseEndsInMs(runner, ns) {
      const [{ end }] = await runner.query("SELECT MAX(0, (julianday(lease_expires_at) - julianday('now')) * 86400000.0) AS end FROM gemstone_election_leader WHERE ns = ?", [ns]);
      return Number(end);
    },
    async ownTrigger(ds, quoted, name, audit) {
      await query(ds, `CREATE TRIGGER ${FLAVORS.sqlite.quote(`${name}_b`)} BEFORE INSERT ON ${quoted} FOR EACH ROW BEGIN SELECT 1; END`);
      await query(ds, `CREATE TRIGGER ${FLAVORS.sqlite.quote(`${name}_a`)} AFTER INSERT ON ${quoted} FOR EACH ROW BEGIN INSERT INTO ${audit} VALUES (1); END`);
    },
  },
};

/** A table of the test's with one text column; its quoted name. */
async function createTable(ds: DataSource, f: Flavor, name: string): Promise<string> {
  const quoted = f.quote(name);
  await query(ds, `CREATE TABLE ${quoted} (note varchar(200) NOT NULL)`);
  return quoted;
}

async function count(ds: DataSource, quoted: string): Promise<number> {
  const [row] = await query<{ n: string }>(ds, `SELECT COUNT(*) AS n FROM ${quoted}`);
  return Number(row!.n);
}

describeEachDatabase(
  'guarded tables',
  (db) => {
    const f = FLAVORS[db.kind];
    let ds: DataSource;
    let svc: ElectionService;
    /** A client of another program: the driver directly, no library. */
    let raw: Awaited<ReturnType<Flavor['rawClient']>>;

    beforeAll(async () => {
      ds = await db.connect();
      svc = new ElectionService(ds);
      raw = await f.rawClient(db.url());
    });
    afterAll(async () => {
      await raw.end();
    });

    /** The refusal's code of an error (a TypeORM error's driver error, or the driver's own). */
    const refusedBy = (error: unknown) => {
      const e = error as { code?: unknown; errno?: unknown; message?: unknown; driverError?: { code?: unknown; errno?: unknown; message?: unknown } };
      const d = e.driverError ?? e;
      // SQLite: a constraint error whose message is the guard's (better-sqlite3 says SQLITE_CONSTRAINT_TRIGGER; sqlite3, SQLITE_CONSTRAINT).
      if (db.kind === 'sqlite') return /^SQLITE_CONSTRAINT/.test(String(d.code)) && String(d.message).includes('gemstone-utils: ') ? 'SQLITE_CONSTRAINT' : String(d.code);
      return String(db.kind === 'postgres' ? d.code : d.errno);
    };

    test('without a proof every kind of write is refused, from the library\'s DataSource and from another client, naming the table and the namespace; nothing is written', async () => {
      const ns = freshNs();
      const t = await createTable(ds, f, `ledger_${uuid().slice(0, 8)}`);
      await query(ds, `INSERT INTO ${t} (note) VALUES ('before')`);
      await svc.guardTable(t.slice(1, -1), { ns });
      const a = uuid();
      expect(await svc.elect(a, { ns })).toBe(a); // a leader exists: it simply did not prove it

      const truncate = db.kind === 'postgres' ? [`TRUNCATE ${t}`] : []; // MySQL has no TRUNCATE trigger (below)
      for (const statement of [`INSERT INTO ${t} (note) VALUES ('x')`, `UPDATE ${t} SET note = 'y'`, `DELETE FROM ${t}`, ...truncate]) {
        const viaClient = await raw.query(statement).catch((e: unknown) => e);
        expect(refusedBy(viaClient)).toBe(f.refused);
        expect((viaClient as Error).message).toContain(t.slice(1, -1));
        expect((viaClient as Error).message).toContain(JSON.stringify(ns));
        const viaTypeorm = await query(ds, statement).catch((e: unknown) => e);
        expect(refusedBy(viaTypeorm)).toBe(f.refused);
        // withTransaction maps it: NotLeaderError, naming the namespace and the leader, the database's error its cause.
        const mapped = await withTransaction(ds, (m) => m.query(statement)).catch((e: unknown) => e);
        expect(mapped).toBeInstanceOf(NotLeaderError);
        expect(mapped).toMatchObject(f.reportsLeader ? { ns, leaderId: a, term: 1 } : { ns, leaderId: null, term: null });
        expect((mapped as Error).message).toContain(t.slice(1, -1));
        expect(refusedBy((mapped as { cause?: unknown }).cause)).toBe(f.refused);
      }
      expect(await query(ds, `SELECT note FROM ${t}`)).toEqual([{ note: 'before' }]);
    });

    test('with assertLeader in the same transaction the leader writes; the proof ends with its transaction on the same connection', async () => {
      const ns = freshNs();
      const t = await createTable(ds, f, `ledger_${uuid().slice(0, 8)}`);
      await svc.guardTable(t.slice(1, -1), { ns });
      const a = uuid();
      await svc.elect(a, { ns });
      const runner = ds.createQueryRunner(); // one connection for both transactions
      try {
        await runner.startTransaction();
        await svc.assertLeader(a, { ns, session: runner, term: 1 });
        // Two rows in one statement (MariaDB's row triggers check the first and share the check).
        await runner.query(`INSERT INTO ${t} (note) VALUES ('proved'), ('proved')`);
        await runner.query(`UPDATE ${t} SET note = 'proved twice'`);
        await runner.commitTransaction();

        await runner.startTransaction();
        const after = await runner.query(`INSERT INTO ${t} (note) VALUES ('unproved')`).catch((e: unknown) => e);
        expect(refusedBy(after)).toBe(f.refused);
        await runner.rollbackTransaction();

        // Nor does a rolled-back proof survive.
        await runner.startTransaction();
        await svc.assertLeader(a, { ns, session: runner });
        await runner.rollbackTransaction();
        const outside = await runner.query(`INSERT INTO ${t} (note) VALUES ('autocommit')`).catch((e: unknown) => e);
        expect(refusedBy(outside)).toBe(f.refused);
      } finally {
        if (runner.isTransactionActive) await runner.rollbackTransaction();
        await runner.release();
      }
      expect(await query(ds, `SELECT note FROM ${t}`)).toEqual([{ note: 'proved twice' }, { note: 'proved twice' }]);
      // withTransaction with the fence first: the documented way.
      await withTransaction(ds, async (m) => {
        await svc.assertLeader(a, { ns, session: m });
        await m.query(`INSERT INTO ${t} (note) VALUES ('fenced')`);
      });
      expect(await count(ds, t)).toBe(3);
    });

    test('a fence that fails proves nothing: a follower, a wrong term, another namespace', async () => {
      const [ns, other] = [freshNs(), freshNs()];
      const t = await createTable(ds, f, `ledger_${uuid().slice(0, 8)}`);
      await svc.guardTable(t.slice(1, -1), { ns });
      const [a, b] = [uuid(), uuid()];
      await svc.elect(a, { ns });
      await svc.elect(b, { ns });
      await svc.elect(b, { ns: other });
      const attempts: Array<(session: QueryRunner) => Promise<unknown>> = [
        (session) => svc.assertLeader(b, { ns, session }), // a follower
        (session) => svc.assertLeader(a, { ns, session, term: 2 }), // the leader, under a term it does not hold
      ];
      for (const attempt of attempts) {
        const outcome = await inCallerTransaction(ds, async (session) => {
          const fence = await attempt(session).catch((e: unknown) => e);
          expect(fence).toBeInstanceOf(NotLeaderError);
          // Code that ignores the NotLeaderError and writes anyway.
          return session.query(`INSERT INTO ${t} (note) VALUES ('ignored the fence')`);
        }).catch((e: unknown) => e);
        expect(refusedBy(outcome)).toBe(f.refused);
      }
      // b leads `other`: that proves nothing for `ns`.
      const elsewhere = await inCallerTransaction(ds, async (session) => {
        await svc.assertLeader(b, { ns: other, session });
        return session.query(`INSERT INTO ${t} (note) VALUES ('other namespace')`);
      }).catch((e: unknown) => e);
      expect(refusedBy(elsewhere)).toBe(f.refused);
      expect(await count(ds, t)).toBe(0);
    });

    test('a lease that runs out inside the proving transaction: a takeover waits for that transaction, its next write is refused; the old leader\'s proof fails after the takeover', async () => {
      const ns = freshNs();
      const t = await createTable(ds, f, `ledger_${uuid().slice(0, 8)}`);
      await svc.guardTable(t.slice(1, -1), { ns });
      const short = new ElectionService(ds, { expireSeconds: 1 });
      const [a, b] = [uuid(), uuid()];
      await short.elect(a, { ns });
      const runner = ds.createQueryRunner();
      let takeover: Promise<string | null> | undefined;
      try {
        await runner.startTransaction();
        await short.assertLeader(a, { ns, session: runner, term: 1 });
        await runner.query(`INSERT INTO ${t} (note) VALUES ('in time')`);
        // The lease's end by the database clock, then a takeover that must wait for the fence's lock.
        await sleep((await f.leaseEndsInMs(runner, ns)) + 100);
        takeover = short.elect(b, { ns });
        expect(await Promise.race([takeover.then((v) => `took over: ${v === a ? 'a' : v === b ? 'b' : v}`), sleep(300).then(() => 'waiting')])).toBe('waiting');
        const late = await runner.query(`INSERT INTO ${t} (note) VALUES ('too late')`).catch((e: unknown) => e);
        expect(refusedBy(late)).toBe(f.refused);
        // (The rollback ends the fence's lock: the takeover proceeds.)
        await runner.rollbackTransaction();
      } finally {
        if (runner.isTransactionActive) await runner.rollbackTransaction();
        await runner.release();
      }
      expect(await takeover).toBe(b);
      const stale = await inCallerTransaction(ds, async (session) => {
        await short.assertLeader(a, { ns, session, term: 1 }).catch(() => undefined);
        return session.query(`INSERT INTO ${t} (note) VALUES ('stale')`);
      }).catch((e: unknown) => e);
      expect(refusedBy(stale)).toBe(f.refused);
      expect(await count(ds, t)).toBe(0);
    });

    test('guardTable is idempotent and replaces the namespace; guardedTables lists by the table\'s current name; unguardTable removes it in one call', async () => {
      const [ns, ns2] = [freshNs(), freshNs()];
      const name = `ledger_${uuid().slice(0, 8)}`;
      const t = await createTable(ds, f, name);
      await svc.guardTable(name, { ns });
      await svc.guardTable(name, { ns });
      expect((await svc.guardedTables()).filter((g) => g.table === name)).toEqual([{ table: name, schema: f.listedSchema, ns }]);
      await svc.guardTable(name, { ns: ns2 });
      expect((await svc.guardedTables()).filter((g) => g.table === name)).toEqual([{ table: name, schema: f.listedSchema, ns: ns2 }]);
      expect(await f.triggerCount(ds, t, name)).toBe(f.triggersPerGuard);

      // A renamed table keeps its guard, listed under its new name.
      const renamed = `${name}_renamed`;
      await query(ds, `ALTER TABLE ${t} RENAME TO ${f.quote(renamed)}`);
      expect((await svc.guardedTables()).filter((g) => g.table.startsWith(name))).toEqual([{ table: renamed, schema: f.listedSchema, ns: ns2 }]);
      expect(refusedBy(await query(ds, `INSERT INTO ${f.quote(renamed)} (note) VALUES ('x')`).catch((e: unknown) => e))).toBe(f.refused);

      expect(await svc.unguardTable(renamed)).toBe(true);
      expect(await svc.unguardTable(renamed)).toBe(false);
      await query(ds, `INSERT INTO ${f.quote(renamed)} (note) VALUES ('free again')`);
      expect((await svc.guardedTables()).filter((g) => g.table.startsWith(name))).toEqual([]);
    });

    test('hostile names: a table and a namespace with quotes, a backslash and unicode; a table with triggers of its own', async () => {
      const ns = `o'brien "ns" \\ \`tick\` */ ü ${uuid().slice(0, 4)}`;
      const name = `we"ird 'tbl' \\ \`t\` ü ${uuid().slice(0, 4)}`;
      const t = await createTable(ds, f, name);
      // The application's own trigger on it, which must keep working beside the guard.
      const audit = f.quote(`${name}_audit`);
      await query(ds, `CREATE TABLE ${audit} (n int)`);
      await f.ownTrigger(ds, t, name, audit);
      await svc.guardTable(name, { ns });
      expect((await svc.guardedTables()).filter((g) => g.table === name)).toEqual([{ table: name, schema: f.listedSchema, ns }]);
      const a = uuid();
      await svc.elect(a, { ns });
      const refused = await raw.query(`INSERT INTO ${t} (note) VALUES ('x')`).catch((e: unknown) => e);
      expect((refused as Error).message).toContain(JSON.stringify(ns));
      await withTransaction(ds, async (m) => {
        await svc.assertLeader(a, { ns, session: m });
        await m.query(`INSERT INTO ${t} (note) VALUES ('proved')`);
      });
      expect(await count(ds, t)).toBe(1);
      expect(await count(ds, audit)).toBe(1);
    });

    test('an entityPrefix with a hyphen (and on PostgreSQL a schema): each installation has its own guard, checked against its own leader table', async () => {
      const pg = db.kind === 'postgres';
      if (pg) await query(ds, 'CREATE SCHEMA IF NOT EXISTS "gem-guard"');
      const prefixed = await db.connect({ ...(pg ? { schema: 'gem-guard' } : {}), entityPrefix: 'my-app_' } as never);
      try {
        const svc2 = new ElectionService(prefixed);
        const ns = freshNs();
        const name = `ledger_${uuid().slice(0, 8)}`;
        const t = pg ? `"gem-guard".${f.quote(name)}` : f.quote(name);
        await query(ds, `CREATE TABLE ${t} (note varchar(20) NOT NULL)`);
        await svc2.guardTable(name, { ns, ...(pg ? { schema: 'gem-guard' } : {}) });
        expect(await svc2.guardedTables()).toEqual([{ table: name, schema: pg ? 'gem-guard' : null, ns }]);
        expect((await svc.guardedTables()).filter((g) => g.table === name)).toEqual([]); // the other installation's
        if (pg) {
          const [fn] = await query<{ schema: string; name: string }>(ds, `SELECT n.nspname AS schema, p.proname AS name FROM pg_trigger t JOIN pg_proc p ON p.oid = t.tgfoid JOIN pg_namespace n ON n.oid = p.pronamespace WHERE t.tgrelid = '${t}'::regclass`);
          expect(fn).toEqual({ schema: 'gem-guard', name: 'my-app_gemstone_election_leader_guard' });
        } else {
          // Both installations guard it: each adds its own triggers, each checks its own leader table.
          await svc.guardTable(name, { ns });
          expect(await f.triggerCount(ds, t, name)).toBe(2 * f.triggersPerGuard);
          expect((await svc.guardedTables()).filter((g) => g.table === name)).toEqual([{ table: name, schema: null, ns }]);
          expect(await svc.unguardTable(name)).toBe(true);
          expect(await f.triggerCount(ds, t, name)).toBe(f.triggersPerGuard);
        }
        const a = uuid();
        await svc.elect(a, { ns }); // leads ns in the unprefixed installation only
        const wrongInstallation = await withTransaction(ds, async (m) => {
          await svc.assertLeader(a, { ns, session: m });
          await m.query(`INSERT INTO ${t} (note) VALUES ('x')`);
        }).catch((e: unknown) => e);
        expect(wrongInstallation).toBeInstanceOf(NotLeaderError);
        await svc2.elect(a, { ns });
        await withTransaction(prefixed, async (m) => {
          await svc2.assertLeader(a, { ns, session: m });
          await m.query(`INSERT INTO ${t} (note) VALUES ('proved')`);
        });
        expect(await count(ds, t)).toBe(1);
      } finally {
        await prefixed.destroy();
      }
    });

    if (db.kind === 'mariadb') {
      test('MariaDB: the proof (a user variable) ends with its transaction, not with its connection: a pool of one connection, TypeORM\'s own transaction, a fence outside a transaction', async () => {
        const one = await db.connect({ extra: { connectionLimit: 1 } } as never);
        try {
          const svc1 = new ElectionService(one);
          const ns = freshNs();
          const name = `ledger_${uuid().slice(0, 8)}`;
          const t = await createTable(one, f, name);
          await svc1.guardTable(name, { ns });
          const a = uuid();
          await svc1.elect(a, { ns });
          const proofOnTheConnection = async () => (await query<{ p: string | null }>(one, 'SELECT @gemstone_proof AS p'))[0]!.p;
          await withTransaction(one, async (m) => {
            await svc1.assertLeader(a, { ns, session: m });
            await m.query(`INSERT INTO ${t} (note) VALUES ('withTransaction')`);
          });
          await one.transaction(async (m) => {
            await svc1.assertLeader(a, { ns, session: m });
            await m.query(`INSERT INTO ${t} (note) VALUES ('dataSource.transaction')`);
          });
          // The pool's only connection, next: no proof on it, the unproved write refused.
          expect(await proofOnTheConnection()).toBeNull();
          expect(refusedBy(await query(one, `INSERT INTO ${t} (note) VALUES ('next borrower')`).catch((e: unknown) => e))).toBe(f.refused);
          // A fence outside a transaction proves nothing that lasts.
          await svc1.assertLeader(a, { ns, session: one.manager }).catch(() => undefined);
          expect(await proofOnTheConnection()).toBeNull();
          expect(refusedBy(await query(one, `INSERT INTO ${t} (note) VALUES ('after a bare fence')`).catch((e: unknown) => e))).toBe(f.refused);
          expect((await query<{ note: string }>(one, `SELECT note FROM ${t} ORDER BY note`)).map((r) => r.note)).toEqual(['dataSource.transaction', 'withTransaction']);
        } finally {
          await one.destroy();
        }
      });

      test('MariaDB: guard and write in sessions with ANSI_QUOTES, NO_BACKSLASH_ESCAPES and PIPES_AS_CONCAT; TRUNCATE is not a trigger event (not refused: docs/fencing.md)', async () => {
        const ns = `mode 'q' \\ ${uuid().slice(0, 4)}`;
        const name = `ledger_${uuid().slice(0, 8)}`;
        const t = await createTable(ds, f, name);
        const a = uuid();
        await svc.elect(a, { ns });
        const runner = ds.createQueryRunner();
        try {
          await runner.query("SET SESSION sql_mode = 'ANSI_QUOTES,NO_BACKSLASH_ESCAPES,PIPES_AS_CONCAT,STRICT_TRANS_TABLES'");
          const mode = async () => String((await runner.query('SELECT @@SESSION.sql_mode AS mode'))[0].mode);
          const before = await mode();
          await svc.guardTable(name, { ns, session: runner });
          expect(await mode()).toBe(before); // the session's own mode back
          expect(refusedBy(await runner.query(`INSERT INTO ${t} (note) VALUES ('unproved')`).catch((e: unknown) => e))).toBe(f.refused);
          await runner.startTransaction();
          await svc.assertLeader(a, { ns, session: runner });
          await runner.query(`INSERT INTO ${t} (note) VALUES ('proved')`);
          await runner.commitTransaction();
        } finally {
          if (runner.isTransactionActive) await runner.rollbackTransaction();
          await runner.query("SET SESSION sql_mode = DEFAULT");
          await runner.release();
        }
        expect(await svc.guardedTables().then((g) => g.filter((x) => x.table === name))).toEqual([{ table: name, schema: null, ns }]);
        expect(await count(ds, t)).toBe(1);
        await query(ds, `TRUNCATE ${t}`);
        expect(await count(ds, t)).toBe(0);
      });
    }

    if (db.kind === 'sqlite') {
      /** Another connection to the database file, for reads (better-sqlite3 directly). */
      const reader = () => {
        // eslint-disable-next-line @typescript-eslint/no-require-imports
        const Database = require('better-sqlite3') as new (file: string, options: { readonly: boolean }) => { prepare(sql: string): { get(...values: unknown[]): unknown }; close(): void };
        return new Database(decodeURIComponent(/^sqlite:(.*)\?driver=/.exec(db.url())![1]!), { readonly: true });
      };
      const proofRows = async () => Number((await query<{ n: number }>(ds, 'SELECT COUNT(*) AS n FROM gemstone_election_proof'))[0]!.n);

      test('SQLite: the proof is a row no other connection sees, deleted before its transaction commits; a raw COMMIT that would keep it is refused', async () => {
        const ns = freshNs();
        const t = await createTable(ds, f, `ledger_${uuid().slice(0, 8)}`);
        await svc.guardTable(t.slice(1, -1), { ns });
        const a = uuid();
        await svc.elect(a, { ns });
        const other = reader();
        const runner = ds.createQueryRunner();
        try {
          await runner.startTransaction();
          await svc.assertLeader(a, { ns, session: runner });
          await runner.query(`INSERT INTO ${t} (note) VALUES ('proved')`);
          // The proving transaction's own row; another connection sees none (it is not committed).
          expect(Number((await runner.query('SELECT COUNT(*) AS n FROM gemstone_election_proof'))[0].n)).toBe(1);
          expect(other.prepare('SELECT COUNT(*) AS n FROM gemstone_election_proof').get()).toEqual({ n: 0 });
          // COMMIT as raw SQL, past TypeORM (so the library cannot delete the proof first): refused, the transaction still open.
          const raw = await runner.query('COMMIT').catch((e: unknown) => e);
          expect(String((raw as Error).message)).toMatch(/FOREIGN KEY constraint failed/);
          expect(other.prepare(`SELECT COUNT(*) AS n FROM ${t}`).get()).toEqual({ n: 0 });
          await runner.rollbackTransaction();

          // TypeORM's commit: the library deletes the proof first; the write is committed, the proof is not.
          await runner.startTransaction();
          await svc.assertLeader(a, { ns, session: runner });
          await runner.query(`INSERT INTO ${t} (note) VALUES ('committed')`);
          await runner.commitTransaction();
        } finally {
          if (runner.isTransactionActive) await runner.rollbackTransaction();
          await runner.release();
          other.close();
        }
        expect(await proofRows()).toBe(0);
        expect(await query(ds, `SELECT note FROM ${t}`)).toEqual([{ note: 'committed' }]);
        expect(refusedBy(await raw.query(`INSERT INTO ${t} (note) VALUES ('another program')`).catch((e: unknown) => e))).toBe(f.refused);
      });

      test('SQLite: savepoints keep or take back the proof with their writes', async () => {
        const ns = freshNs();
        const t = await createTable(ds, f, `ledger_${uuid().slice(0, 8)}`);
        await svc.guardTable(t.slice(1, -1), { ns });
        const a = uuid();
        await svc.elect(a, { ns });
        const runner = ds.createQueryRunner();
        try {
          await runner.startTransaction();
          await runner.startTransaction(); // a SAVEPOINT
          await svc.assertLeader(a, { ns, session: runner });
          await runner.rollbackTransaction(); // ROLLBACK TO SAVEPOINT: its proof with it
          expect(refusedBy(await runner.query(`INSERT INTO ${t} (note) VALUES ('after the savepoint rolled back')`).catch((e: unknown) => e))).toBe(f.refused);
          await runner.startTransaction();
          await svc.assertLeader(a, { ns, session: runner });
          await runner.commitTransaction(); // RELEASE SAVEPOINT: the proof stays for the transaction
          await runner.query(`INSERT INTO ${t} (note) VALUES ('after the savepoint was released')`);
          await runner.commitTransaction();
        } finally {
          if (runner.isTransactionActive) await runner.rollbackTransaction();
          await runner.release();
        }
        expect(await proofRows()).toBe(0);
        expect(await query(ds, `SELECT note FROM ${t}`)).toEqual([{ note: 'after the savepoint was released' }]);
      });
    }

    test('a scheduled job: run.transaction proves for its writes; the same write in a transaction of its own is refused (NotLeaderError)', async () => {
      const ns = freshNs();
      const t = await createTable(ds, f, `ledger_${uuid().slice(0, 8)}`);
      await svc.guardTable(t.slice(1, -1), { ns });
      const elector = new LeaderElector({ dataSource: ds, ns, expireSeconds: 3, intervalMs: 300 });
      const outcomes: Array<{ slot: number; unproved: string }> = [];
      elector.schedule({ name: 'ledger', everyMs: 1000 }, async (run) => {
        const unproved = await withTransaction(ds, (m) => m.query(`INSERT INTO ${t} (note) VALUES ('unproved')`)).then(
          () => 'committed',
          (e: unknown) => (e instanceof NotLeaderError ? 'NotLeaderError' : String(e)),
        );
        await run.transaction((m) => m.query(`INSERT INTO ${t} (note) VALUES (${f.param})`, [`slot ${run.slot.getTime()}`]));
        outcomes.push({ slot: run.slot.getTime(), unproved });
      });
      await elector.start();
      try {
        await waitFor('two runs', () => outcomes.length >= 2, 15_000);
      } finally {
        await elector.stop();
      }
      expect(outcomes.every((o) => o.unproved === 'NotLeaderError')).toBe(true);
      const notes = (await query<{ note: string }>(ds, `SELECT note FROM ${t}`)).map((r) => r.note);
      expect(notes.length).toBeGreaterThanOrEqual(2);
      expect(notes.every((n) => n.startsWith('slot '))).toBe(true);
    });

    test('bad input is a ValidationError naming the parameter, and changes nothing', async () => {
      const before = (await svc.guardedTables()).length;
      const cases: Array<[() => Promise<unknown>, string]> = [
        [() => svc.guardTable(`missing_${uuid().slice(0, 8)}`, { ns: 'x' }), 'table'],
        [() => svc.guardTable('', {}), 'table'],
        [() => svc.guardTable(42 as unknown as string), 'table'],
        [() => svc.guardTable('gemstone_election_leader'), 'table'],
        [() => svc.guardTable('gemstone_election_run'), 'table'],
        [() => svc.guardTable('t', { ns: '' }), 'options.ns'],
        [() => svc.guardTable('t', { namespace: 'x' } as never), 'options.namespace'],
        [() => svc.unguardTable('t', { ns: 'x' } as never), 'options.ns'],
      ];
      for (const [call, parameter] of cases) {
        const error = await call().catch((e: unknown) => e);
        expect(error).toBeInstanceOf(ValidationError);
        expect((error as ValidationError).parameter).toBe(parameter);
      }
      expect((await svc.guardedTables()).length).toBe(before);
    });

    test('before the election\'s tables exist, guardTable says to create them (TablesMissingError) and creates nothing', async () => {
      const bare = await db.connect({ entityPrefix: `bare_${uuid().slice(0, 6)}_` } as never, { createTables: false });
      try {
        const name = `ledger_${uuid().slice(0, 8)}`;
        const t = await createTable(ds, f, name);
        const error = await new ElectionService(bare).guardTable(name, { ns: freshNs() }).catch((e: unknown) => e);
        expect(error).toBeInstanceOf(TablesMissingError);
        expect((error as Error).message).toMatch(/initDb/);
        expect(await f.triggerCount(ds, t, name)).toBe(0);
      } finally {
        await bare.destroy();
      }
    });

    test('the migration guards and unguards the same way', async () => {
      const ns = freshNs();
      const name = `ledger_${uuid().slice(0, 8)}`;
      const t = await createTable(ds, f, name);
      const migration = GemstoneDB.guardTableMigration(name, { ns, ...(db.kind === 'postgres' ? { schema: 'public' } : {}) });
      const runner = ds.createQueryRunner();
      try {
        await migration.up(runner);
        expect(refusedBy(await query(ds, `INSERT INTO ${t} (note) VALUES ('x')`).catch((e: unknown) => e))).toBe(f.refused);
        await migration.down(runner);
        await query(ds, `INSERT INTO ${t} (note) VALUES ('x')`);
      } finally {
        await runner.release();
      }
      expect(() => GemstoneDB.guardTableMigration('', { ns })).toThrow(ValidationError);
    });
  },
  // SQLite on a database file only: another program opens the same file (an in-memory database is one connection's).
  { sharedOnly: true },
);
