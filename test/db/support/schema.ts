/**
 * Schema dumps for comparing what initDb, the migrations and TypeORM's synchronize leave behind:
 * information_schema columns, indexes and constraints on PostgreSQL and MariaDB (plus SHOW CREATE
 * TABLE there), sqlite_master SQL on SQLite. Names of the database itself never appear, so dumps
 * of two sibling databases compare equal when their tables are defined alike.
 */
import type { DataSource } from 'typeorm';
import type { DbKind } from '../../support/databases';
import { query } from '../../support/databases';

export const ELECTION_TABLES = ['gemstone_election_candidate', 'gemstone_election_history', 'gemstone_election_leader', 'gemstone_election_run'] as const;
export const ELECTION_INDEX = 'IDX_gemstone_election_candidate_ns_expires_at';

/** The database's kind from a DataSource's `type`. */
export function kindOf(ds: DataSource): DbKind {
  const type = String(ds.options.type);
  if (type === 'postgres') return 'postgres';
  if (type === 'mysql' || type === 'mariadb') return 'mariadb';
  return 'sqlite';
}

/** PostgreSQL: the DataSource's `schema` option, else the connection's current schema. */
async function pgSchema(ds: DataSource, schema?: string): Promise<string> {
  if (schema) return schema;
  const [row] = await query<{ s: string }>(ds, 'SELECT current_schema() AS s');
  return row!.s;
}

/** Names of the base tables (sorted) in the DataSource's database (PostgreSQL: in `schema`). */
export async function tableNames(ds: DataSource, schema?: string): Promise<string[]> {
  let rows: Array<{ name: string }>;
  switch (kindOf(ds)) {
    case 'postgres':
      rows = await query(ds, `SELECT table_name AS name FROM information_schema.tables WHERE table_schema = ? AND table_type = 'BASE TABLE'`, [
        await pgSchema(ds, schema),
      ]);
      break;
    case 'mariadb':
      rows = await query(ds, `SELECT table_name AS name FROM information_schema.tables WHERE table_schema = DATABASE() AND table_type = 'BASE TABLE'`);
      break;
    case 'sqlite':
      rows = await query(ds, `SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'`);
      break;
  }
  return rows.map((row) => String(row.name ?? (row as Record<string, unknown>).NAME)).sort();
}

/** Names of the indexes (sorted) on `table`, primary keys included. */
export async function indexNames(ds: DataSource, table: string, schema?: string): Promise<string[]> {
  let rows: Array<{ name: string }>;
  switch (kindOf(ds)) {
    case 'postgres':
      rows = await query(ds, 'SELECT indexname AS name FROM pg_indexes WHERE schemaname = ? AND tablename = ?', [await pgSchema(ds, schema), table]);
      break;
    case 'mariadb':
      rows = await query(ds, 'SELECT DISTINCT index_name AS name FROM information_schema.statistics WHERE table_schema = DATABASE() AND table_name = ?', [table]);
      break;
    case 'sqlite':
      rows = await query(ds, `SELECT name FROM sqlite_master WHERE type = 'index' AND tbl_name = ?`, [table]);
      break;
  }
  return rows.map((row) => String(row.name ?? (row as Record<string, unknown>).NAME)).sort();
}

/**
 * Everything that defines `tables`: columns (type, length, precision, nullability, default,
 * collation, position), indexes and constraints. Tables that do not exist are absent from it.
 */
export async function schemaDump(ds: DataSource, tables: readonly string[], schema?: string): Promise<Record<string, unknown>> {
  const names = [...tables].sort();
  switch (kindOf(ds)) {
    case 'postgres': {
      const s = await pgSchema(ds, schema);
      const inList = names.map(() => '?').join(', ');
      const columns = await query(
        ds,
        `SELECT table_name, column_name, ordinal_position, data_type, udt_name, character_maximum_length, numeric_precision,
                datetime_precision, is_nullable, column_default, collation_name
           FROM information_schema.columns WHERE table_schema = ? AND table_name IN (${inList})
          ORDER BY table_name, ordinal_position`,
        [s, ...names],
      );
      const indexes = await query(
        ds,
        `SELECT tablename, indexname, indexdef FROM pg_indexes WHERE schemaname = ? AND tablename IN (${inList}) ORDER BY tablename, indexname`,
        [s, ...names],
      );
      const constraints = await query(
        ds,
        `SELECT c.relname AS table_name, con.conname, con.contype, pg_get_constraintdef(con.oid) AS definition
           FROM pg_constraint con JOIN pg_class c ON c.oid = con.conrelid JOIN pg_namespace n ON n.oid = c.relnamespace
          WHERE n.nspname = ? AND c.relname IN (${inList}) ORDER BY c.relname, con.conname`,
        [s, ...names],
      );
      return { columns, indexes, constraints };
    }
    case 'mariadb': {
      const inList = names.map(() => '?').join(', ');
      const columns = await query(
        ds,
        `SELECT table_name, column_name, ordinal_position, column_type, is_nullable, column_default, character_set_name,
                collation_name, extra
           FROM information_schema.columns WHERE table_schema = DATABASE() AND table_name IN (${inList})
          ORDER BY table_name, ordinal_position`,
        names,
      );
      const indexes = await query(
        ds,
        `SELECT table_name, index_name, seq_in_index, column_name, non_unique, collation AS ordering
           FROM information_schema.statistics WHERE table_schema = DATABASE() AND table_name IN (${inList})
          ORDER BY table_name, index_name, seq_in_index`,
        names,
      );
      const present = new Set(await tableNames(ds));
      const create: Record<string, string> = {};
      for (const name of names.filter((n) => present.has(n))) {
        const [row] = await query<Record<string, string>>(ds, `SHOW CREATE TABLE \`${name}\``);
        create[name] = row!['Create Table']!;
      }
      return { columns, indexes, create };
    }
    case 'sqlite': {
      const inList = names.map(() => '?').join(', ');
      const objects = await query(ds, `SELECT type, name, tbl_name, sql FROM sqlite_master WHERE tbl_name IN (${inList}) ORDER BY type, name`, names);
      const columns: Record<string, unknown> = {};
      for (const name of names) columns[name] = await query(ds, `PRAGMA table_info("${name}")`);
      return { objects, columns };
    }
  }
}

/** Every row of `table`, ordered by all of its columns: to prove data survived untouched. */
export async function tableRows(ds: DataSource, table: string): Promise<unknown[]> {
  const rows = await query<Record<string, unknown>>(ds, `SELECT * FROM ${table}`);
  return rows.map((row) => JSON.stringify(row)).sort();
}
