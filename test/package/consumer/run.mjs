// An ES module consumer of the installed tarball: the same as run.cjs through `import`.
import { randomUUID } from 'node:crypto';
import { ElectionService, LeaderElector, initDb, GemstoneDB } from 'gemstone-utils';
import * as db from 'gemstone-utils/db';

const dataSource = await initDb('sqlite::memory:');
const id = randomUUID();
const outcome = await new ElectionService(dataSource).electOutcome(id, { ns: 'esm' });
let elector;
const lease = await new Promise((resolve, reject) => {
  elector = new LeaderElector({ dataSource, ns: 'esm-elector', onStartedLeading: resolve });
  elector.on('error', reject);
  elector.start().catch(reject);
});
await elector.stop();
console.log(JSON.stringify({
  resolved: import.meta.resolve('gemstone-utils'),
  elected: outcome.leaderId === id && outcome.isLeader,
  term: outcome.term,
  electorTerm: lease.term,
  sameRegistry: db.GemstoneDB === GemstoneDB,
}));
await dataSource.destroy();
