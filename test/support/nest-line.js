// Preloaded (`node -r`) into the NestJS tests' host processes: with GEMSTONE_NEST_LINE=11,
// `require('@nestjs/…')` — from the package's dist/, the host, and Nest itself — resolves to the
// previous Nest major installed in test/nest11 (`npm ci --prefix test/nest11 --legacy-peer-deps`),
// which is CommonJS, so a resolve hook of require covers every load.
if (process.env.GEMSTONE_NEST_LINE === '11') {
  const Module = require('module');
  const path = require('path');
  const fs = require('fs');
  const root = path.join(__dirname, '..', 'nest11', 'node_modules');
  if (!fs.existsSync(path.join(root, '@nestjs', 'core'))) {
    throw new Error(`GEMSTONE_NEST_LINE=11 but ${root} has no @nestjs/core: run \`npm ci --prefix test/nest11 --legacy-peer-deps\``);
  }
  const resolve = Module._resolveFilename;
  Module._resolveFilename = function (request, ...rest) {
    return resolve.call(this, request.startsWith('@nestjs/') ? path.join(root, request) : request, ...rest);
  };
}
