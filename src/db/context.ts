import type { DataSource } from 'typeorm';
import type { Dialect } from '../databases/dialect';
import { adoptConnections, dialectOf } from '../databases/registry';
import { raw, RawSql } from './sql';

/** What the library derives once per DataSource. */
export interface DbContext {
  readonly dataSource: DataSource;
  readonly dialect: Dialect;
  /**
   * The name a table of the library really has on this DataSource: an entity's table as TypeORM
   * names it (after `entityPrefix` and the naming strategy), given by the entity's own name
   * (`gemstone_election_leader`); any other name gets the `entityPrefix`.
   */
  tableName(name: string): string;
  /** The PostgreSQL schema of the library's tables, when the DataSource or entity names one. */
  schemaName(name: string): string | undefined;
  /** {@link DbContext.tableName}, escaped and qualified with its schema (PostgreSQL). */
  table(name: string): RawSql;
  /** Any relation name (e.g. an index), escaped and qualified with the schema of table `name`. */
  qualified(name: string, relation: string): RawSql;
}

/** The entity metadata of a table the library names by its given (unprefixed) name, if registered. */
function metadataOf(dataSource: DataSource, name: string) {
  // Metadata exists only once the DataSource is initialized; before that the option decides.
  if (!dataSource.isInitialized) return undefined;
  return dataSource.entityMetadatas.find((metadata) => metadata.givenTableName === name);
}

const contexts = new WeakMap<DataSource, DbContext>();

export function contextOf(dataSource: DataSource): DbContext {
  let context = contexts.get(dataSource);
  if (!context) {
    const dialect = dialectOf(dataSource);
    const options = dataSource.options as { schema?: string; entityPrefix?: string };
    const escape = (identifier: string) => dataSource.driver.escape(identifier);
    const tableName = (name: string) => metadataOf(dataSource, name)?.tableName ?? `${options.entityPrefix ?? ''}${name}`;
    const schemaName = (name: string) =>
      dialect.schemas ? (metadataOf(dataSource, name)?.schema ?? options.schema) || undefined : undefined;
    const qualified = (name: string, relation: string) => {
      const schema = schemaName(name);
      return raw(schema ? `${escape(schema)}.${escape(relation)}` : escape(relation));
    };
    context = Object.freeze({
      dataSource,
      dialect,
      tableName,
      schemaName,
      table: (name: string) => qualified(name, tableName(name)),
      qualified,
    });
    contexts.set(dataSource, context);
  }
  // Not when the context is made: an application may hand the library its DataSource before
  // initializing it (NestJS), and the connections exist only after. At every call, not once: a
  // DataSource destroyed and initialized again has new connections (the adopter makes a repeat
  // cost a look-up).
  if (dataSource.isInitialized) adoptConnections(dataSource);
  return context;
}
