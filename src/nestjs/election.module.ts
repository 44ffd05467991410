import { DynamicModule, Logger, Module, Provider } from '@nestjs/common';
import { DiscoveryModule } from '@nestjs/core';
import { getDataSourceToken, TypeOrmModule } from '@nestjs/typeorm';
import type { DataSource } from 'typeorm';
import { initDb } from '../db/init-db';
import { GemstoneDB } from '../db/registry';
import { ValidationError } from '../errors';
import { ElectionService, LeaderElector } from '../election';
import type { ElectorLogger } from '../election/loop/elector-options';
import { ElectionHealthIndicator } from './health.indicator';
import { ElectorLifecycle } from './elector-lifecycle';
import { checkDashboardOption, ElectionDashboardMount } from './dashboard';
import { LeaderCronRegistrar } from './leader-cron.registrar';
import { logLeadership } from './leadership-log';
import {
  BINDING_KEYS,
  DEFAULT_CONNECTION_NAME,
  DEFAULT_IS_GLOBAL,
  DEFAULT_LOG_LEADERSHIP,
  ELECTION_DATA_SOURCE,
  ELECTION_MODULE_OPTIONS,
  ElectionModuleAsyncOptions,
  ElectionModuleBinding,
  ElectionModuleOptions,
  ElectionModuleRootOptions,
} from './options';

function checkObject(value: unknown, parameter: string): asserts value is object {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) throw new ValidationError(parameter, 'must be an object');
}

function checkBinding(binding: ElectionModuleBinding): { connectionName: string; isGlobal: boolean } {
  const { connectionName = DEFAULT_CONNECTION_NAME, isGlobal = DEFAULT_IS_GLOBAL } = binding;
  if (typeof connectionName !== 'string' || connectionName === '') {
    throw new ValidationError('options.connectionName', 'must be the non-empty `name` of a TypeOrmModule.forRoot connection');
  }
  if (typeof isGlobal !== 'boolean') throw new ValidationError('options.isGlobal', 'must be a boolean');
  return { connectionName, isGlobal };
}

/** Elector options the module sets itself. */
const MODULE_OWNED: Readonly<Record<string, string>> = {
  dataSource: 'is the module\'s connection: choose it with `connectionName`',
  handleSignals: 'is not for Nest applications: call `app.enableShutdownHooks()`, so the hand-over runs before the DataSource closes',
};

function checkElectionOptions(value: object): ElectionModuleOptions {
  for (const [key, why] of Object.entries(MODULE_OWNED)) {
    if (key in value) throw new ValidationError(`options.${key}`, why);
  }
  const { logLeadership, dashboard } = value as ElectionModuleOptions;
  if (logLeadership !== undefined && typeof logLeadership !== 'boolean') throw new ValidationError('options.logLeadership', 'must be a boolean');
  checkDashboardOption(dashboard);
  return value as ElectionModuleOptions;
}

/** The factory's result: the binding is fixed at declaration, so a factory may not return it. */
function checkFactoryOptions(value: unknown): ElectionModuleOptions {
  if (value === undefined) return {};
  checkObject(value, 'options (returned by useFactory)');
  for (const key of BINDING_KEYS) {
    if (key in value) {
      throw new ValidationError(`options.${key}`, 'is fixed when the module is declared: pass it to forRootAsync itself, not from useFactory');
    }
  }
  return checkElectionOptions(value);
}

/** Elector errors nobody listens for go to Nest's logger, with the stack. */
const nestLogger = (): ElectorLogger => {
  const logger = new Logger('ElectionModule');
  return { error: (message, error) => logger.error(message, error instanceof Error ? error.stack : undefined) };
};

function coreProviders(connectionName: string): Provider[] {
  return [
    {
      provide: ELECTION_DATA_SOURCE,
      // A factory provider resolves before any lifecycle hook of the application runs, and every
      // election provider depends on this one: nothing can touch the tables before they exist.
      useFactory: (dataSource: DataSource, options: ElectionModuleOptions) =>
        initDb(dataSource, options.createTables === undefined ? {} : { createTables: options.createTables }),
      inject: [getDataSourceToken(connectionName), ELECTION_MODULE_OPTIONS],
    },
    {
      provide: ElectionService,
      useFactory: (dataSource: DataSource, options: ElectionModuleOptions) =>
        new ElectionService(dataSource, {
          ...(options.expireSeconds === undefined ? {} : { expireSeconds: options.expireSeconds }),
          ...(options.sqliteWaitMs === undefined ? {} : { sqliteWaitMs: options.sqliteWaitMs }),
        }),
      inject: [ELECTION_DATA_SOURCE, ELECTION_MODULE_OPTIONS],
    },
    {
      provide: LeaderElector,
      useFactory: (dataSource: DataSource, options: ElectionModuleOptions) => {
        const {
          createTables: _createTables,
          sqliteWaitMs: _sqliteWaitMs,
          logLeadership: log = DEFAULT_LOG_LEADERSHIP,
          dashboard: _dashboard,
          ...electorOptions
        } = options;
        const elector = new LeaderElector({ logger: nestLogger(), ...electorOptions, dataSource });
        if (log) logLeadership(elector);
        return elector;
      },
      inject: [ELECTION_DATA_SOURCE, ELECTION_MODULE_OPTIONS],
    },
    ElectorLifecycle,
    ElectionHealthIndicator,
    ElectionDashboardMount,
    LeaderCronRegistrar,
  ];
}

const EXPORTS = [ElectionService, LeaderElector, ElectionHealthIndicator, ELECTION_DATA_SOURCE];

/**
 * Leader election on the application's `@nestjs/typeorm` DataSource. Provides `ElectionService`,
 * a `LeaderElector` that starts when the application bootstraps and hands over when it shuts down
 * (`app.close()`, or a signal with `app.enableShutdownHooks()`), and `ElectionHealthIndicator`.
 * Registers the election entities with `TypeOrmModule.forFeature`, so connections with
 * `autoLoadEntities: true` get them; others list `...GemstoneDB.entities`. Runs `initDb` on the
 * DataSource before any application hook can use it. Runs the application's `@LeaderCron`
 * methods as schedules of its elector. One per application.
 */
@Module({})
export class ElectionModule {
  /** Declares the module with fixed options. */
  static forRoot(options: ElectionModuleRootOptions = {}): DynamicModule {
    checkObject(options, 'options');
    const { connectionName: _name, isGlobal: _global, ...electionOptions } = options;
    checkElectionOptions(electionOptions);
    return ElectionModule.declare(options, { provide: ELECTION_MODULE_OPTIONS, useValue: electionOptions }, []);
  }

  /** Declares the module with options from a factory (e.g. one that reads a `ConfigService`). */
  static forRootAsync(options: ElectionModuleAsyncOptions): DynamicModule {
    checkObject(options, 'options');
    if (typeof options.useFactory !== 'function') throw new ValidationError('options.useFactory', 'must be a function returning the options');
    const provider: Provider = {
      provide: ELECTION_MODULE_OPTIONS,
      useFactory: async (...args: unknown[]) => checkFactoryOptions(await options.useFactory(...args)),
      inject: [...(options.inject ?? [])],
    };
    return ElectionModule.declare(options, provider, options.imports ?? []);
  }

  private static declare(binding: ElectionModuleBinding, optionsProvider: Provider, imports: NonNullable<DynamicModule['imports']>): DynamicModule {
    const { connectionName, isGlobal } = checkBinding(binding);
    return {
      module: ElectionModule,
      global: isGlobal,
      imports: [DiscoveryModule, TypeOrmModule.forFeature([...GemstoneDB.entities] as Parameters<typeof TypeOrmModule.forFeature>[0], connectionName), ...imports],
      providers: [optionsProvider, ...coreProviders(connectionName)],
      exports: EXPORTS,
    };
  }
}
