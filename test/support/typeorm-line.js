// Preloaded (`node -r`) into the child processes of the tests and tools: test/deps/'s packages and the
// root's shared ones resolve as in the test workers (packages.js), and with
// GEMSTONE_TYPEORM_LINE=0.3 `require('typeorm')` resolves to TypeORM 0.3.x (the `typeorm03`
// alias), as jest's moduleNameMapper does inside the test workers.
const path = require('path');
const { TEST_MODULES, useTestPackages } = require('./packages');

// First: the hooks below take their requests before it does.
useTestPackages();

if (process.env.GEMSTONE_TYPEORM_LINE === '0.3') {
  const Module = require('module');
  const root = path.join(TEST_MODULES, 'typeorm03');
  const resolve = Module._resolveFilename;
  Module._resolveFilename = function (request, ...rest) {
    if (request === 'typeorm') request = root;
    else if (request.startsWith('typeorm/')) request = path.join(root, request.slice('typeorm/'.length));
    return resolve.call(this, request, ...rest);
  };
}

// GEMSTONE_SQLITE3=5: `require('sqlite3')` (TypeORM's sqlite driver) loads sqlite3 5.x, installed
// as the `sqlite3-v5` alias, as jest's moduleNameMapper does inside the test workers.
if (process.env.GEMSTONE_SQLITE3 === '5') {
  const Module = require('module');
  const v5 = path.join(TEST_MODULES, 'sqlite3-v5');
  const resolve = Module._resolveFilename;
  Module._resolveFilename = function (request, ...rest) {
    return resolve.call(this, request === 'sqlite3' ? v5 : request, ...rest);
  };
}
