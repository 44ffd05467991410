// Where the tests, the demo, the examples, bench/ and tools/ find their packages. Two installs:
// - the repository root (`npm ci`): what building the package needs — TypeScript, @types/node,
//   TypeORM 1.x, Nest's common/core/typeorm/terminus, reflect-metadata, rxjs, pg, prom-client.
//   A git install of the package runs `prepare`, which installs these and nothing more;
// - test/deps/ (`npm ci --prefix test/deps`): jest, the SQLite and MySQL drivers, TypeORM 0.3
//   (`typeorm03`), sqlite3 5 (`sqlite3-v5`), Fastify, Nest's platform-express and schedule, …
//   A folder of its own, not test/package.json: test/ stays in the root package's scope, where
//   the tests' child scripts load the package by its own name (`require('gemstone-utils')`).
// No code finds test/deps/'s packages by walking up folders: it finds them through NODE_PATH
// (jest: `modulePaths`). A package the library shares with its user — its peers and the root's
// devDependencies: TypeORM, Nest, reflect-metadata, rxjs, OpenTelemetry's API — must be ONE copy
// in a process (a DataSource of one TypeORM copy is not one to the other; Nest keeps its metadata
// per copy), yet test/deps/'s packages bring some of them again (TypeORM 0.3 its reflect-metadata):
// wherever the root has such a package, every `require` of it gets the root's copy.
const fs = require('fs');
const path = require('path');

const ROOT = path.resolve(__dirname, '..', '..');
const ROOT_MODULES = path.join(ROOT, 'node_modules');
const TEST_MODULES = path.join(ROOT, 'test', 'deps', 'node_modules');

const manifest = JSON.parse(fs.readFileSync(path.join(ROOT, 'package.json'), 'utf8'));
/** The shared packages the root has installed. */
const SHARED = Object.keys({ ...manifest.peerDependencies, ...manifest.devDependencies })
  .filter((name) => fs.existsSync(path.join(ROOT_MODULES, name, 'package.json')))
  .sort();
const SHARED_NAMES = new Set(SHARED);

/** The package a bare request names (`@scope/name` or `name`), or undefined for a path. */
function packageOf(request) {
  if (request.startsWith('.') || path.isAbsolute(request) || request.startsWith('node:')) return undefined;
  const parts = request.split('/');
  return request.startsWith('@') ? parts.slice(0, 2).join('/') : parts[0];
}

/** Whether `request` names a shared package the root holds (so it must load from there). */
function isShared(request) {
  const name = packageOf(request);
  return name !== undefined && SHARED_NAMES.has(name);
}

/** The folder of an installed package: the root's copy of a shared one, else test/deps/'s, else the root's. */
function packageDir(name) {
  if (SHARED_NAMES.has(name)) return path.join(ROOT_MODULES, name);
  const inTest = path.join(TEST_MODULES, name);
  return fs.existsSync(inTest) ? inTest : path.join(ROOT_MODULES, name);
}

/** Every installed top-level package, name → folder: the root's, then those only test/deps/ has. */
function installedPackages() {
  const found = new Map();
  for (const modules of [ROOT_MODULES, TEST_MODULES]) {
    if (!fs.existsSync(modules)) continue;
    for (const entry of fs.readdirSync(modules)) {
      if (entry.startsWith('.')) continue;
      const names = entry.startsWith('@') ? fs.readdirSync(path.join(modules, entry)).map((member) => `${entry}/${member}`) : [entry];
      for (const name of names) if (!found.has(name)) found.set(name, path.join(modules, name));
    }
  }
  return found;
}

const escape = (text) => text.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&');

/**
 * The packages a run of the suite swaps for another version test/deps/ holds under an alias, by the
 * name they are required by: GEMSTONE_TYPEORM_LINE=0.3 `typeorm` → TypeORM 0.3.x (`typeorm03`),
 * GEMSTONE_SQLITE3=5 `sqlite3` → sqlite3 5.x (`sqlite3-v5`). jest's moduleNameMapper (test workers)
 * and the resolve hook of useTestPackages() (child processes, tools) both follow this table.
 */
function lineAliases(env = process.env) {
  return {
    ...(env.GEMSTONE_TYPEORM_LINE === '0.3' ? { typeorm: path.join(TEST_MODULES, 'typeorm03') } : {}),
    ...(env.GEMSTONE_SQLITE3 === '5' ? { sqlite3: path.join(TEST_MODULES, 'sqlite3-v5') } : {}),
  };
}

/**
 * jest's `moduleNameMapper` entries: the aliases of this run (lineAliases), then the shared
 * packages to the root's copies (the first match wins, so an alias overrides the root's copy).
 */
function moduleNameMapper() {
  const mapper = {};
  for (const [name, dir] of Object.entries(lineAliases())) {
    mapper[`^${escape(name)}$`] = dir;
    mapper[`^${escape(name)}/(.*)$`] = `${dir}/$1`;
  }
  if (SHARED.length > 0) mapper[`^(${SHARED.map(escape).join('|')})(/.*)?$`] = `${ROOT_MODULES}/$1$2`;
  return mapper;
}

/** NODE_PATH with test/deps/node_modules in it (the other entries kept). */
function nodePathWithTestModules(current = process.env.NODE_PATH) {
  const entries = (current ?? '').split(path.delimiter).filter(Boolean);
  return entries.includes(TEST_MODULES) ? entries.join(path.delimiter) : [...entries, TEST_MODULES].join(path.delimiter);
}

/**
 * In this process (a child the tests start, or a tool): test/deps/'s packages on the lookup path,
 * the aliases of this run (lineAliases) in place of the packages they replace, and every require of
 * a shared package resolved from the root. Children inherit NODE_PATH.
 */
function useTestPackages() {
  if (!fs.existsSync(TEST_MODULES)) {
    // `npm run demo` right after `npm ci` ends here: one line saying what to run, no stack.
    process.stderr.write(`${TEST_MODULES} is missing: run \`npm ci --prefix test/deps\` once after \`npm ci\` (the packages of the tests, the demo, the examples, bench/ and tools/)\n`);
    process.exit(1);
  }
  const Module = require('module');
  // TypeORM 0.3's app-root-path takes a package on NODE_PATH for a global install and then asks
  // require.main, which `node -e` has not: it would throw at load. The app's root is this one.
  process.env.APP_ROOT_PATH ??= ROOT;
  const wanted = nodePathWithTestModules();
  if (process.env.NODE_PATH !== wanted) {
    process.env.NODE_PATH = wanted;
    // Node reads NODE_PATH once at startup: read it again.
    Module._initPaths();
  }
  // Once per process (global-setup.js and the preload typeorm-line.js both call this).
  const installed = Symbol.for('gemstone-utils.test-packages');
  if (Module[installed]) return;
  Module[installed] = true;
  const aliases = lineAliases();
  const resolve = Module._resolveFilename;
  Module._resolveFilename = function (request, parent, isMain, options) {
    const name = packageOf(request);
    if (name !== undefined && Object.hasOwn(aliases, name)) return resolve.call(this, aliases[name] + request.slice(name.length), parent, isMain, options);
    return isShared(request) ? resolve.call(this, request, parent, isMain, { paths: [ROOT] }) : resolve.call(this, request, parent, isMain, options);
  };
  // `import` ignores NODE_PATH: its own fallback to test/deps/ (Node 20.6+).
  Module.register?.(require('url').pathToFileURL(path.join(__dirname, 'esm-resolve.mjs')), { data: { testModules: TEST_MODULES } });
}

module.exports = { ROOT, ROOT_MODULES, TEST_MODULES, SHARED, isShared, packageDir, installedPackages, lineAliases, moduleNameMapper, useTestPackages };
