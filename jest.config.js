// Tests import the built package (dist/), as users do: `npm test` builds first.
// jest and the packages of the tests come from test/deps/ (`npm ci --prefix test/deps`), the shared ones
// (TypeORM, Nest, reflect-metadata, …) from the root: see test/support/packages.js.
const path = require('path');
const { TEST_MODULES, moduleNameMapper } = require('./test/support/packages');
const { lineIgnorePatterns } = require('./test/support/typeorm-lines');
// GEMSTONE_TYPEORM_LINE=0.3 runs the same suite against TypeORM 0.3.x (installed as `typeorm03`),
// GEMSTONE_SQLITE3=5 the sqlite3 DataSources on sqlite3 5.x (`sqlite3-v5`) instead of 6.x (the
// peer range accepts both majors): test/support/packages.js's lineAliases.

/** @type {import('jest').Config} */
module.exports = {
  testEnvironment: 'node',
  roots: ['<rootDir>/test'],
  testMatch: ['**/*.test.ts'],
  // The packed-package test type-checks a consumer a dozen times (CPU-bound): a run of its own
  // (`npm run test:package`), which `npm test` starts beside the suite (tools/test-all.js).
  // test/ha/ starts private database servers, poolers and replicas (`npm run test:ha`): not part of `npm test`.
  testPathIgnorePatterns: [
    '/node_modules/',
    ...(process.env.GEMSTONE_PACKAGE_TESTS === '1' ? [] : ['/test/package/consumer\\.test\\.ts$']),
    ...(process.env.GEMSTONE_HA_TESTS === '1' ? [] : ['/test/ha/']),
    // `npm run test:typeorm-0.3` leaves out the files whose outcome cannot depend on the TypeORM
    // line, each named with its reason in test/support/typeorm-lines.js.
    ...lineIgnorePatterns(),
  ],
  transform: { '^.+\\.ts$': [path.join(TEST_MODULES, 'ts-jest'), { tsconfig: 'tsconfig.jest.json' }] },
  // dist/, bench/ and the children's scripts live outside test/: test/deps/'s packages (the drivers
  // TypeORM loads, …) are found here after the usual node_modules folders.
  modulePaths: [TEST_MODULES],
  moduleNameMapper: {
    '^gemstone-utils$': '<rootDir>/dist/src/index.js',
    '^gemstone-utils/(db|election|metrics|nestjs|dashboard)$': '<rootDir>/dist/src/$1/index.js',
    // The aliases of this run, then one copy of each shared package (the first match wins).
    ...moduleNameMapper(),
  },
  globalSetup: '<rootDir>/test/support/global-setup.js',
  setupFiles: ['<rootDir>/test/support/setup.js'],
  // Names the sender of a statement on a destroyed DataSource (see the file).
  setupFilesAfterEnv: ['<rootDir>/test/support/after-destroy.js'],
  // The longest files first, by their recorded durations on a clean clone (see the file).
  testSequencer: '<rootDir>/test/support/sequencer.js',
  testTimeout: 60_000,
  // The files wait (on leases running out, locks, child processes, the databases) far more than
  // they compute: more workers than cores pays off. The TypeORM 1.x suite alone on a quiet 2-core
  // machine: 4 workers, 602 s with the cores 40% idle; 6 workers, 469 s, 19% idle, each file's own
  // time about the same (docs/development.md).
  maxWorkers: process.env.JEST_MAX_WORKERS || 6,
};
