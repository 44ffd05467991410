import type { InjectionToken, ModuleMetadata, OptionalFactoryDependency } from '@nestjs/common';
import type { LeaderElectorOptions } from '../election/elector-options';

/** The `@nestjs/typeorm` connection the module uses unless told otherwise: `"default"`. */
export const DEFAULT_CONNECTION_NAME = 'default';
/** Default of {@link ElectionModuleRootOptions.isGlobal}: `true`, so any module can inject the election providers. */
export const DEFAULT_IS_GLOBAL = true;

/** Injection token of the resolved {@link ElectionModuleOptions}. */
export const ELECTION_MODULE_OPTIONS: InjectionToken = Symbol('gemstone-utils:ElectionModuleOptions');
/**
 * Injection token of the module's DataSource once `initDb` has run on it (entities checked,
 * tables created): inject this rather than the TypeORM token to depend on a ready schema.
 */
export const ELECTION_DATA_SOURCE: InjectionToken = Symbol('gemstone-utils:ElectionDataSource');

/**
 * What the module passes to `initDb` and to its `LeaderElector`. Every elector option is passed
 * through with the elector's defaults (`ns` `"default"`, a random `candidateId`, `expireSeconds`
 * 60, `intervalMs` a third of the lease, …), except `dataSource` (the module's connection) and
 * `handleSignals` (Nest's `app.enableShutdownHooks()` does that).
 */
export interface ElectionModuleOptions extends Readonly<Omit<LeaderElectorOptions, 'dataSource' | 'handleSignals'>> {
  /**
   * `initDb`'s `createTables`: create the election tables if missing. Default `true`; `false` for
   * database roles without DDL rights (then run the migrations).
   */
  readonly createTables?: boolean;
  /**
   * The `ElectionService`'s `sqliteWaitMs` (SQLite only): how long a call without `session` waits
   * for a transaction held open on the shared connection. Default `DEFAULT_SQLITE_WAIT_MS` (5000).
   */
  readonly sqliteWaitMs?: number;
}

/** Where the module is registered and which connection it uses; fixed when the module is declared. */
export interface ElectionModuleBinding {
  /**
   * The `name` of the `@nestjs/typeorm` connection (`TypeOrmModule.forRoot({ name })`) to elect
   * on. Default {@link DEFAULT_CONNECTION_NAME} (`"default"`).
   */
  readonly connectionName?: string;
  /** Register the providers globally. Default {@link DEFAULT_IS_GLOBAL} (`true`). */
  readonly isGlobal?: boolean;
}

/** `ElectionModule.forRoot(options)`. */
export interface ElectionModuleRootOptions extends ElectionModuleOptions, ElectionModuleBinding {}

/** `ElectionModule.forRootAsync(options)`: the options come from a factory with injected dependencies. */
export interface ElectionModuleAsyncOptions extends ElectionModuleBinding {
  /** Modules that export the factory's dependencies (e.g. a `ConfigModule`). Default none. */
  readonly imports?: ModuleMetadata['imports'];
  /** Tokens injected into `useFactory`, in order. Default none. */
  readonly inject?: ReadonlyArray<InjectionToken | OptionalFactoryDependency>;
  /** Returns the options; may be async. */
  readonly useFactory: (...args: any[]) => ElectionModuleOptions | Promise<ElectionModuleOptions>;
}

/** Keys that belong to {@link ElectionModuleBinding} and may not come out of `useFactory`. */
export const BINDING_KEYS: readonly string[] = ['connectionName', 'isGlobal'];
