/**
 * The limit the library is measured against: the same durable work as `elect` — touch the
 * caller's candidate row and renew-or-acquire the lease by the database clock — through the same
 * driver the library uses, with no ORM, in as few statements as the database allows. Every
 * caller first reads the leader row without a lock; only a caller that may take or renew the
 * lease (no live lease of another candidate) then writes it. A follower's work is therefore its
 * candidate heartbeat upsert and that plain read — no lock on the leader row — the leanest a
 * follower's `elect` can be, on every database:
 *
 * - PostgreSQL: ONE statement on a raw `pg` Client, sent as a NAMED prepared statement (parsed
 *   and planned once per connection): a plain read of the leader row, the lease upsert (`INSERT
 *   … SELECT … WHERE NOT EXISTS` that read's live lease of another, `ON CONFLICT DO UPDATE …
 *   WHERE`) and the candidate upsert, as CTEs; it returns the leader.
 * - MariaDB: ONE round trip on a raw mysql2 connection with `multipleStatements` (the library's
 *   DataSource has no multiple statements), four statements in one transaction: `START
 *   TRANSACTION`; `SELECT … INTO @variable` (the plain read); `INSERT … SELECT … FROM DUAL WHERE
 *   <no live lease of another> ON DUPLICATE KEY UPDATE` of the leader row, its IFs judging the
 *   row again under its lock; `INSERT … ON DUPLICATE KEY UPDATE` of the candidate row; `COMMIT`.
 *   It does not return the leader to the client.
 * - SQLite: no statement can write two tables: prepared statements in one `BEGIN IMMEDIATE`
 *   transaction, run synchronously by better-sqlite3 (no round trips): the plain read, the lease
 *   upsert when that read allows it, the candidate upsert.
 *
 * None writes history rows (the library's takeover does): a bound in the baseline's favour.
 *
 * On PostgreSQL, `storedFunction` is a classic single-table lease function:
 * `try_become_leader()` in PL/pgSQL on its own table (it touches no candidate row).
 */
import * as mysql from 'mysql2/promise';
import { Client } from 'pg';
import { CANDIDATE_TABLE, LEADER_TABLE } from 'gemstone-utils';
import type { BenchTarget } from './databases';

export interface RawClient {
  /** One baseline elect by `candidateId` in `ns`. */
  elect(ns: string, candidateId: string, expireSeconds: number): Promise<void>;
  /** Ends the lease of `ns` (setup for a takeover; not timed). */
  expireLease(ns: string): Promise<void>;
  /** The leader of `ns` and its term, read without a lock (checks, not timed). */
  leader(ns: string): Promise<{ leaderId: string | null; term: number; live: boolean } | undefined>;
  /** The stored function `try_become_leader` (PostgreSQL only). */
  storedFunction?: StoredFunction;
  close(): Promise<void>;
}

export interface StoredFunction {
  tryBecomeLeader(service: string, candidateId: string, timeoutSeconds: number): Promise<boolean>;
  expire(service: string): Promise<void>;
}

// The leader row is read first without a lock (`current`); the lease upsert gets a row to insert
// only when that read shows no live lease of another candidate. A follower thus upserts its
// candidate row and reads the leader row — no lock on it (an `ON CONFLICT DO UPDATE` locks the
// conflicting row even when its WHERE then refuses the update). Whoever may take or renew the
// lease runs the upsert, whose WHERE judges the row again, locked, by the current clock.
// (A CTE referenced twice is computed once: one read.)
const PG_ELECT = `WITH current AS (
  SELECT leader_id, (lease_expires_at > clock_timestamp()) AS live FROM ${LEADER_TABLE} WHERE ns = $1::varchar
), lease AS (
  INSERT INTO ${LEADER_TABLE} AS l (ns, leader_id, lease_expires_at, updated_at, term)
  SELECT $1::varchar, $2::varchar, clock_timestamp() + make_interval(secs => $3), clock_timestamp(), 1
  WHERE NOT EXISTS (SELECT 1 FROM current c WHERE c.live AND c.leader_id <> $2::varchar)
  ON CONFLICT (ns) DO UPDATE SET
    term = CASE WHEN l.leader_id = EXCLUDED.leader_id AND l.lease_expires_at > clock_timestamp() THEN l.term ELSE l.term + 1 END,
    leader_id = EXCLUDED.leader_id,
    lease_expires_at = clock_timestamp() + make_interval(secs => $3),
    updated_at = clock_timestamp()
  WHERE l.leader_id IS NULL OR l.lease_expires_at <= clock_timestamp() OR l.leader_id = EXCLUDED.leader_id
  RETURNING l.leader_id
), touch AS (
  INSERT INTO ${CANDIDATE_TABLE} (ns, candidate_id, last_heartbeat_at, expires_at)
  VALUES ($1::varchar, $2::varchar, clock_timestamp(), clock_timestamp() + make_interval(secs => $3))
  ON CONFLICT (ns, candidate_id) DO UPDATE SET last_heartbeat_at = EXCLUDED.last_heartbeat_at, expires_at = EXCLUDED.expires_at
)
SELECT COALESCE((SELECT leader_id FROM lease), (SELECT leader_id FROM current)) AS leader_id`;

/** The stored function and its table. */
const STORED_FUNCTION_SCHEMA = [
  `CREATE TABLE IF NOT EXISTS leader_election (
  service_name VARCHAR(255) PRIMARY KEY,
  leader_id VARCHAR(255) NOT NULL,
  term INTEGER NOT NULL DEFAULT 1,
  last_heartbeat TIMESTAMPTZ NOT NULL DEFAULT NOW(),
  metadata JSONB DEFAULT '{}'
)`,
  `CREATE OR REPLACE FUNCTION try_become_leader(
  p_service_name VARCHAR(255),
  p_candidate_id VARCHAR(255),
  p_timeout_seconds INTEGER DEFAULT 30
) RETURNS BOOLEAN AS $$
DECLARE
  v_now TIMESTAMPTZ := NOW();
  v_timeout TIMESTAMPTZ := v_now - (p_timeout_seconds || ' seconds')::INTERVAL;
  v_current RECORD;
BEGIN
  SELECT * INTO v_current FROM leader_election WHERE service_name = p_service_name FOR UPDATE;
  IF NOT FOUND THEN
    INSERT INTO leader_election (service_name, leader_id, term, last_heartbeat) VALUES (p_service_name, p_candidate_id, 1, v_now);
    RETURN TRUE;
  END IF;
  IF v_current.leader_id = p_candidate_id THEN
    UPDATE leader_election SET last_heartbeat = v_now WHERE service_name = p_service_name;
    RETURN TRUE;
  END IF;
  IF v_current.last_heartbeat < v_timeout THEN
    UPDATE leader_election SET leader_id = p_candidate_id, term = term + 1, last_heartbeat = v_now WHERE service_name = p_service_name;
    RETURN TRUE;
  END IF;
  RETURN FALSE;
END;
$$ LANGUAGE plpgsql`,
];

// One round trip (multipleStatements), four statements in one transaction:
// 1. a plain (consistent, non-locking) read of the leader row into a session variable: whether
//    another candidate holds a live lease (always one row: MAX over none is NULL, hence 0);
// 2. the lease upsert, whose INSERT … SELECT yields its row only when that read found no such
//    lease — a follower inserts nothing, so it takes no lock on the leader row (an `INSERT … ON
//    DUPLICATE KEY UPDATE` locks the existing row whatever its IFs then decide). Its assignments
//    run left to right on the old row, judged again under the lock: `term` is decided first,
//    then `leader_id`; the lease columns follow whoever `leader_id` names now;
// 3. the candidate heartbeat upsert;
// 4. COMMIT.
// A follower's durable work is thus its candidate upsert and a plain read, as the library's.
const MYSQL_ELECT = `START TRANSACTION;
SELECT COALESCE(MAX(leader_id IS NOT NULL AND leader_id <> ? AND lease_expires_at > UTC_TIMESTAMP(6)), 0) INTO @gemstone_bench_held
FROM ${LEADER_TABLE} WHERE ns = ?;
INSERT INTO ${LEADER_TABLE} (ns, leader_id, lease_expires_at, updated_at, term)
SELECT ?, ?, UTC_TIMESTAMP(6) + INTERVAL ? MICROSECOND, UTC_TIMESTAMP(6), 1 FROM DUAL WHERE @gemstone_bench_held = 0
ON DUPLICATE KEY UPDATE
  term = IF(leader_id IS NULL OR lease_expires_at <= UTC_TIMESTAMP(6), term + 1, term),
  leader_id = IF(leader_id IS NULL OR lease_expires_at <= UTC_TIMESTAMP(6) OR leader_id = VALUES(leader_id), VALUES(leader_id), leader_id),
  lease_expires_at = IF(leader_id = VALUES(leader_id), VALUES(lease_expires_at), lease_expires_at),
  updated_at = IF(leader_id = VALUES(leader_id), VALUES(updated_at), updated_at);
INSERT INTO ${CANDIDATE_TABLE} (ns, candidate_id, last_heartbeat_at, expires_at)
VALUES (?, ?, UTC_TIMESTAMP(6), UTC_TIMESTAMP(6) + INTERVAL ? MICROSECOND)
ON DUPLICATE KEY UPDATE last_heartbeat_at = VALUES(last_heartbeat_at), expires_at = VALUES(expires_at);
COMMIT`;

/** The little of better-sqlite3 used here (the package ships no types; no @types dependency for this). */
interface SqliteStatement {
  run(...params: unknown[]): unknown;
  get(...params: unknown[]): unknown;
}
interface SqliteDatabase {
  prepare(text: string): SqliteStatement;
  transaction<A extends unknown[]>(fn: (...args: A) => void): { immediate(...args: A): void };
  close(): void;
}
type SqliteConstructor = new (file: string, options: { timeout: number }) => SqliteDatabase;

const SQLITE_NOW = "strftime('%Y-%m-%d %H:%M:%f', 'now')";
const SQLITE_LATER = "strftime('%Y-%m-%d %H:%M:%f', 'now', @later)";

export async function openRaw(target: BenchTarget): Promise<RawClient> {
  switch (target.kind) {
    case 'postgres':
      return openPostgres(target.url);
    case 'mariadb':
      return openMariadb(target.url);
    case 'sqlite':
      return openSqlite(target.url.slice('sqlite:'.length));
  }
}

async function openPostgres(url: string): Promise<RawClient> {
  const client = new Client({ connectionString: url });
  await client.connect();
  return {
    async elect(ns, id, expireSeconds) {
      await client.query({ name: 'baseline_elect', text: PG_ELECT, values: [ns, id, expireSeconds] });
    },
    async expireLease(ns) {
      await client.query(`UPDATE ${LEADER_TABLE} SET lease_expires_at = clock_timestamp() - interval '1 second' WHERE ns = $1`, [ns]);
    },
    async leader(ns) {
      const { rows } = await client.query(
        `SELECT leader_id, term, (lease_expires_at > clock_timestamp()) AS live FROM ${LEADER_TABLE} WHERE ns = $1`,
        [ns],
      );
      const row = rows[0];
      return row ? { leaderId: row.leader_id, term: Number(row.term), live: row.live === true } : undefined;
    },
    storedFunction: {
      async tryBecomeLeader(service, id, timeoutSeconds) {
        const { rows } = await client.query({ name: 'try_become_leader', text: 'SELECT try_become_leader($1, $2, $3) AS ok', values: [service, id, timeoutSeconds] });
        return rows[0]?.ok === true;
      },
      async expire(service) {
        await client.query(`UPDATE leader_election SET last_heartbeat = now() - interval '1 day' WHERE service_name = $1`, [service]);
      },
    },
    close: () => client.end(),
  };
}

/** Creates the stored function's table and the function (PostgreSQL; once per database). */
export async function installStoredFunction(url: string): Promise<void> {
  const client = new Client({ connectionString: url });
  await client.connect();
  try {
    for (const statement of STORED_FUNCTION_SCHEMA) await client.query(statement);
  } finally {
    await client.end();
  }
}

async function openMariadb(url: string): Promise<RawClient> {
  const connection = await mysql.createConnection({ uri: url, timezone: 'Z', multipleStatements: true });
  return {
    async elect(ns, id, expireSeconds) {
      const micros = Math.round(expireSeconds * 1e6);
      await connection.query(MYSQL_ELECT, [id, ns, ns, id, micros, ns, id, micros]);
    },
    async expireLease(ns) {
      await connection.query(`UPDATE ${LEADER_TABLE} SET lease_expires_at = UTC_TIMESTAMP(6) - INTERVAL 1 SECOND WHERE ns = ?`, [ns]);
    },
    async leader(ns) {
      const [rows] = await connection.query(
        `SELECT leader_id, term, (lease_expires_at > UTC_TIMESTAMP(6)) AS live FROM ${LEADER_TABLE} WHERE ns = ?`,
        [ns],
      );
      const row = (rows as Array<Record<string, unknown>>)[0];
      return row ? { leaderId: row.leader_id as string | null, term: Number(row.term), live: Number(row.live) === 1 } : undefined;
    },
    close: () => connection.end(),
  };
}

/**
 * The SQLite baseline's statements (named parameters `@ns`, `@id`, `@later`), run by
 * `openSqlite` in one `BEGIN IMMEDIATE` transaction: `heldByOther`, then `lease` when it found
 * nothing, then `touch`. Exported for `bench/sqlite-breakdown.ts`, which times them one by one.
 */
export const SQLITE_BASELINE = {
  // The leader row read plainly: whether another candidate holds a live lease. SQLite has no row
  // locks (BEGIN IMMEDIATE takes the database's write lock, which the candidate upsert needs
  // anyway), but a follower still does no more than the library's: the read and its upsert.
  heldByOther: `SELECT 1 AS held FROM ${LEADER_TABLE}
WHERE ns = @ns AND leader_id IS NOT NULL AND leader_id <> @id AND lease_expires_at > ${SQLITE_NOW}`,
  lease: `INSERT INTO ${LEADER_TABLE} AS l (ns, leader_id, lease_expires_at, updated_at, term)
VALUES (@ns, @id, ${SQLITE_LATER}, ${SQLITE_NOW}, 1)
ON CONFLICT (ns) DO UPDATE SET
  term = CASE WHEN l.leader_id = excluded.leader_id AND l.lease_expires_at > ${SQLITE_NOW} THEN l.term ELSE l.term + 1 END,
  leader_id = excluded.leader_id, lease_expires_at = excluded.lease_expires_at, updated_at = excluded.updated_at
WHERE l.leader_id IS NULL OR l.lease_expires_at <= ${SQLITE_NOW} OR l.leader_id = excluded.leader_id`,
  touch: `INSERT INTO ${CANDIDATE_TABLE} (ns, candidate_id, last_heartbeat_at, expires_at)
VALUES (@ns, @id, ${SQLITE_NOW}, ${SQLITE_LATER})
ON CONFLICT (ns, candidate_id) DO UPDATE SET last_heartbeat_at = excluded.last_heartbeat_at, expires_at = excluded.expires_at`,
} as const;

async function openSqlite(file: string): Promise<RawClient> {
  const Database = require('better-sqlite3') as SqliteConstructor;
  const db = new Database(file, { timeout: 5000 });
  const lease = db.prepare(SQLITE_BASELINE.lease);
  const touch = db.prepare(SQLITE_BASELINE.touch);
  const heldByOther = db.prepare(SQLITE_BASELINE.heldByOther);
  const elect = db.transaction((ns: string, id: string, later: string) => {
    if (heldByOther.get({ ns, id }) === undefined) lease.run({ ns, id, later });
    touch.run({ ns, id, later });
  });
  const expire = db.prepare(`UPDATE ${LEADER_TABLE} SET lease_expires_at = strftime('%Y-%m-%d %H:%M:%f', 'now', '-1 seconds') WHERE ns = ?`);
  const read = db.prepare(`SELECT leader_id, term, (lease_expires_at > ${SQLITE_NOW}) AS live FROM ${LEADER_TABLE} WHERE ns = ?`);
  return {
    async elect(ns, id, expireSeconds) {
      elect.immediate(ns, id, `+${expireSeconds.toFixed(3)} seconds`);
    },
    async expireLease(ns) {
      expire.run(ns);
    },
    async leader(ns) {
      const row = read.get(ns) as Record<string, unknown> | undefined;
      return row ? { leaderId: row.leader_id as string | null, term: Number(row.term), live: Number(row.live) === 1 } : undefined;
    },
    close: async () => void db.close(),
  };
}
