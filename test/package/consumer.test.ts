/**
 * The packed tarball as a consumer gets it: `npm pack`, installed into a scratch project without
 * network, run from CommonJS and ES modules, and type-checked under strict settings in every
 * module resolution mode, with TypeScript 5 (`tsc`) and, where installed, TypeScript 7 (`tsgo`).
 */
import * as fs from 'fs';
import * as path from 'path';
import { REPO_ROOT } from '../support/children/spawn';
import {
  createConsumer,
  mapLimited,
  packRepo,
  ProcessResult,
  runProgram,
  TypeCheckSetting,
  writeTypeCheckProject,
  Packed,
} from './consumer-project';

const SETTINGS: readonly TypeCheckSetting[] = [
  { name: 'commonjs-node10', module: 'commonjs', moduleResolution: 'node10', packageType: 'commonjs' },
  { name: 'node16-cjs', module: 'node16', moduleResolution: 'node16', packageType: 'commonjs' },
  { name: 'node16-esm', module: 'node16', moduleResolution: 'node16', packageType: 'module' },
  { name: 'nodenext-cjs', module: 'nodenext', moduleResolution: 'nodenext', packageType: 'commonjs' },
  { name: 'nodenext-esm', module: 'nodenext', moduleResolution: 'nodenext', packageType: 'module' },
  { name: 'preserve-bundler', module: 'preserve', moduleResolution: 'bundler', packageType: 'module' },
];

const TSC = path.join(REPO_ROOT, 'node_modules', 'typescript', 'bin', 'tsc');
const TSGO = path.join(REPO_ROOT, 'node_modules', '@typescript', 'native-preview', 'bin', 'tsgo');
const HAS_TSGO = fs.existsSync(TSGO);
/** TypeScript 7 removed `moduleResolution: node10` (error TS5108), so that row is TypeScript 5 only. */
const TSGO_SETTINGS = SETTINGS.filter((setting) => setting.moduleResolution !== 'node10');

interface Checked {
  readonly compiler: 'tsc' | 'tsgo';
  readonly setting: string;
  readonly result: ProcessResult;
}

let packed: Packed;
let consumer: string;
let cjs: Promise<ProcessResult>;
let esm: Promise<ProcessResult>;
let checks: Promise<Checked[]>;

beforeAll(async () => {
  packed = await packRepo();
  consumer = await createConsumer(packed);
  fs.copyFileSync(path.join(__dirname, 'consumer', 'run.cjs'), path.join(consumer, 'run.cjs'));
  fs.copyFileSync(path.join(__dirname, 'consumer', 'run.mjs'), path.join(consumer, 'run.mjs'));
  const jobs: { compiler: Checked['compiler']; setting: TypeCheckSetting }[] = [
    ...SETTINGS.map((setting) => ({ compiler: 'tsc' as const, setting })),
    ...(HAS_TSGO ? TSGO_SETTINGS.map((setting) => ({ compiler: 'tsgo' as const, setting })) : []),
  ];
  for (const { setting } of jobs) writeTypeCheckProject(consumer, setting, path.join(__dirname, 'consumer', 'typed.ts'));
  // Child processes: the runtime checks and two compilers at a time overlap on the machine's cores.
  cjs = runProgram(process.execPath, ['run.cjs'], consumer);
  esm = runProgram(process.execPath, ['run.mjs'], consumer);
  checks = mapLimited(jobs, 2, async ({ compiler, setting }) => ({
    compiler,
    setting: setting.name,
    result: await runProgram(process.execPath, [compiler === 'tsc' ? TSC : TSGO, '-p', path.join(setting.name, 'tsconfig.json')], consumer),
  }));
  for (const pending of [cjs, esm, checks]) pending.catch(() => undefined);
}, 60_000);

afterAll(() => {
  for (const dir of [packed?.dir, consumer]) if (dir) fs.rmSync(dir, { recursive: true, force: true });
});

describe('the packed tarball', () => {
  test('holds the built package, its declarations, docs and legal files', () => {
    const required = [
      'package.json',
      'LICENSE',
      'README.md',
      'CHANGELOG.md',
      'dist/src/index.js',
      'dist/src/index.d.ts',
      'dist/src/db/index.js',
      'dist/src/db/index.d.ts',
      'dist/src/election/index.js',
      'dist/src/election/index.d.ts',
    ];
    expect(required.filter((file) => !packed.files.includes(file))).toEqual([]);
    for (const dir of ['dist/entities/', 'dist/migrations/', 'docs/']) {
      expect(packed.files.some((file) => file.startsWith(dir))).toBe(true);
    }
  });

  // dist/ is packed as built: `build` alone leaves files of earlier builds behind, which is why
  // `pretest` and `prepare` clean first (a stale dist/ with .map files fails here).
  test('holds no source maps, TypeScript sources, tests, benchmarks or tools', () => {
    const unwanted = packed.files.filter(
      (file) =>
        file.endsWith('.map') ||
        (file.endsWith('.ts') && !file.endsWith('.d.ts')) ||
        /^(src|test|bench|tools|examples|node_modules|\.ci)\//.test(file) ||
        /^dist\/(test|bench|tools)\//.test(file),
    );
    expect(unwanted).toEqual([]);
  });
});

describe('a consumer project with the tarball installed', () => {
  const expected = (resolved: string) => ({ resolved, elected: true, term: 1, electorTerm: 1, sameRegistry: true });

  test('a CommonJS script runs an election on sqlite::memory:', async () => {
    const result = await cjs;
    expect({ code: result.code, output: result.code === 0 ? '' : result.output }).toEqual({ code: 0, output: '' });
    const installed = path.join(fs.realpathSync(consumer), 'node_modules', 'gemstone-utils', 'dist', 'src', 'index.js');
    expect(JSON.parse(result.output)).toEqual(expected(installed));
  });

  test('an ES module runs an election on sqlite::memory:', async () => {
    const result = await esm;
    expect({ code: result.code, output: result.code === 0 ? '' : result.output }).toEqual({ code: 0, output: '' });
    const installed = new URL(`file://${path.join(fs.realpathSync(consumer), 'node_modules', 'gemstone-utils', 'dist', 'src', 'index.js')}`).href;
    expect(JSON.parse(result.output)).toEqual(expected(installed));
  });

  // strict + exactOptionalPropertyTypes + skipLibCheck: false + types: ['node'], without pg or
  // @types/pg installed (a SQLite user has neither): every declaration file the entry points
  // reach must type-check, so none may import types from an optional driver. These fail while
  // dist/src/election/pg-listener.d.ts (reached through the LISTEN constants that
  // election/index.ts re-exports) declares an exported function returning pg's `ClientConfig`:
  // "Cannot find module 'pg'". They pass once that declaration no longer names a 'pg' type.
  // The first test awaits the whole matrix: ~35 s on two idle cores, minutes beside the full suite.
  const matrixTimeoutMs = 240_000;
  test.each(SETTINGS.map((setting) => [setting.name]))(
    'TypeScript 5 (tsc) type-checks the consumer under %s',
    async (name) => {
      const check = (await checks).find((entry) => entry.compiler === 'tsc' && entry.setting === name)!;
      expect({ code: check.result.code, output: check.result.output }).toEqual({ code: 0, output: '' });
    },
    matrixTimeoutMs,
  );

  (HAS_TSGO ? test.each : test.skip.each)(TSGO_SETTINGS.map((setting) => [setting.name]))(
    'TypeScript 7 (tsgo) type-checks the consumer under %s',
    async (name) => {
      const check = (await checks).find((entry) => entry.compiler === 'tsgo' && entry.setting === name)!;
      expect({ code: check.result.code, output: check.result.output }).toEqual({ code: 0, output: '' });
    },
    matrixTimeoutMs,
  );
});
