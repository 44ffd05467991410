// The ES module side of test/support/packages.js, registered by its useTestPackages(): `import`
// ignores NODE_PATH, so a package that only test/deps/ holds is resolved from there when the
// usual lookup (node_modules folders up from the importer) finds nothing. Nest 12's core (the
// root's, an ES module) imports `@nestjs/platform-express` (test/deps/'s) this way.
import { pathToFileURL } from 'node:url';
import * as path from 'node:path';

let fromTestModules;

export function initialize({ testModules }) {
  // A module next to test/deps/node_modules: resolving from it walks that folder.
  fromTestModules = pathToFileURL(path.join(testModules, '..', 'index.js')).href;
}

const isBare = (specifier) => !/^(\.|\/|[a-z][a-z0-9+.-]*:)/i.test(specifier);

export async function resolve(specifier, context, nextResolve) {
  try {
    return await nextResolve(specifier, context);
  } catch (error) {
    if (!isBare(specifier) || error?.code !== 'ERR_MODULE_NOT_FOUND') throw error;
    return nextResolve(specifier, { ...context, parentURL: fromTestModules });
  }
}
