/**
 * The 0.1.0 release, as a database sees it: its DDL and the statements of its `elect` and
 * `unregisterCandidate`, copied from that release's `src/election/schema.ts` and `store.ts`
 * (unprefixed tables, default schema). Tests run them beside the current version to prove a
 * rolling upgrade: 0.1.0 processes keep electing on tables the new `initDb` has upgraded.
 */
import type { DataSource, EntityManager } from 'typeorm';
import type { DbKind } from '../../support/databases';

/** 0.1.0's CREATE statements. */
export function v010Ddl(kind: DbKind): string[] {
  switch (kind) {
    case 'postgres':
      return [
        `CREATE TABLE IF NOT EXISTS "gemstone_election_candidate" (
  ns varchar(255) NOT NULL,
  candidate_id varchar(36) NOT NULL,
  last_heartbeat_at timestamptz NOT NULL,
  expires_at timestamptz NOT NULL,
  CONSTRAINT "PK_gemstone_election_candidate" PRIMARY KEY (ns, candidate_id)
)`,
        `CREATE INDEX IF NOT EXISTS "IDX_gemstone_election_candidate_ns_expires_at" ON "gemstone_election_candidate" (ns, expires_at)`,
        `CREATE TABLE IF NOT EXISTS "gemstone_election_leader" (
  ns varchar(255) NOT NULL,
  leader_id varchar(36) NULL,
  lease_expires_at timestamptz NULL,
  updated_at timestamptz NOT NULL,
  term bigint NOT NULL DEFAULT 0,
  CONSTRAINT "PK_gemstone_election_leader" PRIMARY KEY (ns),
  CONSTRAINT "CHK_gemstone_election_leader_term" CHECK (term >= 0)
)`,
      ];
    case 'mariadb':
      return [
        `CREATE TABLE IF NOT EXISTS \`gemstone_election_candidate\` (
  ns varchar(255) CHARACTER SET utf8mb4 COLLATE utf8mb4_nopad_bin NOT NULL,
  candidate_id varchar(36) CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
  last_heartbeat_at datetime(6) NOT NULL,
  expires_at datetime(6) NOT NULL,
  PRIMARY KEY (ns, candidate_id),
  KEY IDX_gemstone_election_candidate_ns_expires_at (ns, expires_at)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4`,
        `CREATE TABLE IF NOT EXISTS \`gemstone_election_leader\` (
  ns varchar(255) CHARACTER SET utf8mb4 COLLATE utf8mb4_nopad_bin NOT NULL,
  leader_id varchar(36) CHARACTER SET ascii COLLATE ascii_bin NULL,
  lease_expires_at datetime(6) NULL,
  updated_at datetime(6) NOT NULL,
  term bigint NOT NULL DEFAULT 0,
  PRIMARY KEY (ns),
  CONSTRAINT CHK_gemstone_election_leader_term CHECK (term >= 0)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4`,
      ];
    case 'sqlite':
      return [
        `CREATE TABLE IF NOT EXISTS "gemstone_election_candidate" (
  ns varchar(255) NOT NULL,
  candidate_id varchar(36) NOT NULL,
  last_heartbeat_at datetime NOT NULL,
  expires_at datetime NOT NULL,
  CONSTRAINT PK_gemstone_election_candidate PRIMARY KEY (ns, candidate_id)
)`,
        `CREATE INDEX IF NOT EXISTS IDX_gemstone_election_candidate_ns_expires_at ON "gemstone_election_candidate" (ns, expires_at)`,
        `CREATE TABLE IF NOT EXISTS "gemstone_election_leader" (
  ns varchar(255) NOT NULL,
  leader_id varchar(36) NULL,
  lease_expires_at datetime NULL,
  updated_at datetime NOT NULL,
  term bigint NOT NULL DEFAULT 0,
  CONSTRAINT PK_gemstone_election_leader PRIMARY KEY (ns),
  CONSTRAINT CHK_gemstone_election_leader_term CHECK (term >= 0)
)`,
      ];
  }
}

const NOW: Record<DbKind, string> = {
  postgres: 'clock_timestamp()',
  mariadb: 'UTC_TIMESTAMP(6)',
  sqlite: "strftime('%Y-%m-%d %H:%M:%f', 'now')",
};

function plus(kind: DbKind, seconds: number): string {
  if (kind === 'postgres') return `(clock_timestamp() + make_interval(secs => ${seconds}))`;
  if (kind === 'mariadb') return `(UTC_TIMESTAMP(6) + INTERVAL ${Math.round(seconds * 1e6)} MICROSECOND)`;
  return `strftime('%Y-%m-%d %H:%M:%f', 'now', '+${seconds.toFixed(3)} seconds')`;
}

/** Test-owned SQL with `?` placeholders (`$n` on PostgreSQL). */
function run(m: EntityManager, kind: DbKind, text: string, params: unknown[]): Promise<Array<Record<string, unknown>>> {
  let i = 0;
  return m.query(kind === 'postgres' ? text.replace(/\?/g, () => `$${++i}`) : text, params);
}

function touch(kind: DbKind, expire: number): string {
  const upsert =
    kind === 'mariadb'
      ? 'ON DUPLICATE KEY UPDATE last_heartbeat_at = VALUES(last_heartbeat_at), expires_at = VALUES(expires_at)'
      : `ON CONFLICT (ns, candidate_id) DO UPDATE SET last_heartbeat_at = ${kind === 'postgres' ? 'EXCLUDED' : 'excluded'}.last_heartbeat_at, expires_at = ${kind === 'postgres' ? 'EXCLUDED' : 'excluded'}.expires_at`;
  return `INSERT INTO gemstone_election_candidate (ns, candidate_id, last_heartbeat_at, expires_at) VALUES (?, ?, ${NOW[kind]}, ${plus(kind, expire)}) ${upsert}`;
}

/** 0.1.0's elect: the PostgreSQL one-statement form for an existing namespace, else its locked path. Returns the leader. */
export async function v010Elect(ds: DataSource, kind: DbKind, ns: string, id: string, expire: number): Promise<{ leaderId: string; term: number }> {
  if (kind === 'postgres') {
    const [row] = await run(
      ds.manager,
      kind,
      `WITH locked AS (
  SELECT ns, leader_id, term, lease_expires_at FROM "gemstone_election_leader" WHERE ns = CAST(? AS varchar) FOR UPDATE
), seen AS (
  SELECT ns, leader_id, term, COALESCE(leader_id IS NOT NULL AND lease_expires_at > clock_timestamp(), false) AS live FROM locked
), decided AS (
  SELECT ns, leader_id, term, live, (live AND leader_id = CAST(? AS varchar)) AS renewing,
    (NOT live OR leader_id = CAST(? AS varchar)) AS takes
  FROM seen
), lease AS (
  UPDATE "gemstone_election_leader" AS l
  SET leader_id = CAST(? AS varchar), term = CASE WHEN decided.renewing THEN decided.term ELSE decided.term + 1 END,
    lease_expires_at = ${plus(kind, expire)}, updated_at = clock_timestamp()
  FROM decided WHERE l.ns = decided.ns AND decided.takes
  RETURNING l.ns, l.leader_id, l.term
), touch AS (
  INSERT INTO "gemstone_election_candidate" (ns, candidate_id, last_heartbeat_at, expires_at)
  SELECT ns, CAST(? AS varchar), clock_timestamp(), ${plus(kind, expire)} FROM decided
  ON CONFLICT (ns, candidate_id) DO UPDATE SET last_heartbeat_at = EXCLUDED.last_heartbeat_at, expires_at = EXCLUDED.expires_at
), announced AS (
  SELECT pg_notify(CAST('gemstone_election' AS text), json_build_object('ns', lease.ns, 'leaderId', lease.leader_id, 'term', lease.term)::text)
  FROM lease, decided WHERE NOT decided.renewing
)
SELECT decided.leader_id, decided.term, decided.renewing, decided.takes, lease.term AS new_term,
  (SELECT count(*) FROM announced) AS announced
FROM decided LEFT JOIN lease ON true`,
      [ns, id, id, id, id],
    );
    if (row) {
      const takes = row.takes === true;
      return { leaderId: takes ? id : String(row.leader_id), term: Number(takes ? row.new_term : row.term) };
    }
  }
  return ds.transaction(async (m) => {
    await run(
      m,
      kind,
      `INSERT INTO gemstone_election_leader (ns, leader_id, lease_expires_at, updated_at, term) VALUES (?, NULL, NULL, ${NOW[kind]}, 0) ${
        kind === 'mariadb' ? 'ON DUPLICATE KEY UPDATE ns = ns' : 'ON CONFLICT (ns) DO NOTHING'
      }`,
      [ns],
    );
    if (kind === 'sqlite') await run(m, kind, 'UPDATE gemstone_election_leader SET ns = ns WHERE ns = ?', [ns]);
    const [row] = await run(
      m,
      kind,
      `SELECT leader_id, term, CASE WHEN lease_expires_at > ${NOW[kind]} THEN 1 ELSE 0 END AS live FROM gemstone_election_leader WHERE ns = ?${
        kind === 'sqlite' ? '' : ' FOR UPDATE'
      }`,
      [ns],
    );
    const live = row!.leader_id !== null && Number(row!.live) === 1;
    let result: { leaderId: string; term: number };
    if (live && row!.leader_id !== id) {
      result = { leaderId: String(row!.leader_id), term: Number(row!.term) };
    } else {
      const term = live ? Number(row!.term) : Number(row!.term) + 1;
      await run(
        m,
        kind,
        `UPDATE gemstone_election_leader SET leader_id = ?, term = ?, lease_expires_at = ${plus(kind, expire)}, updated_at = ${NOW[kind]} WHERE ns = ?`,
        [id, term, ns],
      );
      result = { leaderId: id, term };
    }
    await run(m, kind, touch(kind, expire), [ns, id]);
    return result;
  });
}

/** 0.1.0's unregisterCandidate: vacate the lease if held, delete the row. */
export async function v010Unregister(ds: DataSource, kind: DbKind, ns: string, id: string): Promise<void> {
  await ds.transaction(async (m) => {
    if (kind === 'sqlite') await run(m, kind, 'UPDATE gemstone_election_leader SET ns = ns WHERE ns = ?', [ns]);
    const [row] = await run(m, kind, `SELECT leader_id FROM gemstone_election_leader WHERE ns = ?${kind === 'sqlite' ? '' : ' FOR UPDATE'}`, [ns]);
    if (row?.leader_id === id) {
      await run(m, kind, `UPDATE gemstone_election_leader SET leader_id = NULL, lease_expires_at = NULL, updated_at = ${NOW[kind]} WHERE ns = ?`, [ns]);
    }
    await run(m, kind, 'DELETE FROM gemstone_election_candidate WHERE ns = ? AND candidate_id = ?', [ns, id]);
  });
}
