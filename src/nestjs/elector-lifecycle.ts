import { BeforeApplicationShutdown, Injectable, OnApplicationBootstrap } from '@nestjs/common';
import { LeaderElector } from '../election/loop/elector';

/**
 * Runs the module's elector with the application: starts it when the application bootstraps
 * (after every `onModuleInit`, so the schema is ready and the first tick decides leadership before
 * `app.listen()`/`app.init()` resolves), and stops it — ending leadership and vacating the lease,
 * so another instance takes over at once — before the application shuts down, while the
 * DataSource is still open (`@nestjs/typeorm` closes it later, in `onApplicationShutdown`). With
 * `@LeaderCron` methods the stop begins earlier, beside their cancel in `onModuleDestroy` (see
 * `LeaderCronRegistrar`): this one then finds it done.
 */
@Injectable()
export class ElectorLifecycle implements OnApplicationBootstrap, BeforeApplicationShutdown {
  constructor(private readonly elector: LeaderElector) {}

  async onApplicationBootstrap(): Promise<void> {
    await this.elector.start();
  }

  async beforeApplicationShutdown(): Promise<void> {
    await this.elector.stop();
  }
}
