/**
 * A Nest application (platform-express) with ElectionModule's `dashboard` option, for
 * test/nestjs/dashboard.test.ts, with one `@LeaderCron` method: transpiled into .tmp/ and run as a child process (Nest 12 loads
 * through require(esm), which jest cannot do). It listens on a free port, reports its URL over
 * IPC, and on 'close' closes the application and reports how long that took.
 */
import 'reflect-metadata';
import type { IncomingMessage } from 'http';
import { Injectable, Module } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { TypeOrmModule } from '@nestjs/typeorm';
import { ElectionModule, LeaderCron } from 'gemstone-utils/nestjs';

const url = process.env.DATABASE_URL!;

/** A schedule of the module's elector, for the dashboard to show with its next slot: yearly, so it never runs here. */
@Injectable()
class Reports {
  @LeaderCron('0 3 1 1 *')
  yearly(): void {}
}

@Module({
  imports: [
    TypeOrmModule.forRoot({ type: 'better-sqlite3', database: url.replace(/^sqlite:/, ''), autoLoadEntities: true }),
    ElectionModule.forRoot({
      ns: 'nest-dashboard',
      expireSeconds: 10,
      logLeadership: false,
      dashboard: { path: '/ops/election', authorize: (request: IncomingMessage) => (request.headers['x-ops'] === 'yes' ? true : 'unauthenticated') },
    }),
  ],
  providers: [Reports],
})
class AppModule {}

async function main(): Promise<void> {
  const app = await NestFactory.create(AppModule, { logger: ['error', 'warn', 'log'] });
  await app.listen(0, '127.0.0.1');
  process.send!({ url: await app.getUrl() });
  process.on('message', (message) => {
    if (message !== 'close') return;
    const started = Date.now();
    void app.close().then(() => {
      process.send!({ closedInMs: Date.now() - started }, () => process.exit(0));
    });
  });
}

main().catch((error: unknown) => {
  console.error(error);
  process.exit(1);
});
