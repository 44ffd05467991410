import type { DbContext } from '../db/context';
import type { Dialect } from './dialect';
import type { LeaseChangeNotifications } from './contract/notifications';
import type { ProgramsPart } from './contract/programs';
import type { ElectParts } from './contract/store';

/**
 * What each database does differently above plain SQL — its elect, group tick, schema, pruning,
 * observation — one member per concern, each typed by a contract in `contract/`. A database's
 * folder registers its parts (in its `index.ts`); the shared code asks {@link partsOf} and never
 * imports a folder. Contracts may import types only from modules that do not import this one.
 */
export interface DatabaseParts {
  /** Placeholder until the first concern lands; each concern adds its member here. */
  readonly name: Dialect['name'];
  /** The single-namespace election's members that differ by database (see `contract/store.ts`). */
  readonly elect: ElectParts;
  /** Calls without a transaction to join run as one program each (SQLite); absent elsewhere. */
  readonly programs?: ProgramsPart;
  /** Lease changes pushed to a listening connection (PostgreSQL LISTEN/NOTIFY); absent elsewhere. */
  readonly notifications?: LeaseChangeNotifications;
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
