/**
 * The least privileges of docs/databases.md, proven: a role with only the listed grants runs the whole
 * API (and, on PostgreSQL, LISTEN/NOTIFY) once the tables exist; it cannot run DDL.
 */
import { randomBytes } from 'crypto';
import * as mysql from 'mysql2/promise';
import { Client } from 'pg';
import type { DataSource } from 'typeorm';
import { ElectionService, initDb, LeaderElector, pruneRuns } from 'gemstone-utils';
import { databaseNow, runsStoreOf } from '../schedules/support';
import { describeEachDatabase, query, sleep, uuid } from '../support/databases';

/** The grants docs/databases.md lists for the runtime role (DDL only for initDb's role). */
const RUNTIME_GRANTS = {
  gemstone_election_candidate: 'SELECT, INSERT, UPDATE, DELETE',
  gemstone_election_leader: 'SELECT, INSERT, UPDATE',
  gemstone_election_history: 'SELECT, INSERT, UPDATE, DELETE',
  gemstone_election_run: 'SELECT, INSERT, UPDATE, DELETE',
} as const;

describeEachDatabase(
  'least privileges',
  (db) => {
    let admin: DataSource;
    const role = `gem_lp_${randomBytes(4).toString('hex')}`;
    let roleUrl = '';

    beforeAll(async () => {
      admin = await db.connect(); // creates the tables as the owner
      const url = new URL(db.url());
      const database = url.pathname.slice(1);
      if (db.kind === 'postgres') {
        await query(admin, `CREATE ROLE ${role} LOGIN`);
        await query(admin, `GRANT CONNECT ON DATABASE "${database}" TO ${role}`);
        await query(admin, `REVOKE CREATE ON SCHEMA public FROM PUBLIC`);
        await query(admin, `GRANT USAGE ON SCHEMA public TO ${role}`);
        for (const [table, grants] of Object.entries(RUNTIME_GRANTS)) await query(admin, `GRANT ${grants} ON ${table} TO ${role}`);
      } else {
        await query(admin, `CREATE USER '${role}'@'%'`);
        for (const [table, grants] of Object.entries(RUNTIME_GRANTS)) {
          await query(admin, `GRANT ${grants} ON \`${database}\`.${table} TO '${role}'@'%'`);
        }
      }
      url.username = role;
      url.password = '';
      roleUrl = url.toString();
    });

    // Roles and users belong to the server, not to the test's database: drop them over a
    // connection of their own (the database and its DataSources may already be gone).
    afterAll(async () => {
      if (db.kind === 'postgres') {
        const client = new Client({ connectionString: process.env.GEMSTONE_TEST_PG_URL });
        await client.connect();
        try {
          await client.query(`DROP ROLE IF EXISTS ${role}`);
        } finally {
          await client.end();
        }
      } else {
        const connection = await mysql.createConnection({ uri: process.env.GEMSTONE_TEST_MYSQL_URL as string });
        try {
          await connection.query(`DROP USER IF EXISTS '${role}'@'%'`);
        } finally {
          await connection.end();
        }
      }
    });

    test('the runtime role runs every operation, the elector and its handover', async () => {
      const ds = await initDb(roleUrl); // tables exist: no DDL is attempted
      try {
        const svc = new ElectionService(ds, { expireSeconds: 5 });
        const ns = `lp-${uuid()}`;
        const [a, b] = [uuid(), uuid()];
        await svc.registerCandidate(a, { ns });
        await svc.heartbeat(a, { ns });
        expect(await svc.elect(a, { ns })).toBe(a);
        expect(await svc.elect(b, { ns })).toBe(a);
        expect(await svc.isLeader(a, { ns })).toBe(true);
        expect(await svc.listCandidates({ ns })).toEqual([a, b].sort());
        const info = await svc.getLeader({ ns });
        await ds.transaction((session) => svc.assertLeader(a, { ns, term: info!.term, session }));
        // Schedule runs: claimed, finished, recorded, read and pruned.
        const runs = runsStoreOf(ds);
        const slot = new Date((await databaseNow(ds)).getTime() - 1000);
        const who = { candidateId: a, term: info!.term };
        expect(await runs.claim({ ns, name: 'lp', slot }, who, 3)).toMatchObject({ claimed: true });
        await runs.finish({ ns, name: 'lp', slot }, who, 'done');
        await runs.record([{ ns, name: 'lp', slot: new Date(slot.getTime() - 1000) }], who, 'missed');
        expect((await svc.getRuns({ ns })).map((r) => r.state)).toEqual(['done', 'missed']);
        await pruneRuns(ds, { retentionSeconds: 0 });
        expect(await svc.resign(a, { ns })).toBe(true);
        expect(await svc.elect(b, { ns })).toBe(b);
        await svc.unregisterCandidate(b, { ns });
        expect(await svc.getLeader({ ns })).toBeNull();

        // The elector: on PostgreSQL a follower LISTENs and takes over at once when the leader stops.
        const electorNs = `lp-elector-${uuid()}`;
        const first = new LeaderElector({ dataSource: ds, ns: electorNs, expireSeconds: 30, intervalMs: 10_000 });
        const second = new LeaderElector({ dataSource: ds, ns: electorNs, expireSeconds: 30, intervalMs: 10_000 });
        const errors: unknown[] = [];
        for (const e of [first, second]) e.on('error', (error) => errors.push(error));
        await first.start();
        await second.start();
        expect(first.isLeader).toBe(true);
        await first.stop();
        if (db.kind === 'postgres') {
          for (let i = 0; i < 50 && !second.isLeader; i++) await sleep(100);
          expect(second.isLeader).toBe(true);
        }
        await second.stop();
        expect(errors).toEqual([]);
      } finally {
        await ds.destroy();
      }
    });

    test('the DDL role of initDb needs only CREATE (and ALTER on MySQL/MariaDB): it creates the tables on an empty database', async () => {
      const fresh = await db.sibling();
      const url = new URL(fresh.url());
      const database = url.pathname.slice(1);
      const ddlRole = `${role}_ddl`;
      const owner = await fresh.connect({}, { createTables: false }); // connects as admin, creates nothing
      try {
        if (db.kind === 'postgres') {
          await query(owner, `CREATE ROLE ${ddlRole} LOGIN`);
          await query(owner, `GRANT CONNECT ON DATABASE "${database}" TO ${ddlRole}`);
          await query(owner, `REVOKE CREATE ON SCHEMA public FROM PUBLIC`);
          await query(owner, `GRANT USAGE, CREATE ON SCHEMA public TO ${ddlRole}`);
        } else {
          await query(owner, `CREATE USER '${ddlRole}'@'%'`);
          await query(owner, `GRANT CREATE, ALTER ON \`${database}\`.* TO '${ddlRole}'@'%'`);
        }
        url.username = ddlRole;
        const ds = await initDb(url.toString());
        await ds.destroy();
        const tables = await query<{ n: number | string }>(
          owner,
          db.kind === 'postgres'
            ? "SELECT COUNT(*) AS n FROM pg_tables WHERE tablename IN ('gemstone_election_candidate', 'gemstone_election_leader', 'gemstone_election_history', 'gemstone_election_run')"
            : "SELECT COUNT(*) AS n FROM information_schema.tables WHERE table_schema = DATABASE() AND table_name IN ('gemstone_election_candidate', 'gemstone_election_leader', 'gemstone_election_history', 'gemstone_election_run')",
        );
        expect(Number(tables[0]!.n)).toBe(4);
      } finally {
        if (db.kind === 'postgres') {
          await query(owner, `DROP OWNED BY ${ddlRole}`).catch(() => undefined);
          await query(owner, `DROP ROLE IF EXISTS ${ddlRole}`).catch(() => undefined);
        } else {
          await query(owner, `DROP USER IF EXISTS '${ddlRole}'@'%'`).catch(() => undefined);
        }
      }
    });

    test('the runtime role cannot run DDL: creating the tables needs the owner (initDb with createTables)', async () => {
      const ds = await initDb(roleUrl, { createTables: false });
      try {
        await expect(query(ds, 'CREATE TABLE gem_lp_probe (id int)')).rejects.toThrow(/denied/i);
        await expect(query(ds, 'DELETE FROM gemstone_election_leader')).rejects.toThrow(/denied/i);
      } finally {
        await ds.destroy();
      }
    });
  },
  { kinds: ['postgres', 'mariadb'] },
);
