// Tests import the built package (dist/), as users do: `npm test` builds first.
// GEMSTONE_TYPEORM_LINE=0.3 runs the same suite against TypeORM 0.3.x (installed as `typeorm03`).
const line03 = process.env.GEMSTONE_TYPEORM_LINE === '0.3';

/** @type {import('jest').Config} */
module.exports = {
  testEnvironment: 'node',
  roots: ['<rootDir>/test'],
  testMatch: ['**/*.test.ts'],
  transform: { '^.+\\.ts$': ['ts-jest', { tsconfig: 'tsconfig.jest.json' }] },
  moduleNameMapper: {
    '^gemstone-utils$': '<rootDir>/dist/src/index.js',
    '^gemstone-utils/(db|election)$': '<rootDir>/dist/src/$1/index.js',
    ...(line03 ? { '^typeorm$': '<rootDir>/node_modules/typeorm03', '^typeorm/(.*)$': '<rootDir>/node_modules/typeorm03/$1' } : {}),
  },
  globalSetup: '<rootDir>/test/support/global-setup.js',
  setupFiles: ['<rootDir>/test/support/setup.js'],
  testTimeout: 60_000,
  // Database-bound tests wait on I/O more than CPU: more workers than the 2 cores pays off.
  maxWorkers: process.env.JEST_MAX_WORKERS || 4,
};
