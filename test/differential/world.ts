/**
 * The database side of the differential harness: the DataSources ("processes") a schedule runs
 * on, every path of the library as one call each, and test-owned SQL that moves the clock and
 * reads the rows back. Instants are read relative to the database clock of the reading statement.
 */
import * as path from 'path';
import type { DataSource, Logger, QueryRunner } from 'typeorm';
import { ElectionService, NotLeaderError, SerializationFailureError, SqliteTransactionOpenError } from 'gemstone-utils';
import { forceLockedElect } from '../../dist/src/election/paths';
import { compareNs, groupStoreOf } from '../../dist/src/election/group-store';
import { query, type DbKind, type TestDatabase } from '../support/databases';
import type { JsonObject, VacateReason } from './model';
import type { ElectPath, FieldsSpec } from './schedule';

/** A transaction that throws at its end must be rolled back: what a failed caller transaction looks like. */
export async function inTransaction<T>(ds: DataSource, work: (runner: QueryRunner) => Promise<T>): Promise<T> {
  const runner = ds.createQueryRunner();
  try {
    await runner.startTransaction();
    const result = await work(runner);
    await runner.commitTransaction();
    return result;
  } catch (error) {
    if (runner.isTransactionActive) await runner.rollbackTransaction().catch(() => undefined);
    throw error;
  } finally {
    await runner.release();
  }
}

/** What one operation answered, in the form the model answers it. */
export type Observed =
  | { kind: 'void' }
  | { kind: 'elect'; leaderId: string | null; term: number; isLeader: boolean; acquired: boolean; handOver: boolean; wasRegistered: boolean }
  | { kind: 'bool'; value: boolean }
  | { kind: 'fence'; pass: boolean; leaderId: string | null; term: number | null }
  | {
      kind: 'tick';
      outcomes: Array<{ ns: string; leaderId: string | null; term: number | null; isLeader: boolean; acquired: boolean; handOver: boolean }>;
      members: string[];
      unregistered: number;
      released: string[];
    }
  | { kind: 'vacate'; live: string[] }
  | { kind: 'read'; isLeader: boolean; leader: { leaderId: string; term: number } | null; candidates: string[] }
  | { kind: 'error'; message: string; aborted: boolean };

/** Counts a DataSource's failed statements, and calls back at a chosen one (the `busy` step). */
export class HookLogger implements Logger {
  #errors = 0;
  #trigger: { at: number; fire: () => void } | undefined;
  arm(at: number, fire: () => void): void {
    this.#errors = 0;
    this.#trigger = { at, fire };
  }
  disarm(): void {
    this.#trigger = undefined;
  }
  /** Statements sent, and the text of the last one (what tells a one-statement renewal apart). */
  sent = 0;
  last = '';
  logQuery(query: string): void {
    this.sent++;
    this.last = query;
  }
  logQueryError(): void {
    this.#errors++;
    if (this.#trigger && this.#errors >= this.#trigger.at) {
      const { fire } = this.#trigger;
      this.#trigger = undefined;
      fire();
    }
  }
  logQuerySlow(): void {}
  logSchemaBuild(): void {}
  logMigration(): void {}
  log(): void {}
}

export interface Process {
  readonly ds: DataSource;
  readonly auto: ElectionService;
  readonly locked: ElectionService;
  readonly logger: HookLogger;
}

/** Per-connection session settings of a MariaDB run (`SET SESSION …` statements). */
export type SessionSettings = readonly string[];

export interface World {
  readonly kind: DbKind;
  readonly name: string;
  /** The sqlite3 driver (TypeORM 0.3), not better-sqlite3. */
  readonly sqlite3: boolean;
  readonly file: string | undefined;
  readonly procs: readonly Process[];
  /** Test-owned SQL runs here (default session settings). */
  readonly observer: DataSource;
  readonly expireSeconds: number;
}

/** The clock of each database, as the library reads it. */
const OFFSET: Record<DbKind, (column: string) => string> = {
  postgres: (c) => `CAST(EXTRACT(EPOCH FROM (${c} - clock_timestamp())) * 1000 AS double precision)`,
  mariadb: (c) => `(TIMESTAMPDIFF(MICROSECOND, UTC_TIMESTAMP(6), ${c}) / 1000)`,
  sqlite: (c) => `((julianday(${c}) - julianday('now')) * 86400000.0)`,
};
const NOW_PLUS_MS: Record<DbKind, string> = {
  postgres: 'clock_timestamp() + make_interval(secs => CAST(? AS double precision) / 1000)',
  mariadb: 'UTC_TIMESTAMP(6) + INTERVAL (? * 1000) MICROSECOND',
  sqlite: "strftime('%Y-%m-%d %H:%M:%f', 'now', ?)",
};
const NOW_SQL: Record<DbKind, string> = {
  postgres: 'clock_timestamp()',
  mariadb: 'UTC_TIMESTAMP(6)',
  sqlite: "strftime('%Y-%m-%d %H:%M:%f', 'now')",
};

const INSTANTS: Record<string, string[]> = {
  gemstone_election_leader: ['lease_expires_at', 'updated_at'],
  gemstone_election_candidate: ['last_heartbeat_at', 'expires_at'],
  gemstone_election_history: ['acquired_at', 'ended_at'],
};

const placeholders = (n: number) => Array.from({ length: n }, () => '?').join(', ');

/** Opens the processes of a run: two DataSources where the database is shared, one on `:memory:`. */
export async function openWorld(db: TestDatabase, expireSeconds: number, settings: SessionSettings = []): Promise<World> {
  const procs: Process[] = [];
  const count = db.shared ? 2 : 1;
  for (let i = 0; i < count; i++) {
    const logger = new HookLogger();
    const ds = await db.connect({ logger });
    // A lock left held by a defect fails the waiter in seconds, not after the server's 50.
    if (db.kind === 'mariadb') await applySessionSettings(ds, ['SET SESSION innodb_lock_wait_timeout = 10', ...settings]);
    const auto = new ElectionService(ds, { expireSeconds });
    const locked = new ElectionService(ds, { expireSeconds });
    forceLockedElect(locked);
    procs.push({ ds, auto, locked, logger });
  }
  const observer = db.shared ? await db.connect() : procs[0]!.ds;
  await query(observer, 'CREATE TABLE IF NOT EXISTS diff_fenced (ns varchar(255) NOT NULL, term bigint NOT NULL, writer varchar(36) NOT NULL)');
  const options = db.options() as { type: string; database?: string };
  const sqlite3 = options.type === 'sqlite';
  const file = db.kind === 'sqlite' && db.shared ? path.resolve(String(options.database)) : undefined;
  return { kind: db.kind, name: db.name, sqlite3, file, procs, observer, expireSeconds };
}

/**
 * MariaDB: `settings` on every connection of the DataSource's pool — new ones as they are made,
 * the existing ones now (all checked out at once, so each is reached).
 */
async function applySessionSettings(ds: DataSource, settings: SessionSettings): Promise<void> {
  type Conn = { query(sql: string, cb: (error: unknown) => void): void; release(): void };
  type Pool = { on(event: 'connection', listener: (c: Conn) => void): void; getConnection(cb: (error: unknown, c: Conn) => void): void; config: { connectionLimit: number } };
  const pool = (ds.driver as unknown as { pool: Pool }).pool;
  pool.on('connection', (c) => {
    for (const s of settings) c.query(s, () => undefined);
  });
  const get = () => new Promise<Conn>((resolve, reject) => pool.getConnection((e, c) => (e ? reject(e) : resolve(c))));
  const run = (c: Conn, s: string) => new Promise<void>((resolve, reject) => c.query(s, (e) => (e ? reject(e) : resolve())));
  const all = await Promise.all(Array.from({ length: pool.config.connectionLimit }, get));
  for (const c of all) for (const s of settings) await run(c, s);
  for (const c of all) c.release();
}

export interface Names {
  /** Namespace names by index. */
  readonly ns: readonly string[];
  /** Candidate ids by index. */
  readonly c: readonly string[];
}

/** Candidate i: a UUID of the digit i repeated (readable in failures). */
export function candidateId(i: number): string {
  const d = String((i + 1) % 10);
  return `${d.repeat(8)}-${d.repeat(4)}-4${d.repeat(3)}-8${d.repeat(3)}-${d.repeat(12)}`;
}

const HOSTILE = ["\\' OR ''='", '"; DROP TABLE x; --', ' \u00fc\u{1F680}\\\\%_'];

/** The names of one schedule: `prefix/i`, with quotes, backslashes and non-ASCII when hostile. */
export function namesOf(prefix: string, namespaces: number, candidates: number, hostile: boolean): Names {
  return {
    ns: Array.from({ length: namespaces }, (_, i) => `${prefix}/${i}${hostile ? HOSTILE[i % HOSTILE.length] : ''}`),
    c: Array.from({ length: candidates }, (_, i) => candidateId(i)),
  };
}

export function metadataOf(tag: number | undefined): JsonObject | undefined {
  return tag === undefined ? undefined : { tag, host: `h${tag}`, note: tag === 3 ? 'quote \' back\\slash \u00e9' : 'plain' };
}

function fieldsOf(spec: FieldsSpec): { priority?: number; eligible?: boolean; metadata?: JsonObject } {
  const out: { priority?: number; eligible?: boolean; metadata?: JsonObject } = {};
  if (spec.priority !== undefined) out.priority = spec.priority;
  if (spec.eligible !== undefined) out.eligible = spec.eligible;
  const metadata = metadataOf(spec.metadata);
  if (metadata !== undefined) out.metadata = metadata;
  return out;
}

/** Whether an error is a caller transaction's conflict: the transaction was rolled back, nothing happened. */
function isAbort(error: unknown): boolean {
  return error instanceof SerializationFailureError || error instanceof SqliteTransactionOpenError;
}

export async function settle(work: () => Promise<Observed>): Promise<Observed> {
  try {
    return await work();
  } catch (error) {
    return { kind: 'error', message: error instanceof Error ? `${error.name}: ${error.message}` : String(error), aborted: isAbort(error) };
  }
}

function electObserved(o: { leaderId: string | null; term: number; isLeader: boolean; acquired: boolean; handOver: boolean; wasRegistered: boolean }): Observed {
  return { kind: 'elect', leaderId: o.leaderId, term: o.term, isLeader: o.isLeader, acquired: o.acquired, handOver: o.handOver, wasRegistered: o.wasRegistered };
}

/**
 * Leader renewals that took the one-statement path (`databases/mysql/renew.ts`,
 * `databases/postgres/renew.ts`): the call sent that statement and nothing else. Exact in
 * sequential schedules (one call at a time).
 */
export const oneStatementRenewals = { count: 0 };
const ONE_STATEMENT_RENEWAL = /^(SET STATEMENT innodb_lock_wait_timeout = 0, lock_wait_timeout = 0 FOR\s+UPDATE|WITH locked AS \(\s+SELECT ns, lease_expires_at FROM)/;

export async function elect(p: Process, ns: string, id: string, spec: FieldsSpec, via: ElectPath, session?: QueryRunner): Promise<Observed> {
  const before = p.logger.sent;
  const observed = await electVia(p, ns, id, spec, via, session);
  if (p.logger.sent === before + 1 && ONE_STATEMENT_RENEWAL.test(p.logger.last) && observed.kind === 'elect' && observed.isLeader) oneStatementRenewals.count++;
  return observed;
}

async function electVia(p: Process, ns: string, id: string, spec: FieldsSpec, via: ElectPath, session?: QueryRunner): Promise<Observed> {
  const options = { ns, ...fieldsOf(spec) };
  if (session) return electObserved(await (via === 'locked' || via === 'locked-session' ? p.locked : p.auto).electOutcome(id, { ...options, session }));
  switch (via) {
    case 'plain':
      return electObserved(await p.auto.electOutcome(id, options));
    case 'locked':
      return electObserved(await p.locked.electOutcome(id, options));
    case 'session':
      return inTransaction(p.ds, async (r) => electObserved(await p.auto.electOutcome(id, { ...options, session: r })));
    case 'locked-session':
      return inTransaction(p.ds, async (r) => electObserved(await p.locked.electOutcome(id, { ...options, session: r })));
    case 'idle': {
      const runner = p.ds.createQueryRunner();
      try {
        await runner.connect();
        return electObserved(await p.auto.electOutcome(id, { ...options, session: runner }));
      } finally {
        await runner.release();
      }
    }
  }
}

export async function register(p: Process, ns: string, id: string, spec: FieldsSpec): Promise<Observed> {
  await p.auto.registerCandidate(id, { ns, ...fieldsOf(spec) });
  return { kind: 'void' };
}

export async function vacateOne(p: Process, op: 'resign' | 'handOver' | 'unregister', ns: string, id: string, session: boolean): Promise<Observed> {
  const call = async (r?: QueryRunner): Promise<Observed> => {
    const options = r ? { ns, session: r } : { ns };
    if (op === 'unregister') {
      await p.auto.unregisterCandidate(id, options);
      return { kind: 'void' };
    }
    return { kind: 'bool', value: await p.auto[op](id, options) };
  };
  return session ? inTransaction(p.ds, (r) => call(r)) : call();
}

/** assertLeader in `runner`'s transaction, then the fenced write when it passed. */
export async function fenceIn(p: Process, runner: QueryRunner, ns: string, id: string, term: number | undefined): Promise<Observed> {
  try {
    const info = await p.auto.assertLeader(id, { ns, session: runner, ...(term === undefined ? {} : { term }) });
    const type = p.ds.options.type;
    // MySQL/MariaDB: the namespace as hex, which no sql_mode can misread (TypeORM escapes values
    // on the client, which NO_BACKSLASH_ESCAPES breaks: the application's problem, not the library's).
    const values = type === 'postgres' ? '$1, $2, $3' : type === 'mysql' ? 'CONVERT(UNHEX(?) USING utf8mb4), ?, ?' : '?, ?, ?';
    await runner.query(`INSERT INTO diff_fenced (ns, term, writer) VALUES (${values})`, [type === 'mysql' ? Buffer.from(ns).toString('hex') : ns, info.term, id]);
    return { kind: 'fence', pass: true, leaderId: info.leaderId, term: info.term };
  } catch (error) {
    if (error instanceof NotLeaderError) return { kind: 'fence', pass: false, leaderId: error.leaderId, term: error.term };
    throw error;
  }
}

export async function fence(p: Process, ns: string, id: string, term: number | undefined): Promise<Observed> {
  return inTransaction(p.ds, (r) => fenceIn(p, r, ns, id, term));
}

/**
 * How long a group with the default tick (a third of the lease) waits for its own rows' locks, as
 * `LeaderElectorGroup` computes it: half of the tick or of what is left of a renewed lease after
 * the longest tick, whichever is smaller.
 */
function groupLockWaitMs(expireSeconds: number): number {
  const interval = (expireSeconds * 1000) / 3;
  const left = expireSeconds * 1000 - interval * 1.1;
  return Math.max(1, Math.floor(Math.min(interval, left) / 2));
}

/** One group tick through the group store, releasing `release` as the group does on this database. */
export async function tick(
  p: Process,
  input: { namespaces: string[]; id: string; priority: number; eligible: boolean; metadata: JsonObject | undefined; balance: boolean; expireSeconds: number },
  release: ReadonlyMap<string, VacateReason>,
  known: Set<string>,
): Promise<Observed> {
  const store = groupStoreOf(p.ds);
  const namespaces = [...input.namespaces].sort(compareNs);
  let released: string[] = [];
  if (!store.foldsVacates && release.size > 0) {
    // SQLite: the group vacates its given-up leases in a transaction of their own.
    for (const reason of new Set(release.values())) {
      const names = [...release].filter(([, r]) => r === reason).map(([ns]) => ns);
      released.push(...(await store.vacate(names, input.id, reason, false)));
    }
  }
  const result = await store.elect(
    {
      namespaces,
      candidateId: input.id,
      expireSeconds: input.expireSeconds,
      priority: input.priority,
      eligible: input.eligible,
      metadataJson: input.metadata === undefined ? undefined : JSON.stringify(input.metadata),
      balance: input.balance,
      release: store.foldsVacates ? release : new Map(),
      lockWaitMs: groupLockWaitMs(input.expireSeconds),
    },
    { known },
  );
  if (store.foldsVacates) released = (result.released ?? []).map((r) => `${r.ns}#${r.term}`);
  return {
    kind: 'tick',
    outcomes: [...result.outcomes].map((o) => ({ ns: o.ns, leaderId: o.leaderId, term: o.term, isLeader: o.isLeader, acquired: o.acquired, handOver: o.handOver })).sort((a, b) => compareNs(a.ns, b.ns)),
    members: [...result.members].sort(),
    unregistered: result.unregistered,
    released: released.sort(),
  };
}

export async function groupVacate(p: Process, namespaces: string[], id: string, reason: VacateReason, unregister: boolean): Promise<Observed> {
  const live = await groupStoreOf(p.ds).vacate(namespaces, id, reason, unregister);
  return { kind: 'vacate', live: [...live].sort() };
}

export async function read(p: Process, ns: string, id: string): Promise<Observed> {
  const isLeader = await p.auto.isLeader(id, { ns });
  const leader = await p.auto.getLeader({ ns });
  const candidates = await p.auto.listCandidates({ ns });
  return { kind: 'read', isLeader, leader: leader ? { leaderId: leader.leaderId, term: leader.term } : null, candidates };
}

/** The database clock moves `ms` forward for these namespaces: every stored instant moves back. */
export async function shiftTime(w: World, namespaces: readonly string[], ms: number): Promise<void> {
  for (const [table, columns] of Object.entries(INSTANTS)) {
    const sets = columns.map((c) =>
      w.kind === 'postgres'
        ? `${c} = ${c} - make_interval(secs => CAST(? AS double precision))`
        : w.kind === 'mariadb'
          ? `${c} = ${c} - INTERVAL ? MICROSECOND`
          : `${c} = strftime('%Y-%m-%d %H:%M:%f', ${c}, ?)`,
    );
    const amount = w.kind === 'postgres' ? ms / 1000 : w.kind === 'mariadb' ? ms * 1000 : `-${(ms / 1000).toFixed(3)} seconds`;
    await query(w.observer, `UPDATE ${table} SET ${sets.join(', ')} WHERE ns IN (${placeholders(namespaces.length)})`, [...columns.map(() => amount), ...namespaces]);
  }
}

/** Inside a holder's transaction: a live lease of `ns` ends `ms` from now (test-owned SQL). */
export async function shortenLease(w: World, runner: QueryRunner, ns: string, ms: number): Promise<void> {
  const pg = w.kind === 'postgres';
  const amount = w.kind === 'sqlite' ? `+${(ms / 1000).toFixed(3)} seconds` : ms;
  const text = `UPDATE gemstone_election_leader SET lease_expires_at = ${NOW_PLUS_MS[w.kind]} WHERE ns = ? AND leader_id IS NOT NULL AND lease_expires_at > ${NOW_SQL[w.kind]}`;
  let i = 0;
  await runner.query(pg ? text.replace(/\?/g, () => `$${++i}`) : text, [amount, ns]);
}

/** The rows of the schedule's namespaces, instants as milliseconds from the database clock of the read. */
export interface DbRows {
  leaders: Array<{ ns: string; leaderId: string | null; term: number; leaseIn: number | null }>;
  candidates: Array<{ ns: string; id: string; priority: number; eligible: boolean; metadata: string | null; expiresIn: number }>;
  history: Array<{ ns: string; term: number; leaderId: string; acquiredIn: number; endedIn: number | null; endReason: string | null }>;
  fenced: Array<{ ns: string; term: number; writer: string }>;
}

const num = (v: unknown) => (v === null || v === undefined ? null : Number(v));
const bool = (v: unknown) => v === true || v === 1 || v === '1' || v === 't' || v === 'true';

export async function readRows(w: World, namespaces: readonly string[]): Promise<DbRows> {
  const o = OFFSET[w.kind];
  const inList = `(${placeholders(namespaces.length)})`;
  const leaders = await query(w.observer, `SELECT ns, leader_id, term, ${o('lease_expires_at')} AS lease_in FROM gemstone_election_leader WHERE ns IN ${inList}`, [...namespaces]);
  const candidates = await query(
    w.observer,
    `SELECT ns, candidate_id, priority, eligible, metadata, ${o('expires_at')} AS expires_in FROM gemstone_election_candidate WHERE ns IN ${inList}`,
    [...namespaces],
  );
  const history = await query(
    w.observer,
    `SELECT ns, term, leader_id, ${o('acquired_at')} AS acquired_in, ${o('ended_at')} AS ended_in, end_reason FROM gemstone_election_history WHERE ns IN ${inList}`,
    [...namespaces],
  );
  const fenced = await query(w.observer, `SELECT ns, term, writer FROM diff_fenced WHERE ns IN ${inList}`, [...namespaces]);
  return {
    leaders: leaders.map((r) => ({ ns: String(r.ns), leaderId: (r.leader_id as string | null) ?? null, term: Number(r.term), leaseIn: num(r.lease_in) })),
    candidates: candidates.map((r) => ({
      ns: String(r.ns),
      id: String(r.candidate_id),
      priority: Number(r.priority),
      eligible: bool(r.eligible),
      metadata: (r.metadata as string | null) ?? null,
      expiresIn: Number(r.expires_in),
    })),
    history: history.map((r) => ({
      ns: String(r.ns),
      term: Number(r.term),
      leaderId: String(r.leader_id),
      acquiredIn: Number(r.acquired_in),
      endedIn: num(r.ended_in),
      endReason: (r.end_reason as string | null) ?? null,
    })),
    fenced: fenced.map((r) => ({ ns: String(r.ns), term: Number(r.term), writer: String(r.writer) })),
  };
}

/**
 * SQLite file: another connection takes the database write lock (BEGIN IMMEDIATE) until
 * `release()`. It must be a connection of the SAME SQLite library as the DataSource's: two copies
 * of SQLite in one process (sqlite3's and better-sqlite3's) do not see each other's POSIX locks.
 * better-sqlite3 commits at once; sqlite3 queues the COMMIT (`released` settles when it is done).
 */
export async function holdWriteLock(world: World): Promise<{ release: () => void; released: Promise<void> }> {
  const file = world.file!;
  if (!world.sqlite3) {
    // eslint-disable-next-line @typescript-eslint/no-require-imports
    const Database = require('better-sqlite3') as new (file: string, options?: object) => { exec(sql: string): void; close(): void };
    const db = new Database(file, { timeout: 5000 });
    db.exec('BEGIN IMMEDIATE');
    let open = true;
    return {
      release: () => {
        if (!open) return;
        open = false;
        db.exec('COMMIT');
        db.close();
      },
      released: Promise.resolve(),
    };
  }
  type Sqlite3Db = { exec(sql: string, cb: (e: Error | null) => void): void; close(cb: (e: Error | null) => void): void; configure(option: 'busyTimeout', ms: number): void };
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  const sqlite3 = require('sqlite3') as { Database: new (file: string, cb: (e: Error | null) => void) => Sqlite3Db };
  const db = await new Promise<Sqlite3Db>((resolve, reject) => {
    const opened: Sqlite3Db = new sqlite3.Database(file, (e) => (e ? reject(e) : resolve(opened)));
  });
  db.configure('busyTimeout', 5000);
  const exec = (sql: string) => new Promise<void>((resolve, reject) => db.exec(sql, (e) => (e ? reject(e) : resolve())));
  await exec('BEGIN IMMEDIATE');
  let release!: () => void;
  const released = new Promise<void>((resolve) => (release = resolve)).then(async () => {
    await exec('COMMIT');
    await new Promise<void>((resolve, reject) => db.close((e) => (e ? reject(e) : resolve())));
  });
  return { release, released };
}

/** The database session of `runner` (PostgreSQL backend pid, MySQL/MariaDB connection id); SQLite has none. */
export async function sessionOf(kind: DbKind, runner: QueryRunner): Promise<number | undefined> {
  if (kind === 'sqlite') return undefined;
  const rows = (await runner.query(kind === 'postgres' ? 'SELECT pg_backend_pid() AS id' : 'SELECT CONNECTION_ID() AS id')) as Array<{ id: unknown }>;
  return Number(rows[0]!.id);
}

/**
 * How many sessions wait for a lock that `session` holds, as the database reports it on
 * `observer` (PostgreSQL `pg_blocking_pids`, MySQL/MariaDB `information_schema.innodb_lock_waits`,
 * which they refresh only after 0.1 s without reads: poll them less often). Only direct waits: a
 * session queued behind another waiter is counted by neither database.
 */
export async function blockedBy(kind: DbKind, observer: DataSource, session: number): Promise<number> {
  const text =
    kind === 'postgres'
      ? 'SELECT count(*) AS n FROM pg_stat_activity WHERE CAST(? AS integer) = ANY(pg_blocking_pids(pid))'
      : `SELECT COUNT(DISTINCT r.trx_mysql_thread_id) AS n FROM information_schema.innodb_lock_waits lw
           JOIN information_schema.innodb_trx r ON r.trx_id = lw.requesting_trx_id
           JOIN information_schema.innodb_trx b ON b.trx_id = lw.blocking_trx_id
         WHERE b.trx_mysql_thread_id = ?`;
  const rows = await query(observer, text, [session]);
  return Number(rows[0]?.n ?? 0);
}

/** How often to poll {@link blockedBy} (MySQL/MariaDB: their lock tables are refreshed only after 0.1 s unread). */
export const blockedPollMs = (kind: DbKind): number => (kind === 'postgres' ? 10 : 150);
