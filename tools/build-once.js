#!/usr/bin/env node
// `npm run build`, unless the caller says dist/ is already built from this checkout
// (GEMSTONE_BUILT=1). `.ci/run` sets it after `npm test` built and type-checked once, so the later
// stages (test:ha, test:typeorm-0.3, …) do not compile the same sources four more times; a
// developer running one of those scripts alone always gets a fresh build.
const { execSync } = require('child_process');
if (process.env.GEMSTONE_BUILT === '1') {
  console.log('build-once: dist/ is already built (GEMSTONE_BUILT=1)');
} else {
  execSync('npm run build', { stdio: 'inherit' });
}
