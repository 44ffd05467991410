import type { DbContext } from '../db/context';
import type { SessionParts } from './contract/session';
import type { Dialect } from './dialect';

/**
 * What each database does differently above plain SQL — its elect, group tick, schema, pruning,
 * observation — one member per concern, each typed by a contract in `contract/`. A database's
 * folder registers its parts (in its `index.ts`); the shared code asks {@link partsOf} and never
 * imports a folder. Contracts may import types only from modules that do not import this one.
 */
export interface DatabaseParts {
  /** Placeholder until the first concern lands; each concern adds its member here. */
  readonly name: Dialect['name'];
  /** How the library's statements and transactions reach the database (db/session.ts, db/transaction.ts). */
  readonly session: SessionParts;
}

const registered = new Map<Dialect, DatabaseParts>();

/** Registers the parts of the database whose dialect is `dialect`. */
export function registerParts(dialect: Dialect, parts: DatabaseParts): void {
  registered.set(dialect, parts);
}

/** The parts of the DataSource's database. */
export function partsOf(context: DbContext): DatabaseParts {
  const parts = registered.get(context.dialect);
  if (!parts) throw new Error(`gemstone-utils: no parts registered for the ${context.dialect.name} dialect (import 'gemstone-utils' first)`);
  return parts;
}
