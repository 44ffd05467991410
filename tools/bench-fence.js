// @ts-check
'use strict';
/**
 * Micro-benchmark of a fenced transaction on MySQL/MariaDB: `withTransaction` running
 * `assertLeader` (optionally followed by one insert into a table of its own) as fast as it can,
 * at a few concurrencies, in a database of its own created on the server and dropped after.
 * It measures what the leader-row write of `assertLeader` costs: run it once on a build with it
 * and once on a build without it, and compare.
 *
 *   node tools/bench-fence.js [--url mysql://root@127.0.0.1:3306/test] [--dist ./dist]
 *                             [--seconds 5] [--concurrency 1,4] [--rounds 2]
 */
const path = require('path');
const { randomUUID } = require('crypto');

function arg(name, fallback) {
  const at = process.argv.indexOf(`--${name}`);
  return at > 0 ? process.argv[at + 1] : fallback;
}

const url = arg('url', process.env.GEMSTONE_TEST_MYSQL_URL || 'mysql://root@127.0.0.1:3306/test');
const dist = path.resolve(arg('dist', path.join(__dirname, '..', 'dist')));
const seconds = Number(arg('seconds', '5'));
const concurrencies = String(arg('concurrency', '1,4')).split(',').map(Number);
const rounds = Number(arg('rounds', '2'));

async function main() {
  const { DataSource } = require('typeorm');
  const mysql = require('mysql2/promise');
  const g = require(path.join(dist, 'src'));
  const database = `gem_fencebench_${process.pid}`;
  const admin = await mysql.createConnection({ uri: url });
  await admin.query(`CREATE DATABASE \`${database}\``);
  const target = new URL(url);
  target.pathname = `/${database}`;
  const dataSource = new DataSource({
    type: 'mysql',
    url: target.toString(),
    timezone: 'Z',
    entities: g.GemstoneDB.entities,
    extra: { connectionLimit: Math.max(...concurrencies) + 1 },
  });
  try {
    await g.initDb(dataSource);
    await dataSource.query('CREATE TABLE bench_ledger (id bigint AUTO_INCREMENT PRIMARY KEY, term bigint NOT NULL) ENGINE=InnoDB');
    const election = new g.ElectionService(dataSource, { expireSeconds: 3600 });
    const leader = randomUUID();
    await election.elect(leader, { ns: 'bench' });
    const { term } = await election.getLeader({ ns: 'bench' });
    const results = [];
    for (let round = 0; round < rounds; round++) {
      for (const withInsert of [false, true]) {
        for (const concurrency of concurrencies) {
          let done = 0;
          const until = performance.now() + seconds * 1000;
          const loop = async () => {
            while (performance.now() < until) {
              await g.withTransaction(dataSource, async (session) => {
                await election.assertLeader(leader, { ns: 'bench', term, session });
                if (withInsert) await session.query('INSERT INTO bench_ledger (term) VALUES (?)', [term]);
              });
              done++;
            }
          };
          const start = performance.now();
          await Promise.all(Array.from({ length: concurrency }, loop));
          results.push({ round, work: withInsert ? 'assertLeader + insert' : 'assertLeader', concurrency, opsPerSecond: Math.round(done / ((performance.now() - start) / 1000)) });
        }
      }
    }
    console.log(JSON.stringify({ dist, url: url.replace(/\/\/[^@]*@/, '//'), seconds, results }, null, 2));
  } finally {
    if (dataSource.isInitialized) await dataSource.destroy();
    await admin.query(`DROP DATABASE IF EXISTS \`${database}\``);
    await admin.end();
  }
}

main().catch((error) => {
  console.error(error);
  process.exit(1);
});
