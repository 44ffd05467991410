#!/usr/bin/env node
/**
 * `npm run docs:api`: the generated API reference, from the doc comments of the public entry
 * points, into `api-docs/` (git-ignored; open `api-docs/index.html`). TypeDoc lives in a package of
 * its own here (tools/typedoc, with its lock file), not among the package's development
 * dependencies: installing or building gemstone-utils never fetches it. The first run installs it
 * from the lock file (`npm ci --prefix tools/typedoc`).
 *
 * Fails (exit code non-zero) when a public export has no doc comment, a `{@link}` names nothing, or
 * a type the API uses is not exported (TypeDoc's `validation`, warnings treated as errors).
 */
const { spawnSync } = require('child_process');
const fs = require('fs');
const path = require('path');

const HERE = __dirname;
const TYPEDOC = path.join(HERE, 'node_modules', 'typedoc', 'bin', 'typedoc');

function run(command, args) {
  const result = spawnSync(command, args, { stdio: 'inherit', cwd: HERE });
  if (result.error) throw result.error;
  return result.status ?? 1;
}

if (!fs.existsSync(TYPEDOC)) {
  const npm = process.platform === 'win32' ? 'npm.cmd' : 'npm';
  const installed = run(npm, ['ci', '--prefix', HERE, '--no-audit', '--no-fund']);
  if (installed !== 0) process.exit(installed);
}
const started = Date.now();
const status = run(process.execPath, [TYPEDOC, '--options', path.join(HERE, 'typedoc.json')]);
if (status === 0) console.log(`docs:api: ${path.relative(process.cwd(), path.join(HERE, '..', '..', 'api-docs', 'index.html'))} (${((Date.now() - started) / 1000).toFixed(1)} s)`);
process.exit(status);
