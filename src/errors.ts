/**
 * Every error this package throws on purpose extends {@link GemstoneError}, so callers can tell
 * "the library refused" from "the database failed" (database errors are surfaced as they are).
 */
export class GemstoneError extends Error {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = new.target.name;
  }
}

/** A bad argument. Nothing was written: validation runs before any statement. */
export class ValidationError extends GemstoneError {
  /** The parameter that was rejected, e.g. `"candidateId"` or `"options.ns"`. */
  readonly parameter: string;

  constructor(parameter: string, problem: string, options?: { cause?: unknown }) {
    super(`${parameter} ${problem}`, options);
    this.parameter = parameter;
  }
}

/**
 * Thrown by `assertLeader` when the caller does not hold the unexpired lease (or holds it under
 * another term). Leader-only writes in that transaction must not be committed.
 */
export class NotLeaderError extends GemstoneError {
  readonly ns: string;
  readonly candidateId: string;
  /** The current unexpired leader, or null when the namespace has no live leader. */
  readonly leaderId: string | null;
  /** The leader row's current term, or null when the namespace has no leader row yet. */
  readonly term: number | null;

  constructor(fields: { ns: string; candidateId: string; leaderId: string | null; term: number | null; expectedTerm?: number }) {
    const held =
      fields.leaderId === null
        ? 'no candidate holds an unexpired lease'
        : fields.leaderId === fields.candidateId
          ? `it holds term ${fields.term}, not the expected term ${fields.expectedTerm}`
          : `${fields.leaderId} holds the lease (term ${fields.term})`;
    super(
      `candidate ${fields.candidateId} is not the leader of namespace ${JSON.stringify(fields.ns)}: ${held}. ` +
        'Roll back the leader-only work of this transaction.',
    );
    this.ns = fields.ns;
    this.candidateId = fields.candidateId;
    this.leaderId = fields.leaderId;
    this.term = fields.term;
  }
}

/** The shared default DataSource was asked for before `initDb` set it. */
export class NotInitializedError extends GemstoneError {
  constructor() {
    super(
      'gemstone-utils has no default DataSource yet: call `await initDb(dataSource)` (or `initDb()` for ' +
        'GEMSTONE_DB_URL / the embedded SQLite file) at startup, or pass a DataSource to the ElectionService constructor.',
    );
  }
}

/**
 * An initialized DataSource does not know the registered entities. TypeORM builds entity metadata
 * once, in `initialize()`, so they must be listed before that.
 */
export class EntitiesNotRegisteredError extends GemstoneError {
  constructor(missing: readonly string[]) {
    super(
      `the DataSource was initialized without the gemstone-utils entities (${missing.join(', ')}). ` +
        'Either call `await initDb(dataSource)` before `dataSource.initialize()` (initDb initializes it), ' +
        'or add `...GemstoneDB.entities` to the `entities` option of the DataSource.',
    );
  }
}

/** A database that this package does not support (the message names the supported ones). */
export class UnsupportedDatabaseError extends GemstoneError {
  constructor(type: string) {
    super(
      `database type ${JSON.stringify(type)} is not supported by gemstone-utils; use postgres, mysql, mariadb, ` +
        'better-sqlite3 or sqlite (TypeORM 0.3 only).',
    );
  }
}
