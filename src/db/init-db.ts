import { DataSource, DataSourceOptions } from 'typeorm';
import { checkNaming } from './naming';
import { EntitiesNotRegisteredError, UnsupportedDatabaseError, ValidationError, type DatabaseNotFoundError } from '../errors';
import { contextOf } from './context';
import { replaceDefault } from './default-data-source';
import { urlFromEnvironment, missingTargetProblem } from './env-url';
import { explained } from './explain-error';
import { installPluginTables } from './plugin-tables';
import { entityName, GemstoneDB } from './registry';
import { backoff, sleep } from './session';
import { partsOf, partsOfType } from '../databases/parts';
import { DEFAULT_DB_URL, optionsFromUrl } from './url';
import { hasMethods } from './shape';

/** Default of {@link InitDbOptions.createTables}. */
export const DEFAULT_CREATE_TABLES = true;

/** The options of {@link initDb}. */
export interface InitDbOptions {
  /**
   * Create the registered tables and indexes if they are missing — only those; the application's
   * tables are never touched. Set `false` for roles without DDL rights (then use the migrations).
   * Default {@link DEFAULT_CREATE_TABLES} (`true`).
   */
  readonly createTables?: boolean;
}

/** What `initDb` accepts: a DataSource (initialized or not), its options, or a database URL. */
export type InitDbTarget = DataSource | DataSourceOptions | string;

const initializations = new WeakMap<DataSource, Promise<void>>();

function isDataSource(value: unknown): value is DataSource {
  return hasMethods(value, ['initialize', 'createQueryRunner']);
}

/** The `entities` option as a list (TypeORM also accepts an object of name → entity). */
function entityList(entities: DataSourceOptions['entities']): unknown[] {
  if (!entities) return [];
  return Array.isArray(entities) ? [...entities] : Object.values(entities);
}

function withRegisteredEntities(entities: DataSourceOptions['entities']): unknown[] {
  const list = entityList(entities);
  return [...list, ...GemstoneDB.entities.filter((entity) => !list.includes(entity))];
}

/** Whether a database folder covers the DataSource `type` (each lists its types: `setup.types`). */
function supported(type: string): boolean {
  return partsOfType(type) !== undefined;
}

/** An unsupported database is a bad `target`; checked before TypeORM looks for its driver package. */
function unsupported(type: string): ValidationError {
  const cause = new UnsupportedDatabaseError(type);
  return new ValidationError('target', `uses a database gemstone-utils does not support: ${cause.message}`, { cause });
}

/** The target of `initDb()` called without an argument: the environment's URL, else the embedded file. */
function defaultTarget(): string {
  return urlFromEnvironment()?.url ?? DEFAULT_DB_URL;
}

function toDataSource(target: InitDbTarget): DataSource {
  if (isDataSource(target)) return target;
  const options = typeof target === 'string' ? optionsFromUrl(target) : target;
  if (typeof options !== 'object' || options === null || typeof (options as { type?: unknown }).type !== 'string') {
    throw new ValidationError('target', 'must be a DataSource, DataSourceOptions with a `type`, or a database URL');
  }
  if (!supported(options.type)) throw unsupported(options.type);
  try {
    return new DataSource({ ...options, entities: withRegisteredEntities(options.entities) } as DataSourceOptions);
  } catch (error) {
    // A driver this TypeORM line lacks (TypeORM 1.x has no sqlite3 driver): a bad target here.
    if ((error as { name?: unknown })?.name !== 'MissingDriverError') throw error;
    const type = String(options.type);
    const hint = partsOfType(type)?.setup.missingDriverHint(type) ?? '';
    throw new ValidationError('target', `uses database type ${JSON.stringify(options.type)}, which the installed TypeORM does not support${hint}`, {
      cause: error,
    });
  }
}

/** How long initDb retries an `initialize()` that found the database busy (a SQLite file locked). */
const BUSY_INITIALIZE_RETRY_MS = 15_000;

/**
 * Connects, retrying for a while when the database says `initialize()` failed only because
 * another process held it (see each database's `setup.busyOnInitialize`).
 */
async function initializeRetryingBusy(dataSource: DataSource): Promise<void> {
  const { setup } = partsOf(contextOf(dataSource));
  const deadline = Date.now() + BUSY_INITIALIZE_RETRY_MS;
  for (let attempt = 0; ; attempt++) {
    try {
      await dataSource.initialize();
      return;
    } catch (error) {
      const busy = setup.busyOnInitialize(error);
      if (!busy || dataSource.isInitialized || Date.now() > deadline) throw error;
      await sleep(backoff(attempt));
    }
  }
}

async function initialize(dataSource: DataSource): Promise<void> {
  if (dataSource.isInitialized) {
    const missing = GemstoneDB.entities.filter((entity) => !dataSource.hasMetadata(entity));
    if (missing.length > 0) throw new EntitiesNotRegisteredError(missing.map(entityName));
    return;
  }
  // Concurrent initDb calls on one DataSource share its initialization instead of racing it.
  let pending = initializations.get(dataSource);
  if (!pending) {
    dataSource.setOptions({ entities: withRegisteredEntities(dataSource.options.entities) } as Partial<DataSourceOptions>);
    pending = initializeRetryingBusy(dataSource);
    initializations.set(dataSource, pending);
    pending.catch(() => initializations.delete(dataSource));
  }
  await pending;
}

/**
 * Connects the shared base to a database and makes it the default (`getDataSource()`).
 *
 * - `target`: a DataSource (its `entities` get the registered ones appended before it is
 *   initialized), DataSourceOptions, or a URL. Given but undefined, null or blank (an unset
 *   `process.env.DATABASE_URL`) it is a {@link ValidationError}: never a silent fallback.
 *   Only a call without any argument uses a default: `GEMSTONE_DB_URL`, else `DATABASE_URL`
 *   (see `DATABASE_URL_VARIABLES`), else {@link DEFAULT_DB_URL} (an embedded SQLite file in the
 *   working directory, which elects among the processes of one machine only).
 * - Server unreachable, login refused or database missing: a `DatabaseSetupError` subclass
 *   (`DatabaseUnreachableError`, `DatabaseAuthenticationError`, `DatabaseNotFoundError`) naming
 *   the target (password redacted) and the fix.
 * - Makes the DataSource the default (`getDataSource()`); replacing a different default that is
 *   still initialized emits a process warning (`GEMSTONE_DEFAULT_REPLACED`) naming both.
 * - An already initialized DataSource must list the registered entities
 *   (`...GemstoneDB.entities`), else {@link EntitiesNotRegisteredError}.
 * - A database the URL or options name that does not exist on its server is a
 *   {@link DatabaseNotFoundError} (it creates tables, never the database).
 * - Several processes may call it on the same fresh database at once.
 */
export async function initDb(target?: InitDbTarget, options: InitDbOptions = {}): Promise<DataSource> {
  // Only a call without any argument means "the default": `initDb(process.env.DATABASE_URL)` with
  // the variable unset must not quietly elect on a file of its own in every container.
  const given = arguments.length > 0;
  if (typeof options !== 'object' || options === null || Array.isArray(options)) throw new ValidationError('options', 'must be an object');
  for (const key of Object.keys(options)) {
    // A typo such as `createTable: false` must not silently run DDL.
    if (key !== 'createTables') throw new ValidationError(`options.${key}`, 'is not a known option (known: createTables)');
  }
  const { createTables = DEFAULT_CREATE_TABLES } = options;
  if (typeof createTables !== 'boolean') throw new ValidationError('options.createTables', 'must be a boolean');
  if (given && (target === undefined || target === null || (typeof target === 'string' && target.trim() === ''))) {
    throw new ValidationError('target', missingTargetProblem(target));
  }
  if (typeof target !== 'string' && (typeof target !== 'object' || target === null) && given) {
    throw new ValidationError('target', 'must be a DataSource, DataSourceOptions or a database URL string');
  }

  const dataSource = toDataSource(given ? target! : defaultTarget());
  await explained(dataSource, () => connectAndInstall(dataSource, createTables));
  replaceDefault(dataSource);
  return dataSource;
}

/** Connects `dataSource`, checks its naming and creates the registered tables if asked. */
async function connectAndInstall(dataSource: DataSource, createTables: boolean): Promise<void> {
  if (!supported(String(dataSource.options.type))) throw unsupported(String(dataSource.options.type));
  contextOf(dataSource);
  const wasInitialized = dataSource.isInitialized;
  await initialize(dataSource);
  try {
    checkNaming(dataSource);
  } catch (error) {
    // A refused configuration must not leave behind the connections initDb opened.
    if (!wasInitialized) await dataSource.destroy().catch(() => undefined);
    throw error;
  }
  await partsOf(contextOf(dataSource)).setup.afterInitialize(dataSource);
  if (createTables) {
    for (const installer of GemstoneDB.installers) await installer.install(dataSource);
    await installPluginTables(dataSource);
  }
}
