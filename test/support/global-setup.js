// Probes the server databases once. Unreachable: a failure under CI=true, a loud skip elsewhere
// (so `npm test` on a laptop with only SQLite passes and says what it skipped).
// test/deps/'s packages (mysql2 here) on NODE_PATH, in this process and in the test workers and
// the processes the tests start (the CLI, demo workers, tools: scripts outside test/), which
// inherit it; and the shared packages resolved to the root's copies (see packages.js).
require('./packages').useTestPackages();
const { Client } = require('pg');
const mysql = require('mysql2/promise');

const PG_URL = process.env.GEMSTONE_TEST_PG_URL || 'postgres://postgres@127.0.0.1:5432/test';
const MYSQL_URL = process.env.GEMSTONE_TEST_MYSQL_URL || 'mysql://root@127.0.0.1:3306/test';

async function probe(name, connect) {
  try {
    await connect();
    return null;
  } catch (error) {
    return `${name}: ${error.message}`;
  }
}

module.exports = async () => {
  process.env.GEMSTONE_TEST_PG_URL = PG_URL;
  process.env.GEMSTONE_TEST_MYSQL_URL = MYSQL_URL;
  const failures = (
    await Promise.all([
      probe('postgres', async () => {
        const client = new Client({ connectionString: PG_URL, connectionTimeoutMillis: 3000 });
        await client.connect();
        await client.end();
      }),
      probe('mariadb', async () => {
        const connection = await mysql.createConnection({ uri: MYSQL_URL, connectTimeout: 3000 });
        try {
          // Whether the server knows innodb_snapshot_isolation (MariaDB 10.6.18+/10.11.8+): test
          // files decide when they are collected whether their cases that need it run or skip.
          const [rows] = await connection.query("SHOW VARIABLES LIKE 'innodb_snapshot_isolation'");
          // Preset to 0, it plays a server without it.
          if (process.env.GEMSTONE_TEST_MARIADB_SNAPSHOT_ISOLATION !== '0') process.env.GEMSTONE_TEST_MARIADB_SNAPSHOT_ISOLATION = rows.length > 0 ? '1' : '0';
        } finally {
          await connection.end();
        }
      }),
    ])
  ).filter(Boolean);
  if (failures.length === 0) return;
  if (process.env.CI === 'true') {
    throw new Error(`CI=true and a test database is unreachable (nothing may be skipped in CI):\n  ${failures.join('\n  ')}`);
  }
  process.env.GEMSTONE_TEST_SKIP = failures.map((f) => f.split(':')[0]).join(',');
  const line = '!'.repeat(78);
  console.warn(`\n${line}\nSKIPPING tests on unreachable databases (set CI=true to make this fail):\n  ${failures.join('\n  ')}\n${line}\n`);
};
