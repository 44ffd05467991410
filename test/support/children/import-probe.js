// Loads one entry point of the package the way a user's process does (self-reference through the
// `exports` map of package.json, against dist/) and reports what it found, as one JSON line.
// Usage (from the repo root): node -r ./test/support/typeorm-line.js test/support/children/import-probe.js <specifier>
'use strict';
const specifier = process.argv[2];

function errorCode(load) {
  try {
    load();
    return null;
  } catch (error) {
    return error.code || error.name;
  }
}

const resolved = require.resolve(specifier);
const loaded = require(specifier);
// Only now the registry, so that it sees just what `specifier` registered on import.
const { GemstoneDB } = require('gemstone-utils/db');

process.stdout.write(
  `${JSON.stringify({
    resolved,
    exports: Object.keys(loaded).sort(),
    entities: GemstoneDB.entities.map((entity) => entity.name),
    migrations: GemstoneDB.migrations.map((migration) => migration.name),
    sameRegistry: loaded.GemstoneDB === undefined || loaded.GemstoneDB === GemstoneDB,
    deepImport: errorCode(() => require('gemstone-utils/dist/src/db/registry')),
  })}\n`,
);
