import type { DataSource, EntityMetadata, QueryRunner } from 'typeorm';
import { contextOf } from './context';
import { partsOf } from '../databases/parts';
import { GemstoneDB, RegisteredEntity } from './registry';

/*
 * Tables of entities that third-party modules register on GemstoneDB without an installer of
 * their own. Their DDL comes from TypeORM's schema builder — the same SQL `synchronize()` would
 * run — but only the statements that CREATE a missing plugin table and its indexes, constraints
 * and enum types are kept. Everything else the builder proposes (altering or dropping the
 * application's tables, or an existing plugin table) is discarded: initDb never changes a table
 * that exists.
 */

/** One statement of TypeORM's schema builder (`SqlInMemory.upQueries`). */
interface BuilderQuery {
  readonly query: string;
  readonly parameters?: unknown[];
}

/** A table path as the driver resolves it (default schema/database filled in), for comparison. */
function tableKey(dataSource: DataSource, path: string): string {
  const parsed = dataSource.driver.parseTableName(path) as { database?: string; schema?: string; tableName: string };
  return JSON.stringify([parsed.database ?? null, parsed.schema ?? null, parsed.tableName]);
}

/** `"schema"."table"` / `` `db`.`table` `` → `schema.table`. */
function unquote(path: string): string {
  return path.replace(/["`]/g, '');
}

const IDENTIFIER_PATH = '((?:"[^"]+"|`[^`]+`|[\\w$]+)(?:\\.(?:"[^"]+"|`[^`]+`|[\\w$]+))*)';
/** Statements that create a table, or add to the table they name after `ON` / `ALTER TABLE`. */
const TABLE_PATTERNS: readonly RegExp[] = [
  new RegExp(`^\\s*CREATE\\s+TABLE\\s+${IDENTIFIER_PATH}`, 'i'),
  new RegExp(`^\\s*CREATE\\s+(?:UNIQUE\\s+|SPATIAL\\s+|FULLTEXT\\s+)?INDEX\\s+${IDENTIFIER_PATH}\\s+ON\\s+${IDENTIFIER_PATH}`, 'i'),
  new RegExp(`^\\s*ALTER\\s+TABLE\\s+${IDENTIFIER_PATH}\\s+ADD\\s+CONSTRAINT\\b`, 'i'),
  new RegExp(`^\\s*COMMENT\\s+ON\\s+(?:TABLE|COLUMN)\\s+${IDENTIFIER_PATH}`, 'i'),
];
/** PostgreSQL enum columns: TypeORM names the type `<table>_<column>_enum`. */
const CREATE_TYPE = new RegExp(`^\\s*CREATE\\s+TYPE\\s+${IDENTIFIER_PATH}\\s+AS\\s+ENUM`, 'i');

/** The table a kept statement belongs to, or undefined for a statement initDb never runs. */
function statementTable(dataSource: DataSource, query: string, tables: ReadonlyMap<string, EntityMetadata>): string | undefined {
  for (const pattern of TABLE_PATTERNS) {
    const match = pattern.exec(query);
    if (!match) continue;
    const path = match[match.length - 1] as string;
    const key = tableKey(dataSource, unquote(path));
    return tables.has(key) ? key : undefined;
  }
  const type = CREATE_TYPE.exec(query);
  if (type) {
    const typeName = dataSource.driver.parseTableName(unquote(type[1] as string)).tableName;
    for (const [key, metadata] of tables) {
      if (typeName.startsWith(`${metadata.tableName}_`) && typeName.endsWith('_enum')) return key;
    }
  }
  return undefined;
}

/** The registered entities no installer covers (the library's own tables have their installer). */
export function pluginEntities(): RegisteredEntity[] {
  const covered = new Set<unknown>(GemstoneDB.installers.flatMap((installer) => [...installer.entities]));
  return GemstoneDB.entities.filter((entity) => !covered.has(entity));
}

/** Keyed by resolved table path: the plugin tables that do not exist yet. */
async function missingTables(runner: QueryRunner, dataSource: DataSource, metadatas: readonly EntityMetadata[]): Promise<Map<string, EntityMetadata>> {
  const missing = new Map<string, EntityMetadata>();
  for (const metadata of metadatas) {
    const key = tableKey(dataSource, metadata.tablePath);
    if (!missing.has(key) && !(await runner.hasTable(metadata.tablePath))) missing.set(key, metadata);
  }
  return missing;
}

/** The schema builder's statements that create the given tables, in the builder's order. */
async function createStatements(dataSource: DataSource, tables: ReadonlyMap<string, EntityMetadata>): Promise<Map<string, BuilderQuery[]>> {
  const log = await dataSource.driver.createSchemaBuilder().log();
  const byTable = new Map<string, BuilderQuery[]>();
  for (const query of log.upQueries as BuilderQuery[]) {
    const key = statementTable(dataSource, query.query, tables);
    if (key === undefined) continue;
    byTable.set(key, [...(byTable.get(key) ?? []), query]);
  }
  return byTable;
}

async function run(runner: QueryRunner, statements: readonly BuilderQuery[]): Promise<void> {
  for (const statement of statements) await runner.query(statement.query, statement.parameters);
}

/**
 * Creates the missing tables of registered plugin entities (classes or EntitySchemas) with their
 * indexes and constraints. Tables that exist are left exactly as they are. Safe when several
 * processes run it at once: each database's `ddl.createPluginTables` says how (PostgreSQL
 * serializes it with an advisory lock; on SQLite and MySQL/MariaDB a racing installer's "already
 * exists" is answered by checking again).
 */
export async function installPluginTables(dataSource: DataSource): Promise<void> {
  const entities = pluginEntities();
  if (entities.length === 0) return;
  const metadatas = entities.map((entity) => dataSource.getMetadata(entity as never));
  const { ddl } = partsOf(contextOf(dataSource));
  await ddl.isolated(dataSource, () => install(dataSource, metadatas));
}

async function install(dataSource: DataSource, metadatas: readonly EntityMetadata[]): Promise<void> {
  const { ddl } = partsOf(contextOf(dataSource));
  const runner = dataSource.createQueryRunner();
  try {
    const missing = await missingTables(runner, dataSource, metadatas);
    if (missing.size === 0) return; // no DDL at all: works for roles without DDL rights
    const statements = await createStatements(dataSource, missing);
    await ddl.createPluginTables({
      runner,
      missing,
      stillMissing: async () => [...(await missingTables(runner, dataSource, [...missing.values()])).keys()],
      create: (key) => run(runner, statements.get(key) ?? []),
    });
  } finally {
    try {
      // MySQL/MariaDB with autocommit off: the lookups opened a transaction; the connection goes back to the pool without it.
      await ddl.settle(dataSource, runner);
    } finally {
      await runner.release();
    }
  }
}
