/**
 * What docs/dashboard.md promises the database role: SELECT on the three election tables is
 * enough. A role with nothing else serves every view and both live streams (on PostgreSQL with
 * its LISTEN connection), and any write it attempted would fail.
 */
import { randomBytes } from 'crypto';
import * as mysql from 'mysql2/promise';
import { Client } from 'pg';
import type { DataSource } from 'typeorm';
import { ElectionService, initDb } from 'gemstone-utils';
import { createDashboard } from 'gemstone-utils/dashboard';
import { describeEachDatabase, query, uuid } from '../support/databases';
import { openEvents, serveDashboard } from './support/http';

const TABLES = ['gemstone_election_candidate', 'gemstone_election_leader', 'gemstone_election_history'];

describeEachDatabase(
  'dashboard on a SELECT-only role',
  (db) => {
    const role = `gem_ro_${randomBytes(4).toString('hex')}`;
    let roleUrl = '';
    let admin: DataSource;

    beforeAll(async () => {
      admin = await db.connect();
      const url = new URL(db.url());
      const database = url.pathname.slice(1);
      if (db.kind === 'postgres') {
        await query(admin, `CREATE ROLE ${role} LOGIN`);
        await query(admin, `GRANT CONNECT ON DATABASE "${database}" TO ${role}`);
        await query(admin, `GRANT USAGE ON SCHEMA public TO ${role}`);
        for (const table of TABLES) await query(admin, `GRANT SELECT ON ${table} TO ${role}`);
      } else {
        await query(admin, `CREATE USER '${role}'@'%'`);
        for (const table of TABLES) await query(admin, `GRANT SELECT ON \`${database}\`.${table} TO '${role}'@'%'`);
      }
      url.username = role;
      url.password = '';
      roleUrl = url.toString();
    });

    afterAll(async () => {
      if (db.kind === 'postgres') {
        const client = new Client({ connectionString: process.env.GEMSTONE_TEST_PG_URL || 'postgres://postgres@127.0.0.1:5432/test' });
        await client.connect();
        try {
          await client.query(`DROP ROLE IF EXISTS ${role}`);
        } finally {
          await client.end();
        }
      } else {
        const connection = await mysql.createConnection({ uri: process.env.GEMSTONE_TEST_MYSQL_URL || 'mysql://root@127.0.0.1:3306/test' });
        try {
          await connection.query(`DROP USER IF EXISTS '${role}'@'%'`);
        } finally {
          await connection.end();
        }
      }
    });

    test('every view and both streams are served; the role cannot write', async () => {
      const leader = uuid();
      await new ElectionService(admin).elect(leader, { ns: 'read-only' });
      const ds = await initDb(roleUrl, { createTables: false });
      const served = await serveDashboard(createDashboard({ dataSource: ds }));
      try {
        for (const path of ['/api/overview', '/api/overview/timeline', '/api/namespace?ns=read-only', '/api/namespace/timeline?ns=read-only']) {
          expect({ path, status: (await fetch(`${served.url}${path}`)).status }).toEqual({ path, status: 200 });
        }
        const overview = (await (await fetch(`${served.url}/api/overview`)).json()) as { rows: { ns: string; leaderId: string }[] };
        expect(overview.rows).toEqual([expect.objectContaining({ ns: 'read-only', leaderId: leader })]);
        for (const path of ['/api/namespace/events?ns=read-only', '/api/overview/events']) {
          const events = await openEvents(`${served.url}${path}`);
          const first = await events.next(() => true);
          expect({ path, event: first.event }).toEqual({ path, event: path.includes('namespace') ? 'leader' : 'overview' });
          events.close();
        }
        // The grants are really that narrow.
        await expect(new ElectionService(ds).elect(uuid(), { ns: 'read-only' })).rejects.toThrow(/denied/i);
      } finally {
        await served.close();
        await ds.destroy();
      }
    });

    test('the role cancels its own reads: close() with a read waiting behind a lock leaves nothing running, no cancel refused', async () => {
      const errors: unknown[] = [];
      const ds = await initDb(roleUrl, { createTables: false });
      const served = await serveDashboard(createDashboard({ dataSource: ds, closeTimeoutMs: 10_000, onError: (error) => errors.push(error) }));
      const runner = admin.createQueryRunner();
      await runner.connect();
      let locked = false;
      const sessions = async (condition: string): Promise<number> => {
        const rows =
          db.kind === 'postgres'
            ? await query<{ n: unknown }>(admin, `SELECT COUNT(*) AS n FROM pg_stat_activity WHERE usename = $1 AND ${condition}`, [role])
            : await query<{ n: unknown }>(admin, `SELECT COUNT(*) AS n FROM information_schema.processlist WHERE user = ? AND ${condition}`, [role]);
        return Number(rows[0]!.n);
      };
      try {
        if (db.kind === 'postgres') {
          await runner.startTransaction();
          await runner.query('LOCK TABLE gemstone_election_leader IN ACCESS EXCLUSIVE MODE');
        } else {
          await runner.query('LOCK TABLES gemstone_election_leader WRITE');
        }
        locked = true;
        const request = fetch(`${served.url}/api/overview`);
        const waits = db.kind === 'postgres' ? "wait_event_type = 'Lock'" : "state LIKE 'Waiting for table metadata lock%'";
        const deadline = Date.now() + 15_000;
        while ((await sessions(waits)) < 1) {
          if (Date.now() > deadline) throw new Error('the read never waited for the lock');
          await new Promise((resolve) => setTimeout(resolve, 20));
        }
        await served.close();
        expect(await sessions(db.kind === 'postgres' ? "state <> 'idle'" : "command <> 'Sleep'")).toBe(0);
        expect((await request).status).toBe(503);
      } finally {
        if (locked) {
          if (db.kind === 'postgres') await runner.commitTransaction();
          else await runner.query('UNLOCK TABLES');
        }
        await runner.release();
        await served.close();
        await ds.destroy();
      }
      expect(errors).toEqual([]);
    }, 60_000);
  },
  { kinds: ['postgres', 'mariadb'] },
);
