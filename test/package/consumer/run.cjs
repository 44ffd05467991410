// A CommonJS consumer of the installed tarball: elect through ElectionService and LeaderElector
// on an in-memory SQLite database, print what happened as JSON.
'use strict';
const { randomUUID } = require('node:crypto');
const { ElectionService, LeaderElector, initDb, GemstoneDB } = require('gemstone-utils');
const db = require('gemstone-utils/db');

async function main() {
  const dataSource = await initDb('sqlite::memory:');
  const id = randomUUID();
  const outcome = await new ElectionService(dataSource).electOutcome(id, { ns: 'cjs' });
  let elector;
  const lease = await new Promise((resolve, reject) => {
    elector = new LeaderElector({ dataSource, ns: 'cjs-elector', onStartedLeading: resolve });
    elector.on('error', reject);
    elector.start().catch(reject);
  });
  await elector.stop();
  console.log(JSON.stringify({
    resolved: require.resolve('gemstone-utils'),
    elected: outcome.leaderId === id && outcome.isLeader,
    term: outcome.term,
    electorTerm: lease.term,
    sameRegistry: db.GemstoneDB === GemstoneDB,
  }));
  await dataSource.destroy();
}
main().catch((error) => {
  console.error(error);
  process.exit(1);
});
