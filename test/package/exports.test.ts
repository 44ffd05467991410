/**
 * The package as a user's process loads it — from
 * child processes in the repo root, so Node resolves `gemstone-utils` by self-reference through
 * the `exports` map of package.json against dist/ — and the manifest itself.
 */
import * as fs from 'fs';
import * as path from 'path';
import { REPO_ROOT, runNode } from '../support/children/spawn';

interface Manifest {
  name: string;
  main: string;
  types: string;
  exports: Record<string, string | { types?: string; default?: string }>;
  peerDependencies: Record<string, string>;
  peerDependenciesMeta?: Record<string, { optional?: boolean }>;
}
const manifest: Manifest = JSON.parse(fs.readFileSync(path.join(REPO_ROOT, 'package.json'), 'utf8'));

interface Probe {
  resolved: string;
  exports: string[];
  entities: string[];
  migrations: string[];
  sameRegistry: boolean;
  deepImport: string | null;
}

async function probe(specifier: string): Promise<Probe> {
  const result = await runNode(['test/support/children/import-probe.js', specifier]);
  if (result.code !== 0) throw new Error(`probe of ${specifier} exited ${result.code}: ${result.stderr}`);
  return JSON.parse(result.stdout);
}

const ESM_SCRIPT = `
import { randomUUID } from 'node:crypto';
import { ElectionService, initDb, GemstoneDB } from 'gemstone-utils';
import pkg from 'gemstone-utils';
import * as db from 'gemstone-utils/db';
import { ElectionService as FromElection } from 'gemstone-utils/election';
const ds = await initDb('sqlite::memory:');
const id = randomUUID();
const leader = await new ElectionService(ds).elect(id, { ns: 'esm' });
console.log(JSON.stringify({
  elected: leader === id,
  sameClass: FromElection === ElectionService && pkg.ElectionService === ElectionService,
  sameRegistry: db.GemstoneDB === GemstoneDB,
  entities: GemstoneDB.entities.map((e) => e.name),
}));
await ds.destroy();
`;

// Records every `@nestjs/*` package the entry points ask for (the package is CommonJS: all its
// loads go through require), then prints them as JSON.
const NEST_LOADS_SCRIPT = `
const Module = require('module');
const requested = new Set();
const resolve = Module._resolveFilename;
Module._resolveFilename = function (request, ...rest) {
  if (request.startsWith('@nestjs/')) requested.add(request);
  return resolve.call(this, request, ...rest);
};
const core = {};
for (const specifier of ['gemstone-utils', 'gemstone-utils/db', 'gemstone-utils/election', 'gemstone-utils/metrics', 'gemstone-utils/dashboard']) require(specifier);
core.requested = [...requested].sort();
require('gemstone-utils/nestjs');
console.log(JSON.stringify({ core: core.requested, nestjs: [...requested].sort() }));
`;

describe('package entry points (child processes in the repo root)', () => {
  // Started together: each is a separate Node process, so they overlap on the two cores.
  const probes = {} as Record<'root' | 'db' | 'election' | 'metrics' | 'nestjs' | 'dashboard', Promise<Probe>>;
  let nestLoads: ReturnType<typeof runNode>;
  let esm: ReturnType<typeof runNode>;
  let tsc: ReturnType<typeof runNode>;
  beforeAll(() => {
    probes.root = probe('gemstone-utils');
    probes.db = probe('gemstone-utils/db');
    probes.election = probe('gemstone-utils/election');
    probes.metrics = probe('gemstone-utils/metrics');
    probes.nestjs = probe('gemstone-utils/nestjs');
    probes.dashboard = probe('gemstone-utils/dashboard');
    nestLoads = runNode(['-e', NEST_LOADS_SCRIPT]);
    esm = runNode(['--input-type=module', '-e', ESM_SCRIPT]);
    tsc = runNode(
      [
        'node_modules/typescript/bin/tsc',
        '--noEmit',
        '--strict',
        '--module', 'node16',
        '--moduleResolution', 'node16',
        '--target', 'es2022',
        '--types', 'node',
        '--experimentalDecorators',
        '--skipLibCheck',
        'test/package/fixtures/consumer.ts',
      ],
      { timeoutMs: 60_000 },
    );
    // Failures are asserted by the tests; keep unobserved rejections quiet until then.
    for (const pending of [...Object.values(probes), esm, tsc, nestLoads]) pending.catch(() => undefined);
  });

  test.each([
    ['gemstone-utils', 'root', '.'],
    ['gemstone-utils/db', 'db', './db'],
    ['gemstone-utils/election', 'election', './election'],
    ['gemstone-utils/metrics', 'metrics', './metrics'],
    ['gemstone-utils/nestjs', 'nestjs', './nestjs'],
    ['gemstone-utils/dashboard', 'dashboard', './dashboard'],
  ] as const)('require(%s) resolves through the exports map to dist', async (_specifier, key, entry) => {
    const result = await probes[key];
    const target = manifest.exports[entry] as { default: string };
    expect(result.resolved).toBe(path.join(REPO_ROOT, target.default));
    expect(result.resolved.startsWith(path.join(REPO_ROOT, 'dist') + path.sep)).toBe(true);
    expect(result.sameRegistry).toBe(true);
    expect(result.deepImport).toBe('ERR_PACKAGE_PATH_NOT_EXPORTED'); // only the exported entry points
  });

  test('importing gemstone-utils/db or /metrics alone registers nothing; gemstone-utils, /election, /nestjs and /dashboard register the election tables', async () => {
    const [root, db, election, metrics, nestjs, dashboard] = await Promise.all([probes.root, probes.db, probes.election, probes.metrics, probes.nestjs, probes.dashboard]);
    for (const alone of [db, metrics]) {
      expect(alone.entities).toEqual([]);
      expect(alone.migrations).toEqual([]);
    }
    for (const loaded of [root, election, nestjs, dashboard]) {
      expect(loaded.entities).toEqual(['ElectionCandidate', 'ElectionLeader', 'ElectionHistory', 'ElectionRun']);
      expect(loaded.migrations).toEqual(['GemstoneElectionTables1763683200000', 'GemstoneElectionIdentity1795392000000', 'GemstoneElectionRuns1796256000000', 'GemstoneElectionLeanHeartbeat1797120000000']);
    }
  });

  test('the entry points export the documented API', async () => {
    const [root, db, election] = await Promise.all([probes.root, probes.db, probes.election]);
    const dbApi = ['GemstoneDB', 'initDb', 'getDataSource', 'GemstoneError', 'ValidationError', 'NotInitializedError'];
    const electionApi = [
      'ElectionService', 'ElectionCandidate', 'ElectionLeader', 'ElectionHistory', 'ElectionRun', 'NotLeaderError', 'ValidationError', 'NotInitializedError',
      'setExpire', 'registerCandidate', 'heartbeat', 'elect', 'isLeader', 'listCandidates', 'unregisterCandidate',
      'getLeader', 'resign', 'assertLeader',
      'watch', 'LeaderWatch', 'getHistory', 'handOver', 'pruneHistory', 'DEFAULT_WATCH_POLL_MS', 'DEFAULT_HISTORY_RETENTION_SECONDS', 'HISTORY_TABLE',
    ];
    expect(db.exports).toEqual(expect.arrayContaining(dbApi));
    expect(election.exports).toEqual(expect.arrayContaining(electionApi));
    expect(root.exports).toEqual(expect.arrayContaining([...dbApi, ...electionApi]));
    expect((await probes.metrics).exports).toEqual(
      expect.arrayContaining(['createPrometheusMetrics', 'createOpenTelemetryMetrics', 'instrumentElector', 'METRIC_NAMES', 'DEFAULT_ELECT_DURATION_BUCKETS']),
    );
    expect((await probes.nestjs).exports).toEqual(
      expect.arrayContaining(['ElectionModule', 'LeaderOnly', 'LeaderCron', 'ElectionHealthIndicator', 'ElectionService', 'LeaderElector', 'GemstoneDB', 'DEFAULT_DASHBOARD_PATH']),
    );
    expect((await probes.dashboard).exports).toEqual(
      expect.arrayContaining(['createDashboard', 'serveDashboard', 'CONTENT_SECURITY_POLICY', 'DEFAULT_DASHBOARD_PORT', 'MAX_PAGE_SIZE', 'MAX_TIMELINE_TERMS']),
    );
  });

  test('gemstone-utils, /db, /election, /metrics and /dashboard load no @nestjs package; /nestjs loads Nest but not terminus until a health check runs', async () => {
    const result = await nestLoads;
    expect({ code: result.code, stderr: result.stderr }).toMatchObject({ code: 0 });
    const loads = JSON.parse(result.stdout) as { core: string[]; nestjs: string[] };
    expect(loads.core).toEqual([]);
    expect(loads.nestjs).toEqual(expect.arrayContaining(['@nestjs/common', '@nestjs/typeorm']));
    expect(loads.nestjs).not.toContain('@nestjs/terminus');
  });

  test("an ES module can `import { ElectionService } from 'gemstone-utils'` and run an election", async () => {
    const result = await esm;
    expect({ code: result.code, stderr: result.stderr }).toMatchObject({ code: 0 }); // stderr shows in the diff
    expect(JSON.parse(result.stdout)).toEqual({
      elected: true,
      sameClass: true,
      sameRegistry: true,
      entities: ['ElectionCandidate', 'ElectionLeader', 'ElectionHistory', 'ElectionRun'],
    });
  });

  test('TypeScript with node16 resolution type-checks a consumer against the exported declarations', async () => {
    const result = await tsc;
    expect(result.stdout + result.stderr).toBe('');
    expect(result.code).toBe(0);
  });
});

describe('package.json', () => {
  test('is named gemstone-utils and maps ".", "./db", "./election", "./metrics", "./nestjs", "./dashboard" to built JS with declarations', () => {
    expect(manifest.name).toBe('gemstone-utils');
    expect(Object.keys(manifest.exports)).toEqual(expect.arrayContaining(['.', './db', './election', './metrics', './nestjs', './dashboard']));
    const files = [manifest.main, manifest.types];
    for (const entry of ['.', './db', './election', './metrics', './nestjs', './dashboard']) {
      const target = manifest.exports[entry] as { types?: string; default?: string };
      expect(target.types).toMatch(/^\.\/dist\/.*\.d\.ts$/);
      expect(target.default).toMatch(/^\.\/dist\/.*\.js$/);
      files.push(target.types!, target.default!);
    }
    expect(files.filter((file) => !fs.existsSync(path.join(REPO_ROOT, file)))).toEqual([]);
    expect(path.normalize(manifest.main)).toBe(path.normalize((manifest.exports['.'] as { default: string }).default));
    expect(path.normalize(manifest.types)).toBe(path.normalize((manifest.exports['.'] as { types: string }).types));
  });

  test('peer dependencies are typeorm and reflect-metadata required, drivers, metrics libraries and Nest packages optional', () => {
    const peers = manifest.peerDependencies;
    const nest = ['@nestjs/common', '@nestjs/core', '@nestjs/terminus', '@nestjs/typeorm'];
    expect(Object.keys(peers).sort()).toEqual(
      expect.arrayContaining([...nest, '@opentelemetry/api', 'better-sqlite3', 'mysql2', 'pg', 'prom-client', 'reflect-metadata', 'sqlite3', 'typeorm']),
    );
    expect(peers.typeorm).toBe('^0.3.20 || ^1.0.0');
    const optional = Object.entries(manifest.peerDependenciesMeta ?? {})
      .filter(([, meta]) => meta.optional === true)
      .map(([name]) => name)
      .sort();
    expect(optional).toEqual(expect.arrayContaining([...nest, '@opentelemetry/api', 'better-sqlite3', 'mysql2', 'pg', 'prom-client', 'sqlite3']));
    // Everything but the two the package cannot run without is optional.
    expect(Object.keys(peers).filter((name) => !optional.includes(name)).sort()).toEqual(['reflect-metadata', 'typeorm']);
  });
});
