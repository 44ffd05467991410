// @ts-check
'use strict';
/**
 * The chaos run's own database work, per kind: a fresh database, the ledger (fenced writes plus
 * every change of the lease, recorded by a trigger in the changing transaction), connection
 * kills, and the leader row as the injector sees it. This is harness SQL, run as the admin, next
 * to (never instead of) the library's.
 */
const crypto = require('crypto');
const fs = require('fs');
const os = require('os');
const path = require('path');

const PG_URL = process.env.GEMSTONE_TEST_PG_URL || 'postgres://postgres@127.0.0.1:5432/test';
const MYSQL_URL = process.env.GEMSTONE_TEST_MYSQL_URL || 'mysql://root@127.0.0.1:3306/test';

/** @typedef {'postgres' | 'mariadb' | 'sqlite'} Kind */

/** @param {string} url @returns {Kind} */
function kindOfUrl(url) {
  if (/^postgres(ql)?:/i.test(url)) return 'postgres';
  if (/^(mysql|mariadb):/i.test(url)) return 'mariadb';
  if (/^sqlite:/i.test(url)) return 'sqlite';
  throw new Error(`chaos: unsupported database URL ${url} (postgres://, mysql://, mariadb:// or sqlite:<file>)`);
}

/** @param {string} url */
function sqliteFile(url) {
  const file = url.slice('sqlite:'.length).split('?')[0];
  if (!file || file === ':memory:') throw new Error('chaos: SQLite needs a file (workers are separate processes)');
  return file.startsWith('//') ? file.slice(2) : file;
}

/** @param {string} base @param {string} name */
function withDatabase(base, name) {
  const url = new URL(base);
  url.pathname = `/${name}`;
  return url.toString();
}

/**
 * Creates an empty database for one run.
 * @param {Kind} kind @param {string} dir where an SQLite file goes
 * @returns {Promise<{ url: string, drop: () => Promise<void> }>}
 */
async function createDatabase(kind, dir) {
  const name = `gem_chaos_${Date.now()}_${crypto.randomBytes(3).toString('hex')}`;
  if (kind === 'sqlite') {
    const file = path.join(dir, `${name}.sqlite`);
    const drop = async () => {
      for (const suffix of ['', '-wal', '-shm', '-journal']) fs.rmSync(`${file}${suffix}`, { force: true });
    };
    return { url: `sqlite:${file}`, drop };
  }
  if (kind === 'postgres') {
    const { Client } = require('pg');
    const run = async (/** @type {string} */ text) => {
      const client = new Client({ connectionString: PG_URL });
      await client.connect();
      try {
        await client.query(text);
      } finally {
        await client.end();
      }
    };
    await run(`CREATE DATABASE "${name}"`);
    return { url: withDatabase(PG_URL, name), drop: () => run(`DROP DATABASE IF EXISTS "${name}" WITH (FORCE)`) };
  }
  const mysql = require('mysql2/promise');
  const run = async (/** @type {string} */ text) => {
    const connection = await mysql.createConnection({ uri: MYSQL_URL });
    try {
      await connection.query(text);
    } finally {
      await connection.end();
    }
  };
  await run(`CREATE DATABASE \`${name}\``);
  return { url: withDatabase(MYSQL_URL, name), drop: () => run(`DROP DATABASE IF EXISTS \`${name}\``) };
}

/**
 * A direct admin connection (never through a proxy): `?` placeholders on every kind.
 * @param {string} url
 * @returns {Promise<{ kind: Kind, query: (text: string, params?: unknown[]) => Promise<any[]>, close: () => Promise<void> }>}
 */
async function connectAdmin(url) {
  const kind = kindOfUrl(url);
  if (kind === 'postgres') {
    const { Client } = require('pg');
    const client = new Client({ connectionString: url });
    client.on('error', () => undefined);
    await client.connect();
    return {
      kind,
      query: async (text, params = []) => {
        let i = 0;
        return (await client.query(text.replace(/\?/g, () => `$${++i}`), params)).rows;
      },
      close: () => client.end(),
    };
  }
  if (kind === 'mariadb') {
    const mysql = require('mysql2/promise');
    const connection = await mysql.createConnection({ uri: url.replace(/^mariadb:/i, 'mysql:'), multipleStatements: false });
    connection.on('error', () => undefined);
    return {
      kind,
      query: async (text, params = []) => {
        const [rows] = await connection.query(text, params);
        return Array.isArray(rows) ? rows : [];
      },
      close: () => connection.end(),
    };
  }
  const Database = require('better-sqlite3');
  const db = new Database(sqliteFile(url), { timeout: 10_000 });
  return {
    kind,
    query: async (text, params = []) => {
      const statement = db.prepare(text);
      return statement.reader ? statement.all(...params) : (statement.run(...params), []);
    },
    close: async () => db.close(),
  };
}

/** Epoch milliseconds of the server clock, per kind (SQL text). */
const NOW_MS = {
  postgres: 'EXTRACT(EPOCH FROM clock_timestamp()) * 1000',
  mariadb: "TIMESTAMPDIFF(MICROSECOND, '1970-01-01 00:00:00', UTC_TIMESTAMP(6)) / 1000",
  sqlite: "(julianday('now') - 2440587.5) * 86400000.0",
};

/** The ledger table and the triggers that record every change of a lease (grant, renew, vacate), also a row inserted holding one. */
const LEDGER_DDL = {
  postgres: [
    `CREATE TABLE chaos_ledger (
  id bigserial PRIMARY KEY,
  kind varchar(8) NOT NULL,
  ns varchar(255) NOT NULL,
  term bigint NOT NULL,
  holder varchar(36),
  worker int,
  seq bigint,
  lease_until double precision,
  name varchar(100),
  slot double precision,
  attempt int,
  state varchar(16),
  at double precision NOT NULL
)`,
    `CREATE FUNCTION chaos_lease_change() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  -- A leader row created holding a lease (a first acquisition in one INSERT) is a grant too.
  IF TG_OP = 'INSERT' AND NEW.leader_id IS NULL THEN RETURN NULL; END IF;
  INSERT INTO chaos_ledger (kind, ns, term, holder, lease_until, at)
  VALUES (CASE WHEN NEW.leader_id IS NULL THEN 'vacate' WHEN TG_OP = 'INSERT' OR NEW.term IS DISTINCT FROM OLD.term THEN 'grant' ELSE 'renew' END,
          NEW.ns, NEW.term, NEW.leader_id, EXTRACT(EPOCH FROM NEW.lease_expires_at) * 1000, ${NOW_MS.postgres});
  RETURN NULL;
END $$`,
    `CREATE TRIGGER chaos_lease_change AFTER UPDATE ON gemstone_election_leader FOR EACH ROW
WHEN (OLD.term IS DISTINCT FROM NEW.term OR OLD.leader_id IS DISTINCT FROM NEW.leader_id OR OLD.lease_expires_at IS DISTINCT FROM NEW.lease_expires_at)
EXECUTE FUNCTION chaos_lease_change()`,
    `CREATE TRIGGER chaos_lease_insert AFTER INSERT ON gemstone_election_leader FOR EACH ROW EXECUTE FUNCTION chaos_lease_change()`,
  ],
  mariadb: [
    `CREATE TABLE chaos_ledger (
  id bigint AUTO_INCREMENT PRIMARY KEY,
  kind varchar(8) NOT NULL,
  ns varchar(255) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NOT NULL,
  term bigint NOT NULL,
  holder varchar(36),
  worker int,
  seq bigint,
  lease_until double,
  name varchar(100) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin,
  slot double,
  attempt int,
  state varchar(16),
  at double NOT NULL
) ENGINE=InnoDB`,
    `CREATE TRIGGER chaos_lease_change AFTER UPDATE ON gemstone_election_leader FOR EACH ROW
BEGIN
  IF NOT (NEW.term <=> OLD.term) OR NOT (NEW.leader_id <=> OLD.leader_id) OR NOT (NEW.lease_expires_at <=> OLD.lease_expires_at) THEN
    INSERT INTO chaos_ledger (kind, ns, term, holder, lease_until, at)
    VALUES (IF(NEW.leader_id IS NULL, 'vacate', IF(NEW.term <> OLD.term, 'grant', 'renew')), NEW.ns, NEW.term, NEW.leader_id,
            TIMESTAMPDIFF(MICROSECOND, '1970-01-01 00:00:00', NEW.lease_expires_at) / 1000, ${NOW_MS.mariadb});
  END IF;
END`,
    // A leader row created holding a lease (a first acquisition in one INSERT) is a grant too.
    `CREATE TRIGGER chaos_lease_insert AFTER INSERT ON gemstone_election_leader FOR EACH ROW
BEGIN
  IF NEW.leader_id IS NOT NULL THEN
    INSERT INTO chaos_ledger (kind, ns, term, holder, lease_until, at)
    VALUES ('grant', NEW.ns, NEW.term, NEW.leader_id, TIMESTAMPDIFF(MICROSECOND, '1970-01-01 00:00:00', NEW.lease_expires_at) / 1000, ${NOW_MS.mariadb});
  END IF;
END`,
  ],
  sqlite: [
    // The application's own table, for workers that also run app transactions (--app-transactions).
    `CREATE TABLE chaos_app (id INTEGER PRIMARY KEY AUTOINCREMENT, worker INTEGER NOT NULL, note TEXT NOT NULL)`,
    `CREATE TABLE chaos_ledger (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  kind TEXT NOT NULL,
  ns TEXT NOT NULL,
  term INTEGER NOT NULL,
  holder TEXT,
  worker INTEGER,
  seq INTEGER,
  lease_until REAL,
  name TEXT,
  slot REAL,
  attempt INTEGER,
  state TEXT,
  at REAL NOT NULL
)`,
    `CREATE TRIGGER chaos_lease_change AFTER UPDATE ON gemstone_election_leader FOR EACH ROW
WHEN NEW.term IS NOT OLD.term OR NEW.leader_id IS NOT OLD.leader_id OR NEW.lease_expires_at IS NOT OLD.lease_expires_at
BEGIN
  INSERT INTO chaos_ledger (kind, ns, term, holder, lease_until, at)
  VALUES (CASE WHEN NEW.leader_id IS NULL THEN 'vacate' WHEN NEW.term IS NOT OLD.term THEN 'grant' ELSE 'renew' END,
          NEW.ns, NEW.term, NEW.leader_id, (julianday(NEW.lease_expires_at) - 2440587.5) * 86400000.0, ${NOW_MS.sqlite});
END`,
    // A leader row created holding a lease (a first acquisition in one INSERT) is a grant too.
    `CREATE TRIGGER chaos_lease_insert AFTER INSERT ON gemstone_election_leader FOR EACH ROW
WHEN NEW.leader_id IS NOT NULL
BEGIN
  INSERT INTO chaos_ledger (kind, ns, term, holder, lease_until, at)
  VALUES ('grant', NEW.ns, NEW.term, NEW.leader_id, (julianday(NEW.lease_expires_at) - 2440587.5) * 86400000.0, ${NOW_MS.sqlite});
END`,
  ],
};

/**
 * Triggers on the runs table of schedules: every claim of a slot (a run row that is `running`
 * under a new attempt, term or candidate) and every final state (`done`, `failed`, `abandoned`,
 * `missed`, `skipped`) goes to the ledger in the claiming or finishing transaction — so the ledger
 * keeps each attempt, where the runs table keeps only a slot's last. A claim's first insert, the
 * unclaimed row of attempt 0 that the same transaction claims, and writes that change nothing
 * (MariaDB's insert-if-absent) are left out.
 */
const RUN_CHANGE_COLUMNS = 'kind, ns, term, holder, name, slot, attempt, state, at';
/** @param {string} slotMs @param {Kind} kind */
const runChangeValues = (slotMs, kind) =>
  `CASE WHEN NEW.state = 'running' THEN 'claim' ELSE 'finish' END, NEW.ns, NEW.term, NEW.candidate_id, NEW.name, ${slotMs}, NEW.attempt, NEW.state, ${NOW_MS[kind]}`;
/** SQL: whether an UPDATE of a run row left what the ledger records as it was, with the kind's null-safe equality. */
const runUnchanged = (/** @type {(a: string, b: string) => string} */ same) =>
  `(${['state', 'attempt', 'term', 'candidate_id', 'started_at', 'finished_at'].map((c) => same(`NEW.${c}`, `OLD.${c}`)).join(' AND ')})`;
const RUNS_DDL = {
  postgres: [
    `CREATE FUNCTION chaos_run_change() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF TG_OP = 'INSERT' AND NEW.state = 'running' AND NEW.attempt = 0 THEN RETURN NULL; END IF;
  IF TG_OP = 'UPDATE' AND ${runUnchanged((a, b) => `${a} IS NOT DISTINCT FROM ${b}`)} THEN RETURN NULL; END IF;
  INSERT INTO chaos_ledger (${RUN_CHANGE_COLUMNS}) VALUES (${runChangeValues('EXTRACT(EPOCH FROM NEW.slot) * 1000', 'postgres')});
  RETURN NULL;
END $$`,
    `CREATE TRIGGER chaos_run_change AFTER INSERT OR UPDATE ON gemstone_election_run FOR EACH ROW EXECUTE FUNCTION chaos_run_change()`,
  ],
  mariadb: ['INSERT', 'UPDATE'].map(
    (event) => `CREATE TRIGGER chaos_run_${event.toLowerCase()} AFTER ${event} ON gemstone_election_run FOR EACH ROW
BEGIN
  IF ${event === 'INSERT' ? "NOT (NEW.state = 'running' AND NEW.attempt = 0)" : `NOT ${runUnchanged((a, b) => `${a} <=> ${b}`)}`} THEN
    INSERT INTO chaos_ledger (${RUN_CHANGE_COLUMNS})
    VALUES (${runChangeValues("TIMESTAMPDIFF(MICROSECOND, '1970-01-01 00:00:00', NEW.slot) / 1000", 'mariadb')});
  END IF;
END`,
  ),
  sqlite: ['INSERT', 'UPDATE'].map(
    (event) => `CREATE TRIGGER chaos_run_${event.toLowerCase()} AFTER ${event} ON gemstone_election_run FOR EACH ROW
WHEN ${event === 'INSERT' ? "NOT (NEW.state = 'running' AND NEW.attempt = 0)" : `NOT ${runUnchanged((a, b) => `${a} IS ${b}`)}`}
BEGIN
  INSERT INTO chaos_ledger (${RUN_CHANGE_COLUMNS}) VALUES (${runChangeValues("(julianday(NEW.slot) - 2440587.5) * 86400000.0", 'sqlite')});
END`,
  ),
};

/** `?` placeholders as the driver of `kind` takes them (PostgreSQL: `$1`, `$2`, …). @param {Kind} kind @param {string} text */
function placeholders(kind, text) {
  if (kind !== 'postgres') return text;
  let i = 0;
  return text.replace(/\?/g, () => `$${++i}`);
}

/**
 * The fenced write a worker makes after `assertLeader` (its last statement before COMMIT), with
 * the driver's placeholders: ns, term, holder, worker, seq.
 * @param {Kind} kind
 */
function ledgerInsert(kind) {
  return placeholders(kind, `INSERT INTO chaos_ledger (kind, ns, term, holder, worker, seq, at) VALUES ('write', ?, ?, ?, ?, ?, ${NOW_MS[kind]})`);
}

/**
 * The write a scheduled job makes in `run.transaction` (committed with its slot's `done`, or not
 * at all), with the driver's placeholders: ns, term, holder, worker, name, slot (epoch ms), attempt.
 * @param {Kind} kind
 */
function jobInsert(kind) {
  return placeholders(kind, `INSERT INTO chaos_ledger (kind, ns, term, holder, worker, name, slot, attempt, at) VALUES ('job', ?, ?, ?, ?, ?, ?, ?, ${NOW_MS[kind]})`);
}

/** The ledger, its lease triggers and the runs table's. @param {Awaited<ReturnType<typeof connectAdmin>>} admin */
async function installLedger(admin) {
  for (const statement of [...LEDGER_DDL[admin.kind], ...RUNS_DDL[admin.kind]]) await admin.query(statement);
}

/**
 * A ledger row: a fenced `write`, a lease change (`grant`, `renew`, `vacate`), a schedule's `claim`
 * of a slot or `finish` of it (`state`: done, failed, …), or a scheduled `job`'s write.
 * `name`, `slot` (epoch ms), `attempt`, `state`: of the schedule's rows, else null.
 * @typedef {{ id: number, kind: 'write' | 'grant' | 'renew' | 'vacate' | 'claim' | 'finish' | 'job', ns: string, term: number, holder: string | null,
 *   worker: number | null, seq: number | null, leaseUntil: number | null, at: number,
 *   name?: string | null, slot?: number | null, attempt?: number | null, state?: string | null }} LedgerRow
 */

/** @param {Awaited<ReturnType<typeof connectAdmin>>} admin @returns {Promise<LedgerRow[]>} */
async function readLedger(admin) {
  const rows = await admin.query('SELECT id, kind, ns, term, holder, worker, seq, lease_until, name, slot, attempt, state, at FROM chaos_ledger ORDER BY id');
  const num = (/** @type {unknown} */ v) => (v === null || v === undefined ? null : Number(v));
  return rows.map((r) => ({
    id: Number(r.id),
    kind: r.kind,
    ns: String(r.ns),
    term: Number(r.term),
    holder: r.holder ?? null,
    worker: num(r.worker),
    seq: num(r.seq),
    leaseUntil: num(r.lease_until),
    at: Number(r.at),
    name: r.name ?? null,
    // Whole milliseconds: SQLite's julianday arithmetic is a float a fraction off.
    slot: r.slot === null || r.slot === undefined ? null : Math.round(Number(r.slot)),
    attempt: num(r.attempt),
    state: r.state ?? null,
  }));
}

/**
 * The runs table as it ended, through the library (`getRuns`): one row per slot of the schedule
 * `name` in each of `namespaces`, with its last claim and its final state. Paged per namespace
 * (a slot is unique there, so paging by slot skips none).
 * @param {{ getRuns: (o: { ns: string, name: string, limit: number, before?: Date }) => Promise<any[]> }} service
 * @param {string[]} namespaces @param {string} name
 * @returns {Promise<import('./runs-check').RunRow[]>}
 */
async function readRuns(service, namespaces, name) {
  /** @type {import('./runs-check').RunRow[]} */
  const rows = [];
  for (const ns of namespaces) {
    for (let before; ; ) {
      const page = await service.getRuns({ ns, name, limit: RUNS_PAGE, ...(before === undefined ? {} : { before }) });
      for (const r of page) rows.push({ ns: r.ns, name: r.name, slot: r.slot.getTime(), state: r.state, attempt: r.attempt, term: r.term, candidateId: r.candidateId });
      if (page.length < RUNS_PAGE) break;
      before = page[page.length - 1].slot;
    }
  }
  return rows;
}
/** Runs per `getRuns` page. */
const RUNS_PAGE = 1000;

/** The leader row, if any, as `{ leaderId, term, live }` (database clock). */
async function readLeader(/** @type {Awaited<ReturnType<typeof connectAdmin>>} */ admin, /** @type {string} */ ns) {
  const now = { postgres: 'clock_timestamp()', mariadb: 'UTC_TIMESTAMP(6)', sqlite: "strftime('%Y-%m-%d %H:%M:%f', 'now')" }[admin.kind];
  const [row] = await admin.query(
    `SELECT leader_id, term, CASE WHEN lease_expires_at > ${now} THEN 1 ELSE 0 END AS live FROM gemstone_election_leader WHERE ns = ?`,
    [ns],
  );
  return row ? { leaderId: row.leader_id ?? null, term: Number(row.term), live: Number(row.live) === 1 } : null;
}

/**
 * Kills the server sessions whose client port is one of `ports` (the proxy's upstream ports):
 * `pg_terminate_backend` or MariaDB `KILL CONNECTION`. Returns how many it killed.
 * @param {Awaited<ReturnType<typeof connectAdmin>>} admin @param {number[]} ports
 */
async function killConnections(admin, ports) {
  if (ports.length === 0) return 0;
  if (admin.kind === 'postgres') {
    const rows = await admin.query(
      `SELECT pg_terminate_backend(pid) AS killed FROM pg_stat_activity
WHERE datname = current_database() AND pid <> pg_backend_pid() AND client_port = ANY(?::int[])`,
      [ports],
    );
    return rows.filter((r) => r.killed).length;
  }
  if (admin.kind === 'mariadb') {
    const rows = await admin.query('SELECT ID AS id, HOST AS host FROM information_schema.PROCESSLIST WHERE DB = DATABASE() AND ID <> CONNECTION_ID()');
    const victims = rows.filter((r) => ports.some((port) => String(r.host).endsWith(`:${port}`)));
    let killed = 0;
    for (const { id } of victims) {
      await admin
        .query(`KILL CONNECTION ${Number(id)}`)
        .then(() => killed++)
        .catch(() => undefined); // already gone
    }
    return killed;
  }
  return 0;
}

/** The command `--db-restart` runs (override with CHAOS_DB_RESTART_CMD). @param {Kind} kind */
function restartCommand(kind) {
  if (process.env.CHAOS_DB_RESTART_CMD) return process.env.CHAOS_DB_RESTART_CMD;
  if (kind === 'postgres') return 'pg_ctlcluster --skip-systemctl-redirect "$(ls /etc/postgresql | head -n1)" main restart';
  if (kind === 'mariadb') return 'mysqladmin -h 127.0.0.1 -u root shutdown && sleep 1 && (start-stop-daemon --start --background --exec /usr/sbin/mariadbd)';
  return '';
}

/**
 * The guarded ledger (`--guarded`): a table of the harness that the database guards for the run's
 * namespace (`ElectionService.guardTable`). A worker's action writes its row there first, in the
 * same transaction as its ledger row, so the two commit together or not at all.
 * @type {Record<Kind, string>}
 */
const GUARDED_DDL = {
  sqlite: 'CREATE TABLE chaos_guarded (id integer PRIMARY KEY AUTOINCREMENT, ns text NOT NULL, term bigint NOT NULL, holder text NOT NULL, worker int NOT NULL, seq int NOT NULL)',
  postgres: 'CREATE TABLE chaos_guarded (id bigserial PRIMARY KEY, ns text NOT NULL, term bigint NOT NULL, holder text NOT NULL, worker int NOT NULL, seq int NOT NULL)',
  mariadb: 'CREATE TABLE chaos_guarded (id bigint AUTO_INCREMENT PRIMARY KEY, ns varchar(255) NOT NULL, term bigint NOT NULL, holder varchar(64) NOT NULL, worker int NOT NULL, seq int NOT NULL)',
};

/** @param {{ kind: Kind, query: (sql: string, params?: unknown[]) => Promise<any[]> }} admin */
async function installGuardedLedger(admin) {
  await admin.query(GUARDED_DDL[admin.kind]);
}

/** The guarded ledger's insert, with the driver's placeholders: ns, term, holder, worker, seq. @param {Kind} kind */
function guardedInsert(kind) {
  return placeholders(kind, 'INSERT INTO chaos_guarded (ns, term, holder, worker, seq) VALUES (?, ?, ?, ?, ?)');
}

/** The guarded ledger's rows. @param {{ query: (sql: string) => Promise<any[]> }} admin @returns {Promise<{ ns: string, term: number, holder: string, worker: number, seq: number }[]>} */
async function readGuarded(admin) {
  const rows = await admin.query('SELECT ns, term, holder, worker, seq FROM chaos_guarded ORDER BY id');
  return rows.map((r) => ({ ns: String(r.ns), term: Number(r.term), holder: String(r.holder), worker: Number(r.worker), seq: Number(r.seq) }));
}

/**
 * Whether `error` is a guarded table's refusal (PostgreSQL SQLSTATE GS001, MySQL error 45001, a
 * SQLite constraint error with the guard's message), as any client sees it. @param {unknown} error
 */
function isGuardRefusal(error) {
  const e = /** @type {{ code?: unknown, errno?: unknown, message?: unknown, driverError?: { code?: unknown, errno?: unknown, message?: unknown } }} */ (error);
  const d = e?.driverError ?? e;
  if (/^SQLITE_CONSTRAINT/.test(String(d?.code))) return String(d?.message).includes('gemstone-utils: ');
  return d?.code === 'GS001' || Number(d?.errno) === 45001;
}

module.exports = {
  kindOfUrl,
  installGuardedLedger,
  guardedInsert,
  readGuarded,
  isGuardRefusal,
  sqliteFile,
  createDatabase,
  connectAdmin,
  installLedger,
  ledgerInsert,
  jobInsert,
  readLedger,
  readRuns,
  readLeader,
  killConnections,
  restartCommand,
  tmpDir: () => path.join(os.tmpdir(), 'gemstone-chaos'),
};
