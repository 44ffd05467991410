// A user's TypeScript file, type-checked by test/package/consumer.test.ts inside a scratch project
// that installed the packed tarball, under strict settings and every module resolution mode.
// It uses the entry points the way docs/api.md shows them.
import type { DataSource, EntityManager } from 'typeorm';
import { ElectionService, GemstoneDB, LeaderElector, type Lease, type LeaderInfo } from 'gemstone-utils';
import { initDb, withTransaction, type InitDbOptions } from 'gemstone-utils/db';
import { NotLeaderError, assertLeader, type ElectOutcome } from 'gemstone-utils/election';
import { createDashboard, serveDashboard, type Dashboard, type DashboardServer } from 'gemstone-utils/dashboard';

export async function consumer(): Promise<LeaderInfo | null> {
  const options: InitDbOptions = { createTables: true };
  const dataSource: DataSource = await initDb('sqlite::memory:', options);
  const registered: number = GemstoneDB.entities.length;
  const service = new ElectionService(dataSource, { expireSeconds: 30 });
  const outcome: ElectOutcome = await service.electOutcome('9b2f3c1e-1111-4c4c-8888-123456789abc', { ns: 'jobs' });
  const terms: number[] = [];
  const elector = new LeaderElector({
    dataSource,
    ns: 'jobs',
    onStartedLeading: async (lease: Lease) => {
      terms.push(lease.term);
      await withTransaction(dataSource, async (manager: EntityManager) => {
        await assertLeader(lease.candidateId, { ns: lease.ns, term: lease.term, session: manager });
        return manager.query('SELECT 1');
      });
    },
  });
  await elector.start();
  await elector.stop();
  const failure: unknown = new Error('x');
  const dashboard: Dashboard = createDashboard({ dataSource, authorize: (request) => request.headers['x-ops'] === 'yes' || 'unauthenticated' });
  const server: DashboardServer = await serveDashboard({ dataSource, port: 0 });
  await Promise.all([dashboard.close(), server.close()]);
  void [registered, outcome.term, failure instanceof NotLeaderError];
  return service.getLeader({ ns: 'jobs' });
}
