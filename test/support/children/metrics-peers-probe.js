// Loads the package's entry points as a user's process does, with some packages made impossible
// for this package's own code to resolve (as if not installed; other packages' dependencies, such
// as prom-client's own @opentelemetry/api, still resolve), and reports which metrics libraries got
// loaded and which absent ones the package tried to load, as one JSON line.
// Usage (from the repo root): node -r ./test/support/typeorm-line.js test/support/children/metrics-peers-probe.js <absent,...>
'use strict';
const Module = require('module');
const absent = (process.argv[2] || '').split(',').filter(Boolean);

const attempts = [];
const resolve = Module._resolveFilename;
Module._resolveFilename = function (request, parent, ...rest) {
  const fromDependency = /[\\/]node_modules[\\/]/.test(parent?.filename ?? '');
  if (!fromDependency && absent.some((name) => request === name || request.startsWith(`${name}/`))) {
    attempts.push(request);
    const error = new Error(`Cannot find module '${request}' (absent in this probe)`);
    error.code = 'MODULE_NOT_FOUND';
    throw error;
  }
  return resolve.call(this, request, parent, ...rest);
};

const loadedLibraries = () =>
  [...new Set(Object.keys(require.cache).map((file) => /node_modules[\\/](prom-client|@opentelemetry[\\/][^\\/]+)[\\/]/.exec(file)?.[1]).filter(Boolean))]
    .map((name) => name.replace('\\', '/'))
    .sort();

(async () => {
  require('gemstone-utils');
  require('gemstone-utils/election');
  const afterCore = loadedLibraries();
  const metrics = require('gemstone-utils/metrics');
  const afterImport = loadedLibraries();
  let prometheus;
  try {
    if (absent.includes('prom-client')) {
      metrics.createPrometheusMetrics();
      prometheus = { ok: true };
    } else {
      const { Registry } = require('prom-client');
      const registry = new Registry();
      metrics.createPrometheusMetrics({ registry });
      prometheus = { ok: true, names: (await registry.getMetricsAsJSON()).map((m) => m.name).sort() };
    }
  } catch (error) {
    prometheus = { ok: false, error: `${error.name}: ${error.message}` };
  }
  process.stdout.write(`${JSON.stringify({ afterCore, afterImport, afterPrometheus: loadedLibraries(), attempts, prometheus })}\n`);
})().catch((error) => {
  process.stderr.write(`${error.stack}\n`);
  process.exit(1);
});
