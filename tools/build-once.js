#!/usr/bin/env node
// `npm run build`, unless the caller says dist/ is already built from this checkout
// (GEMSTONE_BUILT=1). `.ci/run` builds once, in a stage of its own, and sets it, so that `npm test`
// and the other stages (test:ha, test:typeorm-0.3, …) do not compile the same sources again (nor
// remove dist/ under a stage running beside); a developer running one of those scripts alone
// always gets a fresh build.
// With --clean (`npm test`'s pretest), dist/ is removed first, so that no file of an earlier
// build survives.
const { execSync } = require('child_process');
if (process.env.GEMSTONE_BUILT === '1') {
  console.log('build-once: dist/ is already built (GEMSTONE_BUILT=1)');
} else {
  if (process.argv.includes('--clean')) execSync('npm run clean', { stdio: 'inherit' });
  execSync('npm run build', { stdio: 'inherit' });
}
