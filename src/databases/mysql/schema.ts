import type { DataSource, EntityManager } from 'typeorm';
import type { DbContext } from '../../db/context';
import { execute } from '../../db/session';
import { raw, sql, SqlFragment } from '../../db/sql';
import { DDL_LOCK_TIMEOUT_MS, withDdlLockRetries } from '../../election/ddl-lock';
import { identityColumnsMissing, identityStatementsOf, mysqlFlavor } from '../../election/schema';
import { CANDIDATE_TABLE, candidateIndexName, HISTORY_TABLE, historyIndexName, LEADER_TABLE, objectName, quotedName, RUN_TABLE, runIndexName, runNsIndexName, TableNames } from '../../election/tables';
import { driverError } from '../dialect';
import type { MysqlFlavor, SchemaParts } from '../contract/schema';
import { mysqlDdl } from './ddl';
import { endImplicitTransaction } from './session';

/** A constraint or index name, quoted for this database. */
const named = (name: string) => quotedName(name, '`');

/** The binary no-pad collation of the namespace column on each server (see {@link MysqlFlavor}). */
const NS_COLLATION: Record<MysqlFlavor, string> = { mariadb: 'utf8mb4_nopad_bin', mysql: 'utf8mb4_0900_bin' };

/** MySQL: ER_CANT_DROP_FIELD_OR_KEY, another process dropped the same index first. */
const MYSQL_CANT_DROP_KEY = 1091;
/** MySQL: ER_DUP_FIELDNAME, another process added the same column first. */
const MYSQL_DUPLICATE_COLUMN = 1060;

/** MySQL/MariaDB: whether step 1's candidate index is still there (step 4 drops it). */
async function mysqlIndexPresent(context: DbContext, manager: EntityManager): Promise<boolean> {
  const rows = await execute(
    context,
    manager,
    sql`SELECT COUNT(*) AS n FROM information_schema.statistics WHERE table_schema = DATABASE() AND table_name = ${context.tableName(CANDIDATE_TABLE)} AND index_name = ${candidateIndexName(context)}`,
  );
  return Number(rows[0]?.n) > 0;
}

/** MySQL/MariaDB: the election schema (see `election/schema.ts` for the steps). */
export const mysqlSchema: SchemaParts = {
  tableStatements(names: TableNames, flavor: MysqlFlavor = 'mariadb'): SqlFragment[] {
    const candidate = names.table(CANDIDATE_TABLE);
    const leader = names.table(LEADER_TABLE);
    const termCheck = named(objectName('CHK', names.tableName(LEADER_TABLE), '_term'));
    const index = named(candidateIndexName(names));
    const ns = raw(`varchar(255) CHARACTER SET utf8mb4 COLLATE ${NS_COLLATION[flavor]} NOT NULL`);
    const uuid = raw('varchar(36) CHARACTER SET ascii COLLATE ascii_bin');
    return [
      sql`CREATE TABLE IF NOT EXISTS ${candidate} (
  ns ${ns},
  candidate_id ${uuid} NOT NULL,
  last_heartbeat_at datetime(6) NOT NULL,
  expires_at datetime(6) NOT NULL,
  PRIMARY KEY (ns, candidate_id),
  KEY ${index} (ns, expires_at)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4`,
      sql`CREATE TABLE IF NOT EXISTS ${leader} (
  ns ${ns},
  leader_id ${uuid} NULL,
  lease_expires_at datetime(6) NULL,
  updated_at datetime(6) NOT NULL,
  term bigint NOT NULL DEFAULT 0,
  PRIMARY KEY (ns),
  CONSTRAINT ${termCheck} CHECK (term >= 0)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4`,
    ];
  },

  identityColumnTypes: {
    metadata: 'text CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NULL',
    priority: 'int NOT NULL DEFAULT 0',
    eligible: 'boolean NOT NULL DEFAULT 1',
  },

  /** One ALTER adds all columns, or none. */
  alterOneColumnAtATime: false,

  historyStatements(names: TableNames, flavor: MysqlFlavor = 'mariadb'): SqlFragment[] {
    const history = names.table(HISTORY_TABLE);
    const index = named(historyIndexName(names));
    const ns = raw(`varchar(255) CHARACTER SET utf8mb4 COLLATE ${NS_COLLATION[flavor]} NOT NULL`);
    const ascii = raw('CHARACTER SET ascii COLLATE ascii_bin');
    return [
      sql`CREATE TABLE IF NOT EXISTS ${history} (
  ns ${ns},
  term bigint NOT NULL,
  leader_id varchar(36) ${ascii} NOT NULL,
  acquired_at datetime(6) NOT NULL,
  ended_at datetime(6) NULL,
  end_reason varchar(16) ${ascii} NULL,
  PRIMARY KEY (ns, term),
  KEY ${index} (ended_at)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4`,
    ];
  },

  /** Binary no-pad collations on both keys' strings, as for the namespace: `Nightly` and `nightly ` are two schedules. */
  runStatements(names: TableNames, flavor: MysqlFlavor = 'mariadb'): SqlFragment[] {
    const runs = names.table(RUN_TABLE);
    const index = named(runIndexName(names));
    const nsIndex = named(runNsIndexName(names));
    const text = (length: number) => raw(`varchar(${length}) CHARACTER SET utf8mb4 COLLATE ${NS_COLLATION[flavor]} NOT NULL`);
    const ascii = raw('CHARACTER SET ascii COLLATE ascii_bin');
    return [
      sql`CREATE TABLE IF NOT EXISTS ${runs} (
  ns ${text(255)},
  name ${text(100)},
  slot datetime(6) NOT NULL,
  state varchar(16) ${ascii} NOT NULL,
  attempt int NOT NULL,
  term bigint NOT NULL,
  candidate_id varchar(36) ${ascii} NOT NULL,
  started_at datetime(6) NULL,
  finished_at datetime(6) NULL,
  error text CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NULL,
  PRIMARY KEY (ns, name, slot),
  KEY ${index} (slot DESC, ns, name, finished_at),
  KEY ${nsIndex} (ns, slot DESC, name)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4`,
    ];
  },

  candidateColumns(context: DbContext): SqlFragment {
    return sql`SELECT column_name AS name FROM information_schema.columns WHERE table_schema = DATABASE() AND table_name = ${context.tableName(CANDIDATE_TABLE)}`;
  },

  async firstStepPresent(context: DbContext, manager: EntityManager): Promise<boolean> {
    const [candidate, leader] = [CANDIDATE_TABLE, LEADER_TABLE].map((name) => context.tableName(name));
    const rows = await execute(
      context,
      manager,
      sql`SELECT COUNT(*) AS n FROM information_schema.tables WHERE table_schema = DATABASE() AND table_name IN (${candidate}, ${leader})`,
    );
    return Number(rows[0]?.n) === 2;
  },

  async relationsPresent(context: DbContext, manager: EntityManager): Promise<boolean> {
    const names = [CANDIDATE_TABLE, LEADER_TABLE, HISTORY_TABLE, RUN_TABLE].map((name) => context.tableName(name));
    const rows = await execute(
      context,
      manager,
      sql`SELECT COUNT(*) AS n FROM information_schema.tables WHERE table_schema = DATABASE() AND table_name IN (${names[0]}, ${names[1]}, ${names[2]}, ${names[3]})`,
    );
    return Number(rows[0]?.n) === names.length;
  },

  /**
   * An online, in-place drop on InnoDB: a metadata lock held for a moment, no table copy. As an
   * `ALTER TABLE`, which the installing role may run (`DROP INDEX` would need `INDEX` too).
   */
  async leanHeartbeatStatements(context: DbContext, manager: EntityManager): Promise<SqlFragment[]> {
    if (!(await mysqlIndexPresent(context, manager))) return [];
    return [sql`ALTER TABLE ${context.table(CANDIDATE_TABLE)} DROP INDEX ${named(candidateIndexName(context))}`];
  },

  async leanHeartbeatUndoStatements(context: DbContext, manager: EntityManager): Promise<SqlFragment[]> {
    if (await mysqlIndexPresent(context, manager)) return [];
    return [sql`ALTER TABLE ${context.table(CANDIDATE_TABLE)} ADD INDEX ${named(candidateIndexName(context))} (ns, expires_at)`];
  },

  flavorOf: (session) => mysqlFlavor(session),
  withDdlLockTimeout: (_runner, _timeoutMs, work) => work(),
  install: installMysql,
};

/**
 * MySQL/MariaDB DDL commits implicitly, so no transaction; their metadata locks make concurrent
 * CREATE TABLE IF NOT EXISTS safe, and a racing ALTER that added a column first is recognized.
 * Runs on a connection of its own, whose `lock_wait_timeout` is bounded and then restored.
 */
async function installMysql(dataSource: DataSource, context: DbContext): Promise<void> {
  const runner = dataSource.createQueryRunner();
  try {
    const m = runner.manager;
    const flavor = await mysqlFlavor(m);
    if (!(await mysqlSchema.firstStepPresent(context, m))) {
      for (const statement of mysqlSchema.tableStatements(context, flavor)) await execute(context, m, statement);
    }
    const [saved] = await execute<{ t: unknown }>(context, m, sql`SELECT @@SESSION.lock_wait_timeout AS t`);
    // A server-side parameter is a double, which the variable refuses: cast to its type.
    await execute(context, m, sql`SET SESSION lock_wait_timeout = CAST(${Math.ceil(DDL_LOCK_TIMEOUT_MS / 1000)} AS UNSIGNED)`);
    try {
      await withDdlLockRetries(mysqlDdl.isLockTimeout, async () => {
        const missing = await identityColumnsMissing(context, m);
        for (const statement of identityStatementsOf(mysqlSchema, context, missing, flavor)) {
          await execute(context, m, statement).catch(async (error: unknown) => {
            // Another process added the columns first (one ALTER adds all of them, or none).
            if (Number(driverError(error).errno) !== MYSQL_DUPLICATE_COLUMN) throw error;
            if ((await identityColumnsMissing(context, m)).length > 0) throw error;
          });
        }
      });
      // Step 3: a new table only, no lock on the election's tables.
      for (const statement of mysqlSchema.runStatements(context, flavor)) await execute(context, m, statement);
      // Step 4: the heartbeat's index goes.
      await withDdlLockRetries(mysqlDdl.isLockTimeout, async () => {
        for (const statement of await mysqlSchema.leanHeartbeatStatements(context, m)) {
          await execute(context, m, statement).catch(async (error: unknown) => {
            // Another process dropped it first.
            if (Number(driverError(error).errno) !== MYSQL_CANT_DROP_KEY) throw error;
            if (await mysqlIndexPresent(context, m)) throw error;
          });
        }
      });
    } finally {
      await execute(context, m, sql`SET SESSION lock_wait_timeout = CAST(${Number(saved?.t)} AS UNSIGNED)`);
    }
  } finally {
    try {
      // Autocommit off: the reads above opened a transaction; the connection goes back to the pool without it.
      await endImplicitTransaction(dataSource, runner);
    } finally {
      await runner.release();
    }
  }
}
