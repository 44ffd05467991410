// A plain web application with a leader-only job: a LeaderElector beside a Fastify server, a
// /health route for the orchestrator's probe, and a SIGTERM shutdown that hands the lease over at
// once (the next replica leads without waiting for the lease to run out) before the server closes.
// Compiled by test/docs/snippet-projects.test.ts. Run (after `npm run build`, with fastify installed):
//   DATABASE_URL=postgres://user:password@host:5432/app PORT=3000 npx tsx examples/fastify.ts
import 'reflect-metadata';
import Fastify from 'fastify';
import { initDb, LeaderElector, type Lease } from 'gemstone-utils';

const databaseUrl = process.env['DATABASE_URL'] ?? '';
if (databaseUrl.trim() === '') throw new Error('DATABASE_URL is not set: export DATABASE_URL=postgres://user:password@host:5432/app');
const port = Number(process.env['PORT'] ?? 3000);

async function main(): Promise<void> {
  const dataSource = await initDb(databaseUrl);
  let job: NodeJS.Timeout | undefined;
  const elector = new LeaderElector({
    dataSource,
    ns: 'nightly-cleanup',
    expireSeconds: 30,
    onStartedLeading: (lease: Lease) => {
      job = setInterval(() => {
        if (!lease.signal.aborted) console.log(`cleaning up as leader, term ${lease.term}`);
      }, 10_000);
    },
    onStoppedLeading: () => clearInterval(job),       // awaited by stop(): finish the work here
  });
  elector.on('error', (error: Error) => console.warn(error.message));

  const app = Fastify();
  // 503 when the elector cannot reach its database for longer than a lease (or has stopped).
  app.get('/health', async (_request, reply) => {
    const health = elector.health();
    return reply.code(health.ok ? 200 : 503).send({ ok: health.ok, role: health.role });
  });

  await elector.start();
  await app.listen({ port, host: '0.0.0.0' });

  let stopping = false;
  const shutdown = async (signal: string): Promise<void> => {
    if (stopping) return;
    stopping = true;
    console.log(`${signal}: handing over, then closing`);
    await elector.stop();                             // vacates the lease: another replica leads at once
    await app.close();
    await dataSource.destroy();
  };
  for (const signal of ['SIGTERM', 'SIGINT'] as const) {
    process.once(signal, () => {
      shutdown(signal).then(
        () => process.exit(0),
        (error: unknown) => {
          console.error(String(error));
          process.exit(1);
        },
      );
    });
  }
}

main().catch((error: unknown) => {
  console.error(String(error));                       // e.g. DatabaseAuthenticationError: postgres://app:***@…
  process.exit(1);
});
