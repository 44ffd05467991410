// Loads the package, both TypeORM lines, OpenTelemetry's SDK, prom-client and a SQLite driver,
// then prints every package folder that was loaded: { name: [folders] } (test/architecture/install.test.ts).
// By its own name, as the tests' child scripts load it (test/ is in the root package's scope).
require('gemstone-utils');
require('typeorm');
require('typeorm03');
require('@opentelemetry/sdk-metrics');
require('prom-client');
require('better-sqlite3');
const copies = {};
for (const file of Object.keys(require.cache)) {
  const match = /^(.*[\\/]node_modules[\\/])((?:@[^\\/]+[\\/])?[^\\/]+)[\\/]/.exec(file);
  if (!match) continue;
  const name = match[2].replace(/\\/g, '/');
  copies[name] = [...new Set([...(copies[name] ?? []), match[1] + match[2]])];
}
process.stdout.write(JSON.stringify(copies));
