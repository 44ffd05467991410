import type { EntitySchema, MigrationInterface } from 'typeorm';
import { ValidationError } from '../errors';
import { guardTableMigration } from '../election/guards';

/** An entity class (TypeORM `@Entity`). */
// eslint-disable-next-line @typescript-eslint/no-explicit-any
export type EntityClass = new (...args: any[]) => object;
/** What a module can register as an entity: a class or a TypeORM `EntitySchema`. */
// eslint-disable-next-line @typescript-eslint/no-explicit-any
export type RegisteredEntity = EntityClass | EntitySchema<any>;
/** A migration class (TypeORM `MigrationInterface`). */
export type MigrationClass = new (...args: never[]) => MigrationInterface;

/**
 * DDL a plugin needs `initDb` to run. `initDb` creates only what is registered here, so the
 * application's own tables are never created, altered or dropped.
 */
export interface TableInstaller {
  /** A stable name, used for de-duplication and in error messages. */
  readonly name: string;
  /** The entity classes whose tables this installer creates. */
  readonly entities: readonly EntityClass[];
  /** Creates the tables and indexes if they are missing. Safe to run concurrently from several processes. */
  install(dataSource: import('typeorm').DataSource): Promise<void>;
}

/** What a plugin module registers on `GemstoneDB` when it is imported; every part is optional. */
export interface Registration {
  /** Entity classes or `EntitySchema`s; `initDb` creates their missing tables and indexes. */
  entities?: readonly RegisteredEntity[];
  /** Migration classes that create the same tables, for applications that run migrations instead of `initDb`'s DDL. */
  migrations?: readonly MigrationClass[];
  /** DDL `initDb` runs for tables the entities alone do not describe (see {@link TableInstaller}). */
  installers?: readonly TableInstaller[];
}

const entities: RegisteredEntity[] = [];
const migrations: MigrationClass[] = [];
const installers: TableInstaller[] = [];

function addUnique<T>(into: T[], items: readonly T[] | undefined): void {
  for (const item of items ?? []) if (!into.includes(item)) into.push(item);
}

/**
 * An `EntitySchema` by shape, not `instanceof`: the application and a plugin may load different
 * copies of TypeORM.
 */
export function isEntitySchema(item: unknown): item is EntitySchema {
  if (typeof item !== 'object' || item === null) return false;
  const options: unknown = (item as { options?: unknown }).options;
  return typeof options === 'object' && options !== null && typeof (options as { name?: unknown }).name === 'string';
}

/** A registered entity's name, for messages. */
export function entityName(entity: RegisteredEntity): string {
  return isEntitySchema(entity) ? entity.options.name : entity.name;
}

/** Checks a whole registration before any of it is added, so a bad one registers nothing. */
function validate(registration: Registration): void {
  if (typeof registration !== 'object' || registration === null) {
    throw new ValidationError('registration', 'must be an object like { entities?, migrations?, installers? }');
  }
  const entityList: unknown = registration.entities;
  if (entityList !== undefined && (!Array.isArray(entityList) || !entityList.every((item) => typeof item === 'function' || isEntitySchema(item)))) {
    throw new ValidationError('registration.entities', 'must be an array of entity classes or EntitySchema instances');
  }
  const migrationList: unknown = registration.migrations;
  if (migrationList !== undefined && (!Array.isArray(migrationList) || !migrationList.every((item) => typeof item === 'function'))) {
    throw new ValidationError('registration.migrations', 'must be an array of classes');
  }
  const installers: unknown = registration.installers;
  if (installers === undefined) return;
  const valid = (item: unknown) =>
    typeof item === 'object' && item !== null && typeof (item as TableInstaller).name === 'string' && typeof (item as TableInstaller).install === 'function';
  if (!Array.isArray(installers) || !installers.every(valid)) {
    throw new ValidationError('registration.installers', 'must be an array of { name, entities, install(dataSource) }');
  }
}

/**
 * The registry that plugin modules add their entities and migrations to when they are imported
 * (importing `gemstone-utils` or `gemstone-utils/election` registers the election tables).
 */
export const GemstoneDB = Object.freeze({
  /**
   * Adds entities (classes or `EntitySchema`s), migrations and table installers. Idempotent:
   * registering twice adds nothing; no argument adds nothing.
   */
  register(registration?: Registration): void {
    if (registration === undefined) return;
    validate(registration);
    addUnique(entities, registration.entities);
    addUnique(migrations, registration.migrations);
    for (const installer of registration.installers ?? []) {
      if (!installers.some((known) => known.name === installer.name)) installers.push(installer);
    }
  },
  /** The registered entities: a frozen copy, spread it into a DataSource's `entities`. */
  get entities(): readonly RegisteredEntity[] {
    return Object.freeze([...entities]);
  },
  /** The registered migrations: a frozen copy, spread it into a DataSource's `migrations`. */
  get migrations(): readonly MigrationClass[] {
    return Object.freeze([...migrations]);
  },
  /**
   * A migration that guards `table` for `options.ns` (default `"default"`) as
   * `ElectionService.guardTable` does, and whose `down` removes the guard: call its `up`/`down`
   * from a migration of your own. PostgreSQL and MySQL/MariaDB; on SQLite `up` throws a
   * ValidationError saying so.
   */
  guardTableMigration(table: string, options: { ns?: string; schema?: string } = {}): MigrationInterface {
    return guardTableMigration(table, options);
  },
  /** @internal The DDL installers `initDb` runs when `createTables` is true. */
  get installers(): readonly TableInstaller[] {
    return Object.freeze([...installers]);
  },
});
