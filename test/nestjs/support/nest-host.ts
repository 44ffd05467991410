/**
 * A process hosting real Nest applications for the tests of `gemstone-utils/nestjs` (Nest 12 is
 * ESM-only: it loads through Node's require(esm), which jest's module system cannot do). The
 * tests transpile this file into .tmp/ inside the repository and fork it there, so
 * `gemstone-utils/nestjs` resolves through the package's `exports` map to dist/, as in a user's
 * application. Several applications run side by side in this one process, each with its own
 * DataSource, elector and scheduled jobs.
 *
 * Protocol (IPC): the parent sends `{ id, cmd, ... }`; the host answers `{ id, reply }` or
 * `{ id, error }`, and reports everything that happens as `{ event, app, t, ... }`.
 */
import 'reflect-metadata';
import {
  BeforeApplicationShutdown,
  DynamicModule,
  Inject,
  Injectable,
  INestApplicationContext,
  LoggerService,
  Module,
  OnApplicationBootstrap,
  OnModuleInit,
  Scope,
} from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { getDataSourceToken, TypeOrmModule, TypeOrmModuleOptions } from '@nestjs/typeorm';
import { Cron, Interval, ScheduleModule } from '@nestjs/schedule';
import { HealthCheckService, TerminusModule } from '@nestjs/terminus';
import { DataSource, DataSourceOptions } from 'typeorm';
import {
  ElectionHealthIndicator,
  ElectionModule,
  ElectionService,
  GemstoneDB,
  LeaderCron,
  LeaderElector,
  LeaderOnly,
  type Lease,
  type ScheduledRun,
} from 'gemstone-utils/nestjs';

/** One application of the host. */
export interface AppSpec {
  readonly name: string;
  readonly ns: string;
  readonly expireSeconds: number;
  readonly intervalMs: number;
  /** The database of the default connection. */
  readonly db: DataSourceOptions;
  /** With a named connection `election` on this database, the module elects there. */
  readonly electionDb?: DataSourceOptions;
  /** `auto`: `autoLoadEntities: true`; `explicit`: `entities: [...GemstoneDB.entities]`; `none`: neither (a misconfiguration). */
  readonly entities: 'auto' | 'explicit' | 'none';
  /** `static`: `ElectionModule.forRoot`; `async`: `forRootAsync` with a factory reading a config service. */
  readonly config: 'static' | 'async';
  /** `app.enableShutdownHooks()`: SIGTERM closes the application (and ends the process). */
  readonly shutdownHooks?: boolean;
  /** The module's `logLeadership` option; absent: the module's default. */
  readonly logLeadership?: boolean;
  /** The module's `stopTimeoutMs` option; absent: the elector's default. */
  readonly stopTimeoutMs?: number;
  /**
   * `false`: the application starts no elector of its own beside the module's (whose stop, on
   * SQLite, would wait for a transaction a job holds open: not the module's shutdown). Default true.
   */
  readonly ownElector?: boolean;
  /**
   * With a `@LeaderCron({ everyMs: 1000 })` provider: each run is reported; with `jobMs`, the job
   * lasts that long, and when its signal aborts it still takes `cleanupMs` to end. `ignoreSignal`:
   * it lasts `jobMs` whatever its signal does; `inTransaction`: inside `run.transaction`, which it
   * holds open meanwhile. `ledger`: a table (slot_ms, term, candidate_id) the job inserts its row
   * into inside `run.transaction`, first thing (then `jobMs` with the transaction open); reported
   * `cron-ledger` once committed.
   */
  readonly leaderCron?: {
    readonly jobMs?: number;
    readonly cleanupMs?: number;
    readonly ignoreSignal?: boolean;
    readonly inTransaction?: boolean;
    readonly ledger?: string;
    readonly scope?: 'request' | 'transient';
  };
}

export type HostCommand =
  | { cmd: 'start'; spec: AppSpec }
  | { cmd: 'close'; app: string }
  | { cmd: 'health'; app: string }
  | { cmd: 'state'; app: string }
  | { cmd: 'stop-elector'; app: string }
  | { cmd: 'unmanaged-job' }
  | { cmd: 'declare'; options: Record<string, unknown> }
  | { cmd: 'declare-cron'; args: unknown[] }
  | { cmd: 'exit' };

export interface HostEvent {
  readonly event: string;
  readonly app?: string;
  readonly t: number;
  readonly [field: string]: unknown;
}

const send = (event: string, fields: Record<string, unknown> = {}): void => {
  process.send?.({ event, t: Date.now(), ...fields });
};

const line03 = process.env['GEMSTONE_TYPEORM_LINE'] === '0.3';
const APP_NAME = Symbol('app name');
const APP_SPEC = Symbol('app spec');
const APP_DATA_SOURCE = Symbol("the election connection's TypeORM DataSource");

function isLease(value: unknown): value is Lease {
  return typeof value === 'object' && value !== null && 'term' in value && 'signal' in value && 'candidateId' in value;
}

function reportJob(app: string, kind: string, args: unknown[]): void {
  const leaseIndex = args.findIndex(isLease);
  const lease = args[leaseIndex] as Lease | undefined;
  send('job', { app, kind, leaseIndex, argCount: args.length, term: lease?.term, candidateId: lease?.candidateId, aborted: lease?.signal.aborted });
}

/** Leader-only scheduled jobs, with the decorator on either side of the schedule's. */
@Injectable()
class Jobs {
  constructor(@Inject(APP_NAME) private readonly app: string) {}

  @LeaderOnly()
  @Interval(100)
  everyTenthOfASecond(...args: unknown[]): void {
    reportJob(this.app, 'interval', args);
  }

  @Cron('* * * * * *')
  @LeaderOnly()
  async everySecond(...args: unknown[]): Promise<void> {
    reportJob(this.app, 'cron', args);
  }
}

/** A `@LeaderCron` schedule: every second, on the leader, each slot once. */
@Injectable()
class CronJobs {
  constructor(
    @Inject(APP_NAME) private readonly app: string,
    @Inject(APP_SPEC) private readonly spec: AppSpec,
  ) {}

  @LeaderCron({ everyMs: 1000 }, { catchUp: 'all' })
  async everySecond(run: ScheduledRun): Promise<void> {
    const { app } = this;
    const fields = { app, bound: this instanceof CronJobs, ns: run.ns, name: run.name, slot: run.slot.toISOString(), attempt: run.attempt, term: run.lease.term };
    send('cron-run', fields);
    const { jobMs, cleanupMs = 0, ignoreSignal = false, inTransaction = false, ledger } = this.spec.leaderCron ?? {};
    if (ledger) return this.writeLedger(run, ledger, fields, jobMs ?? 0);
    if (!jobMs) return;
    const signal = run.lease.signal;
    const work = () =>
      new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, jobMs);
        if (ignoreSignal) return;
        signal.addEventListener('abort', () => {
          clearTimeout(timer);
          resolve();
        });
      });
    if (inTransaction) {
      try {
        await run.transaction(async () => {
          send('cron-run-transaction', fields);
          await work();
        });
      } catch (error) {
        send('cron-run-refused', { ...fields, error: (error as Error).name });
      }
    } else {
      await work();
    }
    // A job that needs a moment to stop cleanly once told to.
    if (signal.aborted) await new Promise((resolve) => setTimeout(resolve, cleanupMs));
    send('cron-run-end', { ...fields, aborted: signal.aborted });
  }

  /** The slot's ledger row and its `done`, in one transaction held open `jobMs` after the insert. */
  private async writeLedger(run: ScheduledRun, ledger: string, fields: Record<string, unknown>, jobMs: number): Promise<void> {
    const p = (i: number) => (this.spec.db.type === 'postgres' ? `$${i}` : '?');
    await run.transaction(async (manager) => {
      await manager.query(`INSERT INTO ${ledger} (slot_ms, term, candidate_id) VALUES (${p(1)}, ${p(2)}, ${p(3)})`, [run.slot.getTime(), run.lease.term, run.lease.candidateId]);
      send('cron-run-transaction', fields);
      await new Promise((resolve) => setTimeout(resolve, jobMs));
    });
    send('cron-ledger', fields);
  }
}

/**
 * What an application does in its own hooks: queries the election in `onModuleInit`, and starts
 * an elector of its own on the TypeORM DataSource in `onApplicationBootstrap` — the hand-wired
 * setup that fails its first tick on a fresh database unless the tables exist by then.
 */
@Injectable()
class BootstrapProbe implements OnModuleInit, OnApplicationBootstrap, BeforeApplicationShutdown {
  private own: LeaderElector | undefined;

  constructor(
    @Inject(APP_NAME) private readonly app: string,
    @Inject(APP_SPEC) private readonly spec: AppSpec,
    @Inject(APP_DATA_SOURCE) private readonly dataSource: DataSource,
    private readonly election: ElectionService,
    private readonly elector: LeaderElector,
  ) {}

  async onModuleInit(): Promise<void> {
    const { app, elector } = this;
    elector.on('error', (error) => send('elector-error', { app, message: error.message }));
    elector.on('elected', (lease) => send('elected', { app, term: lease.term, candidateId: lease.candidateId }));
    elector.on('demoted', (lease, reason) => send('demoted', { app, term: lease.term, reason }));
    elector.on('leader', (leaderId, term) => send('leader', { app, leaderId, term }));
    try {
      const leader = await this.election.getLeader({ ns: this.spec.ns });
      send('module-init-query', { app, ok: true, leader: leader?.leaderId ?? null });
    } catch (error) {
      send('module-init-query', { app, ok: false, message: (error as Error).message });
    }
  }

  async onApplicationBootstrap(): Promise<void> {
    const { app, spec } = this;
    // Subscribed after ElectionModule's own hook started the elector (its module is imported, so
    // its hooks run first): the first election has happened already.
    this.elector.on('elected', (lease) => send('late-elected', { app, term: lease.term }));
    this.elector.onLeadership((lease) => send('late-leadership', { app, term: lease.term, aborted: lease.signal.aborted }));
    if (spec.ownElector === false) return;
    this.own = new LeaderElector({ dataSource: this.dataSource, ns: `${spec.ns}-own`, expireSeconds: spec.expireSeconds, intervalMs: spec.intervalMs });
    this.own.on('error', (error) => send('own-elector-error', { app, message: error.message }));
    await this.own.start();
    send('own-started', { app, isLeader: this.own.isLeader });
  }

  async beforeApplicationShutdown(): Promise<void> {
    await this.own?.stop();
  }
}

const CONFIG_VALUES = Symbol('config values');

/** A stand-in for `@nestjs/config`'s ConfigService. */
@Injectable()
class ConfigService {
  constructor(@Inject(CONFIG_VALUES) private readonly values: Record<string, unknown>) {}
  get<T>(key: string): T {
    return this.values[key] as T;
  }
}

@Module({})
class ConfigModule {
  static forRoot(values: Record<string, unknown>): DynamicModule {
    return { module: ConfigModule, providers: [{ provide: CONFIG_VALUES, useValue: values }, ConfigService], exports: [ConfigService] };
  }
}

function typeOrm(db: DataSourceOptions, spec: AppSpec, name?: string): DynamicModule {
  const entities = spec.entities === 'auto' ? { autoLoadEntities: true } : { entities: spec.entities === 'explicit' ? [...GemstoneDB.entities] : [] };
  // TypeORM 0.3's sqlite3 driver switches a fresh file to WAL before it sets a busy timeout, so
  // DataSources opening it together may get SQLITE_BUSY from initialize(): @nestjs/typeorm's retry
  // (on by default, every 3 s) covers that; elsewhere a failed connection fails the test at once.
  const retry = String(db.type) === 'sqlite' ? { retryAttempts: 20, retryDelay: 100 } : { retryAttempts: 0 };
  const options = { ...db, ...entities, ...(name ? { name } : {}), ...retry } as TypeOrmModuleOptions;
  if (!line03) return TypeOrmModule.forRoot(options);
  // TypeORM 0.3 run: @nestjs/typeorm (ESM) imports the newest TypeORM; the DataSource comes from
  // the TypeORM this run selected, through @nestjs/typeorm's own dataSourceFactory option.
  return TypeOrmModule.forRootAsync({
    ...(name ? { name } : {}),
    useFactory: () => options,
    dataSourceFactory: async (resolved) => new DataSource(resolved as DataSourceOptions),
  });
}

function appModule(spec: AppSpec): DynamicModule {
  const connectionName = spec.electionDb ? 'election' : undefined;
  const electionOptions = {
    ns: spec.ns,
    expireSeconds: spec.expireSeconds,
    intervalMs: spec.intervalMs,
    ...(spec.logLeadership === undefined ? {} : { logLeadership: spec.logLeadership }),
    ...(spec.stopTimeoutMs === undefined ? {} : { stopTimeoutMs: spec.stopTimeoutMs }),
  };
  const election =
    spec.config === 'static'
      ? ElectionModule.forRoot({ ...electionOptions, ...(connectionName ? { connectionName } : {}) })
      : ElectionModule.forRootAsync({
          ...(connectionName ? { connectionName } : {}),
          imports: [ConfigModule.forRoot({ ELECTION_NS: spec.ns, ELECTION_EXPIRE_SECONDS: spec.expireSeconds, ELECTION_INTERVAL_MS: spec.intervalMs })],
          inject: [ConfigService],
          useFactory: (config: ConfigService) => ({
            ns: config.get<string>('ELECTION_NS'),
            expireSeconds: config.get<number>('ELECTION_EXPIRE_SECONDS'),
            intervalMs: config.get<number>('ELECTION_INTERVAL_MS'),
            ...(spec.logLeadership === undefined ? {} : { logLeadership: spec.logLeadership }),
            ...(spec.stopTimeoutMs === undefined ? {} : { stopTimeoutMs: spec.stopTimeoutMs }),
          }),
        });
  @Module({})
  class AppModule {}
  return {
    module: AppModule,
    imports: [
      // The application's own connection, plus the election's named one when asked for.
      typeOrm(spec.db, { ...spec, entities: spec.electionDb ? 'auto' : spec.entities }),
      ...(spec.electionDb ? [typeOrm(spec.electionDb, spec, 'election')] : []),
      ScheduleModule.forRoot(),
      TerminusModule,
      election,
    ],
    providers: [
      { provide: APP_NAME, useValue: spec.name },
      { provide: APP_SPEC, useValue: spec },
      { provide: APP_DATA_SOURCE, useExisting: getDataSourceToken(connectionName) },
      Jobs,
      BootstrapProbe,
      ...(spec.leaderCron
        ? [spec.leaderCron.scope ? { provide: CronJobs, useClass: CronJobs, scope: spec.leaderCron.scope === 'request' ? Scope.REQUEST : Scope.TRANSIENT } : CronJobs]
        : []),
    ],
  };
}

/**
 * Nest's warnings and errors (a failing job, an elector error without listener) reach the test,
 * and so do ElectionModule's own log lines (its leadership log).
 */
const logger: LoggerService = {
  log: (message: unknown, context?: unknown) => {
    if (context === 'ElectionModule') send('module-log', { message: String(message) });
  },
  debug: () => undefined,
  verbose: () => undefined,
  warn: (message: unknown) => send('nest-log', { level: 'warn', message: String(message) }),
  error: (message: unknown, ...rest: unknown[]) => send('nest-log', { level: 'error', message: String(message), rest: rest.map(String) }),
};

const apps = new Map<string, INestApplicationContext>();

function appNamed(name: string): INestApplicationContext {
  const app = apps.get(name);
  if (!app) throw new Error(`no application ${name}`);
  return app;
}

async function health(app: INestApplicationContext): Promise<unknown> {
  const indicator = app.get(ElectionHealthIndicator);
  try {
    return await app.get(HealthCheckService).check([() => indicator.isHealthy()]);
  } catch (error) {
    // terminus answers a failed check with a 503 ServiceUnavailableException carrying the result.
    const response = (error as { getResponse?: () => unknown }).getResponse?.();
    if (response === undefined) throw error;
    return response;
  }
}

async function handle(command: HostCommand): Promise<unknown> {
  switch (command.cmd) {
    case 'start': {
      const app = await NestFactory.createApplicationContext(appModule(command.spec), { logger, abortOnError: false });
      apps.set(command.spec.name, app);
      if (command.spec.shutdownHooks) app.enableShutdownHooks();
      const elector = app.get(LeaderElector);
      return { candidateId: elector.candidateId, ns: elector.ns, isLeader: elector.isLeader, intervalMs: elector.intervalMs };
    }
    case 'close': {
      const app = appNamed(command.app);
      apps.delete(command.app);
      const startedAt = Date.now();
      await app.close();
      return { startedAt, closedAt: Date.now() };
    }
    case 'health':
      return health(appNamed(command.app));
    case 'state': {
      const elector = appNamed(command.app).get(LeaderElector);
      return { isLeader: elector.isLeader, leaderId: elector.leaderId, term: elector.term, running: elector.running };
    }
    case 'stop-elector':
      await appNamed(command.app).get(LeaderElector).stop();
      return {};
    case 'unmanaged-job':
      // A @LeaderOnly method on an instance Nest did not create.
      try {
        await new Jobs('unmanaged').everySecond();
        return { error: null };
      } catch (error) {
        return { error: (error as Error).name, message: (error as Error).message };
      }
    case 'declare':
      // ElectionModule.forRoot's checks, at declaration time.
      try {
        ElectionModule.forRoot(command.options as never);
        return { error: null };
      } catch (error) {
        return { error: (error as Error).name, parameter: (error as { parameter?: string }).parameter };
      }
    case 'declare-cron':
      // @LeaderCron's checks, when a class is declared.
      try {
        class Declared {
          method(): void {}
        }
        const descriptor = Object.getOwnPropertyDescriptor(Declared.prototype, 'method')!;
        (LeaderCron as (...args: unknown[]) => MethodDecorator)(...command.args)(Declared.prototype, 'method', descriptor);
        return { error: null };
      } catch (error) {
        return { error: (error as Error).name, parameter: (error as { parameter?: string }).parameter, message: (error as Error).message };
      }
    case 'exit':
      for (const [name, app] of apps) {
        apps.delete(name);
        await app.close();
      }
      return {};
  }
}

process.on('message', (message: { id: number } & HostCommand) => {
  handle(message).then(
    (reply) => process.send?.({ id: message.id, reply }),
    (error: Error) => process.send?.({ id: message.id, error: { name: error.name, message: error.message, stack: error.stack } }),
  );
});
process.on('unhandledRejection', (reason) => send('unhandled-rejection', { message: String((reason as Error)?.stack ?? reason) }));
// The parent disconnects when it is done (or dies): nothing may outlive it.
process.on('disconnect', () => process.exit(0));
send('ready', { nest: (require('@nestjs/core/package.json') as { version: string }).version });
