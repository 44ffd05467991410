// The dashboard from the installed tarball: its page, scripts and JSON are served (the browser
// modules ship in the package), then it closes. Prints what it got as JSON.
'use strict';
const { randomUUID } = require('node:crypto');
const { initDb, ElectionService } = require('gemstone-utils');
const { serveDashboard } = require('gemstone-utils/dashboard');

async function main() {
  const dataSource = await initDb('sqlite::memory:');
  await new ElectionService(dataSource).elect(randomUUID(), { ns: 'cjs-dashboard' });
  const server = await serveDashboard({ dataSource, port: 0 });
  const page = await (await fetch(server.url)).text();
  const scripts = [];
  for (const name of ['main.js', 'dom.js', 'overview.js', 'namespace.js', 'timeline.js']) scripts.push((await fetch(`${server.url}client/${name}`)).status);
  const overview = await (await fetch(`${server.url}api/overview`)).json();
  await server.close();
  await dataSource.destroy();
  console.log(JSON.stringify({ page: page.includes('src="client/main.js"'), scripts, namespaces: overview.rows.map((row) => row.ns) }));
}
main().catch((error) => {
  console.error(error);
  process.exit(1);
});
