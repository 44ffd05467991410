/**
 * Contract §0 and the import side effect of §1: the package as a user's process loads it — from
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

describe('package entry points (child processes in the repo root)', () => {
  // Started together: each is a separate Node process, so they overlap on the two cores.
  const probes = {} as Record<'root' | 'db' | 'election', Promise<Probe>>;
  let esm: ReturnType<typeof runNode>;
  let tsc: ReturnType<typeof runNode>;
  beforeAll(() => {
    probes.root = probe('gemstone-utils');
    probes.db = probe('gemstone-utils/db');
    probes.election = probe('gemstone-utils/election');
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
    for (const pending of [...Object.values(probes), esm, tsc]) pending.catch(() => undefined);
  });

  test.each([
    ['gemstone-utils', 'root', '.'],
    ['gemstone-utils/db', 'db', './db'],
    ['gemstone-utils/election', 'election', './election'],
  ] as const)('require(%s) resolves through the exports map to dist', async (_specifier, key, entry) => {
    const result = await probes[key];
    const target = manifest.exports[entry] as { default: string };
    expect(result.resolved).toBe(path.join(REPO_ROOT, target.default));
    expect(result.resolved.startsWith(path.join(REPO_ROOT, 'dist') + path.sep)).toBe(true);
    expect(result.sameRegistry).toBe(true);
    expect(result.deepImport).toBe('ERR_PACKAGE_PATH_NOT_EXPORTED'); // only the exported entry points
  });

  test('importing gemstone-utils/db alone registers nothing; gemstone-utils and /election register the election tables', async () => {
    const [root, db, election] = await Promise.all([probes.root, probes.db, probes.election]);
    expect(db.entities).toEqual([]);
    expect(db.migrations).toEqual([]);
    for (const loaded of [root, election]) {
      expect(loaded.entities).toEqual(['ElectionCandidate', 'ElectionLeader']);
      expect(loaded.migrations).toEqual(['GemstoneElectionTables1763683200000']);
    }
  });

  test('the entry points export the API of the contract', async () => {
    const [root, db, election] = await Promise.all([probes.root, probes.db, probes.election]);
    const dbApi = ['GemstoneDB', 'initDb', 'getDataSource', 'GemstoneError', 'ValidationError', 'NotInitializedError'];
    const electionApi = [
      'ElectionService', 'ElectionCandidate', 'ElectionLeader', 'NotLeaderError', 'ValidationError', 'NotInitializedError',
      'setExpire', 'registerCandidate', 'heartbeat', 'elect', 'isLeader', 'listCandidates', 'unregisterCandidate',
      'getLeader', 'resign', 'assertLeader',
    ];
    expect(db.exports).toEqual(expect.arrayContaining(dbApi));
    expect(election.exports).toEqual(expect.arrayContaining(electionApi));
    expect(root.exports).toEqual(expect.arrayContaining([...dbApi, ...electionApi]));
  });

  test("an ES module can `import { ElectionService } from 'gemstone-utils'` and run an election", async () => {
    const result = await esm;
    expect({ code: result.code, stderr: result.stderr }).toMatchObject({ code: 0 }); // stderr shows in the diff
    expect(JSON.parse(result.stdout)).toEqual({
      elected: true,
      sameClass: true,
      sameRegistry: true,
      entities: ['ElectionCandidate', 'ElectionLeader'],
    });
  });

  test('TypeScript with node16 resolution type-checks a consumer against the exported declarations', async () => {
    const result = await tsc;
    expect(result.stdout + result.stderr).toBe('');
    expect(result.code).toBe(0);
  });
});

describe('package.json', () => {
  test('is named gemstone-utils and maps ".", "./db", "./election" to built JS with declarations', () => {
    expect(manifest.name).toBe('gemstone-utils');
    expect(Object.keys(manifest.exports)).toEqual(expect.arrayContaining(['.', './db', './election']));
    const files = [manifest.main, manifest.types];
    for (const entry of ['.', './db', './election']) {
      const target = manifest.exports[entry] as { types?: string; default?: string };
      expect(target.types).toMatch(/^\.\/dist\/.*\.d\.ts$/);
      expect(target.default).toMatch(/^\.\/dist\/.*\.js$/);
      files.push(target.types!, target.default!);
    }
    expect(files.filter((file) => !fs.existsSync(path.join(REPO_ROOT, file)))).toEqual([]);
    expect(path.normalize(manifest.main)).toBe(path.normalize((manifest.exports['.'] as { default: string }).default));
    expect(path.normalize(manifest.types)).toBe(path.normalize((manifest.exports['.'] as { types: string }).types));
  });

  test('peer dependencies are those of CONTRACT §0: typeorm and reflect-metadata required, drivers optional', () => {
    const peers = manifest.peerDependencies;
    expect(Object.keys(peers).sort()).toEqual(['better-sqlite3', 'mysql2', 'pg', 'reflect-metadata', 'sqlite3', 'typeorm']);
    expect(peers.typeorm).toBe('^0.3.20 || ^1.0.0');
    const optional = Object.entries(manifest.peerDependenciesMeta ?? {})
      .filter(([, meta]) => meta.optional === true)
      .map(([name]) => name)
      .sort();
    expect(optional).toEqual(['better-sqlite3', 'mysql2', 'pg', 'sqlite3']);
  });
});
