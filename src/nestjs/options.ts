import type { InjectionToken, ModuleMetadata, OptionalFactoryDependency } from '@nestjs/common';
import type { DashboardOptions } from '../dashboard/options';
import type { LeaderElectorOptions } from '../election/loop/elector-options';

/** The `@nestjs/typeorm` connection the module uses unless told otherwise: `"default"`. */
export const DEFAULT_CONNECTION_NAME = 'default';
/** Default of {@link ElectionModuleRootOptions.isGlobal}: `true`, so any module can inject the election providers. */
export const DEFAULT_IS_GLOBAL = true;

/**
 * Default of {@link ElectionModuleOptions.logLeadership}: `true`, so an application's log says
 * when it starts and stops leading and who leads, as it says which routes it mapped.
 */
export const DEFAULT_LOG_LEADERSHIP = true;

/** Where {@link ElectionModuleOptions.dashboard} is served unless its `path` says otherwise: `/election`. */
export const DEFAULT_DASHBOARD_PATH = '/election';

/** The module's dashboard: `createDashboard` options on the module's DataSource, plus where to serve it. */
export interface ElectionDashboardOptions extends Omit<DashboardOptions, 'dataSource' | 'basePath'> {
  /**
   * The path on the application's HTTP server, e.g. `"/ops/election"`. Mounted on the HTTP
   * adapter itself: Nest's global prefix, guards and interceptors do not apply (use `authorize`).
   * Default {@link DEFAULT_DASHBOARD_PATH}.
   */
  readonly path?: string;
}

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
  /**
   * Log leadership changes through Nest's `Logger` (context `ElectionModule`), with the
   * namespace, candidate, term and reason: starting to lead and a hand-over or stop at `log`
   * level, a leadership lost or run out (`lost`, `lease-expired-locally`) at `warn`, and another
   * leader observed (or none) at `log`. Default {@link DEFAULT_LOG_LEADERSHIP} (`true`).
   */
  readonly logLeadership?: boolean;
  /**
   * Serve the read-only dashboard on the application's HTTP server: `true` at
   * {@link DEFAULT_DASHBOARD_PATH}, or its options (`path`, `authorize`, …). Default: off.
   * Anyone who reaches the path sees every namespace and candidate metadata: give `authorize`.
   */
  readonly dashboard?: boolean | ElectionDashboardOptions;
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
