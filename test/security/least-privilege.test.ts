/**
 * The least privileges of the README, proven: a role with only the listed grants runs the whole
 * API (and, on PostgreSQL, LISTEN/NOTIFY) once the tables exist; it cannot run DDL.
 */
import { randomBytes } from 'crypto';
import type { DataSource } from 'typeorm';
import { ElectionService, initDb, LeaderElector } from 'gemstone-utils';
import { describeEachDatabase, query, sleep, uuid } from '../support/databases';

/** The grants the README lists for the runtime role (DDL only for initDb's role). */
const RUNTIME_GRANTS = {
  gemstone_election_candidate: 'SELECT, INSERT, UPDATE, DELETE',
  gemstone_election_leader: 'SELECT, INSERT, UPDATE',
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

    afterAll(async () => {
      if (db.kind === 'postgres') {
        await query(admin, `DROP OWNED BY ${role}`).catch(() => undefined);
        await query(admin, `DROP ROLE IF EXISTS ${role}`).catch(() => undefined);
      } else {
        await query(admin, `DROP USER IF EXISTS '${role}'@'%'`).catch(() => undefined);
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
