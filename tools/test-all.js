#!/usr/bin/env node
// `npm test`, after its `pretest` (clean, build): the suite on jest, with its output as it comes,
// and beside it the type-check of the sources and tests (`npm run typecheck`), then the packed
// package's test (`npm run test:package`), their output held and printed after the suite's.
// The suite's tests wait on the databases for much of their time and leave a core idle; the
// type-check and the package test are single CPU-bound processes that take that core instead of
// adding their minute and a half after the suite. The suite holds beside two busy loops, so it
// holds beside them. Exits non-zero when any of the three failed, and says which.
// With arguments (`npm test -- test/dashboard`), runs only jest, with them.
const { spawn } = require('child_process');
const path = require('path');

const ROOT = path.join(__dirname, '..');
const JEST = path.join(ROOT, 'test', 'deps', 'node_modules', '.bin', 'jest');
const NPM = process.platform === 'win32' ? 'npm.cmd' : 'npm';

/** Runs a command; its output inherited, or held (then resolved with it). */
function run(command, args, hold) {
  return new Promise((resolve) => {
    const child = spawn(command, args, { cwd: ROOT, stdio: hold ? ['ignore', 'pipe', 'pipe'] : 'inherit' });
    const chunks = [];
    if (hold) {
      child.stdout.on('data', (chunk) => chunks.push(chunk));
      child.stderr.on('data', (chunk) => chunks.push(chunk));
    }
    child.on('error', (error) => resolve({ code: 1, output: `${command}: ${error.message}\n` }));
    child.on('close', (code, signal) => resolve({ code: code ?? (signal ? 1 : 0), output: Buffer.concat(chunks).toString() }));
  });
}

async function main() {
  const args = process.argv.slice(2);
  if (args.length > 0) return (await run(JEST, args, false)).code;
  const beside = (async () => {
    const typecheck = await run(NPM, ['run', 'typecheck'], true);
    if (typecheck.code !== 0) return [{ name: 'typecheck', ...typecheck }];
    return [{ name: 'typecheck', ...typecheck }, { name: 'test:package', ...(await run(NPM, ['run', 'test:package'], true)) }];
  })();
  const suite = await run(JEST, [], false);
  const others = await beside;
  for (const other of others) process.stdout.write(`\n---- npm run ${other.name} (run beside the suite) ----\n${other.output}`);
  const failed = [...(suite.code !== 0 ? ['the suite (jest)'] : []), ...others.filter((o) => o.code !== 0).map((o) => `npm run ${o.name}`)];
  if (others.length === 1) failed.push('npm run test:package (not run: the type-check failed)');
  if (failed.length > 0) {
    process.stderr.write(`\nnpm test: failed: ${failed.join('; ')}\n`);
    return 1;
  }
  return 0;
}

main().then((code) => process.exit(code));
