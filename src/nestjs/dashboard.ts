import { Inject, Injectable, Logger, OnModuleDestroy, OnModuleInit, Optional } from '@nestjs/common';
import { HttpAdapterHost } from '@nestjs/core';
import type { DataSource } from 'typeorm';
import { createDashboard, type Dashboard } from '../dashboard/handler';
import { LeaderElector } from '../election/loop/elector';
import { ValidationError } from '../errors';
import { DEFAULT_DASHBOARD_PATH, ELECTION_DATA_SOURCE, ELECTION_MODULE_OPTIONS, type ElectionDashboardOptions, type ElectionModuleOptions } from './options';

/** The module's `dashboard` option, checked: undefined when off. */
export function checkDashboardOption(value: unknown): (ElectionDashboardOptions & { path: string }) | undefined {
  if (value === undefined || value === false) return undefined;
  if (value === true) return { path: DEFAULT_DASHBOARD_PATH };
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    throw new ValidationError('options.dashboard', 'must be true, false or an object of dashboard options ({ path, authorize, … })');
  }
  const { path = DEFAULT_DASHBOARD_PATH } = value as ElectionDashboardOptions;
  if (typeof path !== 'string' || !/^\/[A-Za-z0-9._~!$&'()*+,;=:@%/-]*$/.test(path) || path.includes('//')) {
    throw new ValidationError('options.dashboard.path', `must be a URL path such as "/election" (got ${JSON.stringify(path)})`);
  }
  for (const key of ['dataSource', 'basePath']) {
    if (key in value) throw new ValidationError(`options.dashboard.${key}`, key === 'dataSource' ? "is the module's connection" : 'is `path` here');
  }
  return { ...(value as ElectionDashboardOptions), path: path.replace(/\/+$/, '') || '/' };
}

/**
 * Mounts the dashboard on the application's HTTP server (the adapter's `use(path, handler)`:
 * Express, or Fastify through the middleware support Nest's adapter registers) when the module's
 * `dashboard` option asks for it — with the module's elector among its `electors`, so that the
 * `@LeaderCron` schedules show their next slot — and closes it — its live streams end — before the DataSource
 * closes and before the HTTP server waits for its connections.
 */
@Injectable()
export class ElectionDashboardMount implements OnModuleInit, OnModuleDestroy {
  #dashboard: Dashboard | undefined;
  readonly #logger = new Logger('ElectionModule');

  constructor(
    @Inject(ELECTION_MODULE_OPTIONS) private readonly options: ElectionModuleOptions,
    @Inject(ELECTION_DATA_SOURCE) private readonly dataSource: DataSource,
    private readonly elector: LeaderElector,
    @Optional() private readonly adapterHost?: HttpAdapterHost,
  ) {}

  onModuleInit(): void {
    const config = checkDashboardOption(this.options.dashboard);
    if (!config) return;
    const adapter = this.adapterHost?.httpAdapter;
    if (!adapter) {
      this.#logger.warn('dashboard: this application has no HTTP server (an application context): not mounted');
      return;
    }
    const { path, ...dashboardOptions } = config;
    // Anything but an array goes on as given: createDashboard refuses it naming the option.
    const extra = dashboardOptions.electors;
    const electors = Array.isArray(extra) ? [this.elector, ...extra] : (extra ?? [this.elector]);
    this.#dashboard = createDashboard({ ...dashboardOptions, electors, dataSource: this.dataSource });
    adapter.use(path, this.#dashboard);
    this.#logger.log(`dashboard mounted at ${path === '/' ? '' : path}/${config.authorize ? '' : ' (no authorize hook: anyone who reaches the application sees it)'}`);
  }

  async onModuleDestroy(): Promise<void> {
    await this.#dashboard?.close();
  }
}
