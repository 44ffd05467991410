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
import { waitFor } from '../elector/helpers';
import { openEvents, serveDashboard } from './support/http';
import { lockTables, runningStatements, waitingForLocks } from './support/locks';

const TABLES = ['gemstone_election_candidate', 'gemstone_election_leader', 'gemstone_election_history', 'gemstone_election_run'];

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
        for (const path of ['/api/overview', '/api/overview/timeline', '/api/namespace?ns=read-only', '/api/namespace/timeline?ns=read-only', '/api/namespace/schedules?ns=read-only']) {
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
      const held = await lockTables(admin, db.kind, ['gemstone_election_leader'], 30_000);
      try {
        const request = fetch(`${served.url}/api/overview`);
        await waitFor('the read waiting for the lock', async () => (await waitingForLocks(admin, db.kind)).length >= 1, 15_000, 20);
        await served.close();
        expect(held.released()).toBe(false);
        expect(await runningStatements(admin, db.kind, held)).toEqual([]);
        expect((await request).status).toBe(503);
      } finally {
        await held.release();
        await served.close();
        await ds.destroy();
      }
      expect(errors).toEqual([]);
    }, 60_000);
  },
  { kinds: ['postgres', 'mariadb'] },
);
