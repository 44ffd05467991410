// Preloaded (`node -r`) into child processes of the tests: with GEMSTONE_TYPEORM_LINE=0.3,
// `require('typeorm')` resolves to TypeORM 0.3.x (the `typeorm03` alias), as jest's
// moduleNameMapper does inside the test workers.
if (process.env.GEMSTONE_TYPEORM_LINE === '0.3') {
  const Module = require('module');
  const path = require('path');
  const root = path.join(__dirname, '..', '..', 'node_modules', 'typeorm03');
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
  const path = require('path');
  const v5 = path.join(__dirname, '..', '..', 'node_modules', 'sqlite3-v5');
  const resolve = Module._resolveFilename;
  Module._resolveFilename = function (request, ...rest) {
    return resolve.call(this, request === 'sqlite3' ? v5 : request, ...rest);
  };
}
