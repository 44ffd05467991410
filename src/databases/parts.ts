import type { DbContext } from '../db/context';
import type { Dialect, DialectName } from './dialect';
import type { DdlParts } from './contract/ddl';
import type { DemoLedgerParts } from './contract/demo-ledger';
import type { PruneParts } from './contract/prune';
import type { SchemaParts } from './contract/schema';
import type { SetupParts } from './contract/setup';
import type { GroupParts } from './contract/group';
import type { SessionParts } from './contract/session';
import type { LeaseChangeNotifications } from './contract/notifications';
import type { ProgramsPart } from './contract/programs';
import type { RunProgramsPart } from './contract/run-programs';
import type { ElectParts } from './contract/store';
import type { CancellableReads } from './contract/cancellable-reads';
import type { GuardParts } from './contract/guards';

/**
 * What each database does differently above plain SQL — its elect, group tick, schema, pruning,
 * observation — one member per concern, each typed by a contract in `contract/`. A database's
 * folder registers its parts (in its `index.ts`); the shared code asks {@link partsOf} and never
 * imports a folder. Contracts may import types only from modules that do not import this one.
 */
export interface DatabaseParts {
  /** The database these parts are for. */
  readonly name: Dialect['name'];
  /** Connecting: the TypeORM types, a missing driver's hint, a busy `initialize()`, connection settings. */
  readonly setup: SetupParts;
  /** How installers run DDL and the lookups around it (also the plugin tables' install). */
  readonly ddl: DdlParts;
  /** The election schema: each step's DDL, its presence check and its install. */
  readonly schema: SchemaParts;
  /** Pruning expired candidates and ended terms: the cutoff instant and one batch's DELETE. */
  readonly prune: PruneParts;
  /** The demo ledger's tables and inserts (`gemstone-utils demo`). */
  readonly demoLedger: DemoLedgerParts;
  /** A `LeaderElectorGroup`'s tick and vacate statements, and the flags the group store asks (see `contract/group.ts`). */
  readonly group: GroupParts;
  /** How the library's statements and transactions reach the database (db/session.ts, db/transaction.ts). */
  readonly session: SessionParts;
  /** The single-namespace election's members that differ by database (see `contract/store.ts`). */
  readonly elect: ElectParts;
  /** Calls without a transaction to join run as one program each (SQLite); absent elsewhere. */
  readonly programs?: ProgramsPart;
  /** Schedule-run calls without a transaction to join run as one program each (SQLite); absent elsewhere. */
  readonly runPrograms?: RunProgramsPart;
  /** Lease changes pushed to a listening connection (PostgreSQL LISTEN/NOTIFY); absent elsewhere. */
  readonly notifications?: LeaseChangeNotifications;
  /**
   * Reads bounded at the server and cancelled there on demand (`db/bounded-read.ts`: the
   * dashboard's reads); absent where a read cannot wait without a bound (SQLite).
   */
  readonly cancellableReads?: CancellableReads;
  /** Guarded tables: the proof the fence records and the triggers that check it (PostgreSQL, MySQL/MariaDB); absent where not built (SQLite). */
  readonly guards?: GuardParts;
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

/**
 * The parts of the database named `name`, for the few public functions that take a dialect name
 * instead of a DataSource (the migrations' `schemaStatements(dialect, names)`).
 */
export function partsNamed(name: DialectName): DatabaseParts {
  for (const [dialect, parts] of registered) if (dialect.name === name) return parts;
  throw new Error(`gemstone-utils: no parts registered for the ${name} dialect (import 'gemstone-utils' first)`);
}

/** The parts of the database whose TypeORM `type` is `type`, if the library supports it. */
export function partsOfType(type: string): DatabaseParts | undefined {
  for (const parts of registered.values()) if (parts.setup.types.includes(type)) return parts;
  return undefined;
}
